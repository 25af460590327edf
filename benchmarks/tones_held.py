"""Which CIFAR error links the tones hold makes warnings: every one, to judge by eye.

Run by hand: ``python benchmarks/tones_held.py --data /tmp/cifar/cifar10 --out held.csv [--cache DIR]``.

It searches train against test as the ``aligned`` detector does (``audit_ratio.search_data``:
the same index, 8 candidates, mirror), keeps the cross-split pairs at or above ``--level`` (the
run's error level plus the hair: 0.7859 + 0.002 on the visible half), and writes those whose tone
gap is over ``tones.TONE_GAP`` and that the human list does not contain, with any earlier judgment
of the pair (``audit_signals.judged``).  Judged by eye:
``benchmarks/quality_audit/held/2026-12-07-s56-tones-held.csv``.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from audit_ratio import descriptors, search_data  # noqa: E402
from audit_signals import judged  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--level", type=float, default=0.7879)
    ap.add_argument("--cache", default="/tmp/leakcheck-audit-ratio")
    args = ap.parse_args()
    from pytest_leakcheck.detectors.aligned import pairs
from pytest_leakcheck.detectors.aligned.holds import tones

    paths, grey, hog = descriptors(Path(args.data), Path(args.cache))
    data, p = search_data(paths, grey, hog, 8)
    found = pairs.search(data, p)
    keep = (p.split_of[found.i] != p.split_of[found.j]) & (found.score >= args.level)
    i, j, score = found.i[keep], found.j[keep], found.score[keep]
    gap = tones.gaps(grey, i, j, found.flipped[keep])
    labels = judged()
    rows = []
    for a, b, s, g in zip(i.tolist(), j.tolist(), score.tolist(), gap.tolist()):
        test, train = sorted((paths[a], paths[b]), key=lambda x: not x.startswith("test/"))
        if g > tones.TONE_GAP and not labels.get((test, train), "").startswith("listed"):
            rows.append((test, train, s, g, labels.get((test, train), "")))
    print(f"{len(i)} cross-split error links, {int((gap > tones.TONE_GAP).sum())} held, {len(rows)} of them unlisted; "
          f"earlier judgments: {dict(Counter(r[4] or 'none' for r in rows))}")
    with open(args.out, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["n", "test", "train", "detector", "value", "tone_gap", "earlier"])
        w.writerows((n, t, r, "aligned", f"{s:.4f}", f"{g:.1f}", e) for n, (t, r, s, g, e) in enumerate(sorted(rows)))


if __name__ == "__main__":
    main()
