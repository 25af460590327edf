"""Does a CIFAR error link stand out among its query's other partners?  A ratio test at image level.

Run by hand: ``python benchmarks/audit_ratio.py --data /tmp/cifar/cifar10 [--k 8] [--level 0.786]
[--cache DIR]``.

Lowe's ratio test, for whole images: a copy is usually its query's unique best partner by a
margin, while two different horses at 0.80 sit among several train images of similar score.
For every audited or listed (test, train) pair (``audit_signals.judged``) it retrieves each
side's ``--k`` candidates in the other split as the ``aligned`` search does (the same index,
mirror included), scores each with the ``aligned`` verdict (both directions and mirrors,
``pairs.pair_scores``), drops the candidates that are copies of the partner (their verdict
with the partner at or above ``--copy``: duplicated train images would otherwise be each
other's runner-up), and prints, per judgment, the pair's score minus its runner-up's
(``gap``: from the test side, the train side, the smaller of both) and their ratio in
distance to a perfect score (``(1 - runner-up) / (1 - score)``).

It computes the descriptors (``desc`` family: borders trimmed, the 32 px square) of all
55,000 images once and keeps them in ``--cache`` (a minute on two cores).
"""

from __future__ import annotations

import argparse
import sys
from multiprocessing import Pool
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from audit_signals import judged, write  # noqa: E402

CUTS = {"gap_test": (0.0, 0.01, 0.02, 0.03, 0.05), "gap_train": (0.0, 0.01, 0.02, 0.03, 0.05),
        "gap_min": (0.0, 0.01, 0.02, 0.03, 0.05), "ratio_min": (1.05, 1.1, 1.2, 1.3),
        "rivals": (0.5, 1.5, 2.5)}


def _describe(path: str) -> tuple[np.ndarray, np.ndarray]:
    from pytest_leakcheck.detectors.aligned.descriptors import describe
    from pytest_leakcheck.signals.decode import COLOUR, decode

    d = describe(np.asarray(decode(Path(path).read_bytes(), 10**8, COLOUR).colour))
    return d["grey32"], d["hog"]


