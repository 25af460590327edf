"""The CIFAR error links every hold leaves: all of them across splits, with every judgment so far.

Run by hand: ``python benchmarks/links_left.py --data /tmp/cifar/cifar10 --out left.csv [--cache DIR]``.

It searches train against test as the ``aligned`` detector does (``audit_ratio.search_data``: the
same index, 8 candidates, mirror), keeps the cross-split pairs at or above the error level plus the
hair (``--level``: 0.7859 + 0.002 on the visible half), runs ``holds.HOLDS`` on them as
``levels.py`` does, and writes each link (held or not) with its score, which hold held it, the
human list's judgment and every judgment of the audits (``quality_audit/`` and its ``band/`` and
``held/`` folders; ``different`` wins, then ``unsure``).  ``--sample N`` also prints a seeded
random draw of N unlisted links no hold keeps, with their earlier judgments, for a new audit.
"""

from __future__ import annotations

import argparse
import csv
import random
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from audit_ratio import descriptors, search_data  # noqa: E402
from audit_signals import AUDITS, judged  # noqa: E402

#: What ``--level`` adds to the error level the holds are given: a link must clear the level by it.
HAIR = 0.002


def every_judgment() -> dict[tuple[str, str], str]:
    """``audit_signals.judged`` plus the judgments of the ``band/`` and ``held/`` folders."""
    out = judged()
    seen: dict[tuple[str, str], set[str]] = {}
    for f in sorted(AUDITS.glob("*/*.csv")):
        with open(f, newline="") as fh:
            for r in csv.DictReader(fh):
                if r.get("judgment"):
                    seen.setdefault((r["test"], r["train"]), set()).add(r["judgment"])
    for k, v in seen.items():
        if out.get(k, "").startswith("listed"):
            continue
        v = v | ({out[k]} if k in out else set())
        out[k] = next(j for j in ("different", "unsure", "same") if j in v or j == "same")
    return out


def links(data_root: Path, cache: Path, level: float):
    """Cross-split error links: paths, grey squares, rows i (test) and j (train), scores, mirrors, held-by."""
    from pytest_leakcheck.detectors.aligned import holds, pairs

    paths, grey, hog = descriptors(data_root, cache)
    data, p = search_data(paths, grey, hog, 8)
    found = pairs.search(data, p)
    keep = (p.split_of[found.i] != p.split_of[found.j]) & (found.score >= level)
    i, j, score, fl = found.i[keep], found.j[keep], found.score[keep], found.flipped[keep]
    test_first = np.array([paths[a].startswith("test/") for a in i.tolist()], bool)
    i, j = np.where(test_first, i, j), np.where(test_first, j, i)
    by = np.full(len(i), "", dtype=object)
    left = np.arange(len(i))
    for hold in holds.HOLDS:
        asked = holds.Asked(grey.reshape(len(grey), -1), i[left], j[left], fl[left], score[left],
                            np.full(len(left), level - HAIR))
        mask = np.asarray(hold.rule(asked), bool)
        by[left[mask]] = hold.stat
        left = left[~mask]
    return paths, grey, i, j, score, fl, by


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--level", type=float, default=0.7879)
    ap.add_argument("--cache", default="/tmp/leakcheck-audit-ratio")
    ap.add_argument("--sample", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    paths, _, i, j, score, fl, by = links(Path(args.data), Path(args.cache), args.level)
    labels = every_judgment()
    rows = [(paths[a], paths[b], float(s), bool(f), h, labels.get((paths[a], paths[b]), ""))
            for a, b, s, f, h in zip(i.tolist(), j.tolist(), score.tolist(), fl.tolist(), by.tolist())]
    open_ = [r for r in rows if not r[4]]
    print(f"{len(rows)} cross-split error links, {len(rows) - len(open_)} held "
          f"({dict(Counter(r[4] for r in rows if r[4]))}), {len(open_)} errors: "
          f"{dict(Counter(r[5] or 'unjudged' for r in open_))}")
    with open(args.out, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["test", "train", "value", "flipped", "held_by", "judgment"])
        w.writerows((t, r, f"{s:.4f}", int(f), h, e) for t, r, s, f, h, e in sorted(rows))
    if args.sample:
        pool = sorted(r for r in open_ if not r[5].startswith("listed"))
        for n, r in enumerate(random.Random(args.seed).sample(pool, min(args.sample, len(pool)))):
            print(n, r[0], r[1], f"{r[2]:.4f}", r[5])


if __name__ == "__main__":
    main()
