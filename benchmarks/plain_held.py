"""Which CIFAR error links the plain-ground hold makes warnings: every one, to judge by eye.

Run by hand: ``python benchmarks/plain_held.py --data /tmp/cifar/cifar10 --out held.csv [--cache DIR]``.

It searches as the ``aligned`` detector does with ``leakcheck init``'s policy (``audit_ratio``'s
index, 8 candidates, mirror; train against test and each split within itself), keeps the pairs at
or above their error level plus the hair (``--level`` across splits, ``--within`` inside one: the
run's ``error_threshold`` and ``within_error_threshold``, 0.7859 and 0.831 on the visible half at
stop 60, hair 0.002) that neither the glyph nor the tones hold already made warnings, and writes
those ``plain.held`` holds, with the flatter square's share of flat pixels, the human list's
judgment and any earlier one (``audit_signals.judged``).  Judged by eye:
``benchmarks/quality_audit/held/2026-12-07-s60-plain-held.csv``.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from audit_ratio import descriptors  # noqa: E402
from audit_signals import judged  # noqa: E402


def search(paths: list[str], grey: np.ndarray, hog: np.ndarray):
    """The aligned search's pairs of train against test and within each split."""
    from pytest_leakcheck.detectors.aligned import pairs
    from pytest_leakcheck.search import multiview

    split = np.array([p.split("/")[0] for p in paths], dtype=object)
    every = np.arange(len(paths))
    index = multiview.fit_index(hog[every[:: max(1, len(every) // multiview.PCA_SAMPLE)]].astype(np.float32))
    data = pairs.Data(grey, pairs.Templates(grey), hog, index, pairs._project(index, hog), True)
    rows = {s: np.flatnonzero(split == s) for s in ("train", "test")}
    p = pairs.plan(rows, [("train", "test"), ("train", "train"), ("test", "test")], list(split), 8, True)
    return pairs.search(data, p), split


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--level", type=float, default=0.7859)
    ap.add_argument("--within", type=float, default=0.831)
    ap.add_argument("--hair", type=float, default=0.002)
    ap.add_argument("--cache", default="/tmp/leakcheck-audit-ratio")
    args = ap.parse_args()
    from pytest_leakcheck.detectors.aligned.holds import plain, sparse, tones

    paths, grey, hog = descriptors(Path(args.data), Path(args.cache))
    found, split = search(paths, grey, hog)
    level = np.where(split[found.i] == split[found.j], args.within, args.level)
    keep = found.score >= level + args.hair
    i, j, score, fl, level = found.i[keep], found.j[keep], found.score[keep], found.flipped[keep], level[keep]
    keep = ~sparse.held(grey.reshape(len(grey), -1), i, j, fl) & ~tones.held(grey, i, j, fl)
    held = keep & plain.held(grey.reshape(len(grey), -1), i, j, score, level)
    share = plain.flat_share(grey)
    labels = judged()
    rows = []
    for a, b, s, lv in zip(i[held].tolist(), j[held].tolist(), score[held].tolist(), level[held].tolist()):
        x, y = sorted((paths[a], paths[b]), key=lambda p: (not p.startswith("test/"), p))
        rows.append((x, y, f"{s:.4f}", f"{lv:.4f}", f"{max(share[a], share[b]):.3f}", labels.get((x, y), "")))
    print(f"{int(keep.sum())} error links left by the glyph and tones holds, {len(rows)} held over a plain ground; "
          f"listed or judged before: {dict(Counter(r[5] or 'none' for r in rows))}")
    with open(args.out, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["n", "test", "train", "detector", "value", "level", "flat", "earlier"])
        w.writerows((n, *r[:2], "aligned", *r[2:]) for n, r in enumerate(sorted(rows, key=lambda r: r[2])))


if __name__ == "__main__":
    main()