def descriptors(root: Path, cache: Path) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Relative paths (sorted), grey squares (N, 32, 32) and gradient descriptors (N, 128) of every image."""
    paths = sorted(str(p.relative_to(root)) for p in root.rglob("*.jpg"))
    f = cache / "cifar-desc.npz"
    if f.exists():
        z = np.load(f)
        if list(z["paths"]) == paths:
            return paths, z["grey"], z["hog"]
    with Pool(2) as pool:
        got = pool.map(_describe, [str(root / p) for p in paths], chunksize=256)
    grey, hog = np.stack([g for g, _ in got]), np.stack([h for _, h in got])
    cache.mkdir(parents=True, exist_ok=True)
    np.savez(f, paths=np.array(paths), grey=grey, hog=hog)
    return paths, grey, hog


def search_data(paths: list[str], grey: np.ndarray, hog: np.ndarray, k: int):
    """The ``aligned`` search's Data and Plan for train against test, mirror on."""
    from pytest_leakcheck.detectors.aligned import pairs
    from pytest_leakcheck.search import multiview

    split = np.array([p.split("/")[0] for p in paths], dtype=object)
    every = np.arange(len(paths))
    # 55,000 rows: under multiview.IVF_MIN, so the search is exact, as the detector's is here.
    index = multiview.fit_index(hog[every[:: max(1, len(every) // multiview.PCA_SAMPLE)]].astype(np.float32))
    data = pairs.Data(grey, pairs.Templates(grey), hog, index, pairs._project(index, hog), True)
    rows = {s: np.flatnonzero(split == s) for s in ("train", "test")}
    return data, pairs.plan(rows, [("train", "test")], list(split), k, True)


def runner_up(data, p, q: np.ndarray, partner: np.ndarray, copy: float) -> tuple[np.ndarray, np.ndarray]:
    """Each query's best verdict among its retrieved candidates other than its partner and the
    partner's copies, and how many candidates (not copies) score within 0.03 of the pair."""
    from pytest_leakcheck.detectors.aligned import pairs

    best = np.full(len(q), -np.inf)
    c = np.full((len(q), p.k), -1, np.int64)
    for split in ("train", "test"):
        sel = np.flatnonzero(p.split_of[q] == split)
        if len(sel):
            c[sel] = pairs.retrieve(data, p, split, q[sel])[0].reshape(len(sel), -1)
    qi, kk = np.nonzero((c >= 0) & (c != partner[:, None]))
    r = c[qi, kk]
    s = pairs.pair_scores(data, q[qi], r)
    twin = pairs.pair_scores(data, partner[qi], r)
    s = np.where(twin >= copy, -np.inf, s)
    np.maximum.at(best, qi, s)
    return best, s, qi


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--k", type=int, default=8, help="candidates per query (the detector's default: 8)")
    ap.add_argument("--level", type=float, default=0.786)
    ap.add_argument("--copy", type=float, default=0.9, help="a candidate this close to the partner is its copy")
    ap.add_argument("--cache", default="/tmp/leakcheck-audit-ratio")
    ap.add_argument("--out", help="write every pair's figures to this CSV")
    args = ap.parse_args()
    from pytest_leakcheck.detectors.aligned import pairs

    labels = judged()
    paths, grey, hog = descriptors(Path(args.data), Path(args.cache))
    row = {p: n for n, p in enumerate(paths)}
    data, p = search_data(paths, grey, hog, args.k)
    keys = list(labels)
    t, r = np.array([row[a] for a, _ in keys]), np.array([row[b] for _, b in keys])
    score = pairs.pair_scores(data, t, r)
    sides = {}
    for name, q, partner in (("test", t, r), ("train", r, t)):
        best, s, qi = runner_up(data, p, q, partner, args.copy)
        rivals = np.bincount(qi[s >= score[qi] - 0.03], minlength=len(q))
        sides[name] = (best, rivals)
    out = []
    for n, key in enumerate(keys):
        bt, bs = sides["test"][0][n], sides["train"][0][n]
        out.append({"test": key[0], "train": key[1], "judgment": labels[key], "score": score[n],
                    "best_test": bt, "best_train": bs, "gap_test": score[n] - bt, "gap_train": score[n] - bs,
                    "gap_min": score[n] - max(bt, bs),
                    "ratio_min": (1 - max(bt, bs)) / max(1e-6, 1 - score[n]),
                    "rivals": int(sides["test"][1][n] + sides["train"][1][n])})
    report(out, args.level)
    if args.out:
        write(Path(args.out), out)


def report(rows: list[dict], level: float) -> None:
    kept = [r for r in rows if r["score"] >= level]
    labels = sorted({r["judgment"] for r in kept})
    print(f"{len(kept)} of {len(rows)} judged or listed pairs score at or above {level}: "
          + ", ".join(f"{lab} {sum(r['judgment'] == lab for r in kept)}" for lab in labels))
    for s, cuts in CUTS.items():
        print(f"\n{s}: 5/25/50/75/95 % per judgment")
        for lab in labels:
            v = np.array([r[s] for r in kept if r["judgment"] == lab], float)
            v = np.where(np.isfinite(v), v, 9.0)
            print(f"  {lab:24s} " + " ".join(f"{q:7.3f}" for q in np.percentile(v, [5, 25, 50, 75, 95])))
        for cut in cuts:
            bad = (lambda v, cut=cut: v > cut) if s == "rivals" else (lambda v, cut=cut: v < cut)
            print(f"  {'>' if s == 'rivals' else '<'} {cut}: " + ", ".join(
                f"{lab} {sum(bad(r[s]) for r in kept if r['judgment'] == lab)}" for lab in labels))


if __name__ == "__main__":
    main()
