"""Search at scale: indexed Hamming search and float retrieval against brute force.

Run by hand: ``nice python benchmarks/scale.py [--train 1000000] [--test 100000]
[--max-distance 8] [--orientations 1] [--repeat 3] [--sample 2000] [--float-sample 1000]``.

Hashes.  A generated store of ``--train`` and ``--test`` 64-bit hashes, made to look
like real pHashes rather than uniform noise: random keys, plus families of near-identical
train hashes (skewed buckets), a block of identical "blank" hashes on both sides (one huge
bucket in every chunk), and, for a tenth of the test rows, a planted near copy of a train
row at a known distance 0..max_distance+2 (the boundary, both ways).  Each method runs
in its own child process, so one does not inherit the other's peak RSS (ru_maxrss):

- indexed: ``kernels.hamming_pairs`` on the whole comparison, as the detectors call it
  (it chooses the multi-index by itself);
- brute force: ``kernels.brute_hamming_pairs`` on a random sample of ``--sample`` test
  rows against all train rows, its time scaled by test / sample (the whole comparison
  takes minutes; say so, do not hide it).

Exactness: on the sampled queries the indexed result must equal brute force's (pairs,
distances, orientations, order), and on the full result every planted pair within the
distance must be found at its distance and every planted pair beyond it must be absent.

Float descriptors.  ``--train`` x ``--test`` 16x16 grey thumbnails with a natural-image
spectrum (plus planted noisy copies), normalised and stored as float16, searched for
cosine >= 0.95 (the ``thumbnail`` default) by: ``retrieval.within`` with FAISS (whole
comparison, approximate), ``retrieval.within`` exact and ``kernels.cosine_pairs``' DCT path
(the detector's search below 2e9 pair-orientations, beyond which it uses retrieval.within),
both on the sample and extrapolated, and float32 brute force on the sample, which gives the
recall.  The sampled methods are timed on one query (their fixed cost:
fitting and transforming the references) and on the sample, and extrapolated linearly to
every query.  ``--no-float`` skips this part.

Each measurement is repeated ``--repeat`` times; the range is printed.  The last line is
one JSON object.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

MIN_COSINE = 0.95


def _rss_mb() -> float:
    """This process's peak RSS.  VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec, so a
    child would report the parent's peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _flip(rng: np.random.Generator, rows: np.ndarray, bits: int) -> np.ndarray:
    """Each row with exactly ``bits`` distinct bits flipped."""
    if not bits:
        return rows.copy()
    which = rng.random((len(rows), 64)).argsort(axis=1)[:, :bits].astype(np.uint64)
    return rows ^ np.bitwise_or.reduce(np.uint64(1) << which, axis=1)


def make_hashes(folder: Path, train: int, test: int, d: int, k: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    tr = rng.integers(0, 2**64, train, dtype=np.uint64)
    fam = np.arange(0, train // 20)  # 5% of train rows: families of 10 near-identical hashes
    tr[fam] = _flip(rng, tr[fam - fam % 10], 3)
    blank = np.uint64(0x8000000000000000)
    tr[rng.choice(train, train // 500, replace=False)] = blank  # 0.2%: flat images, one hash
    te = rng.integers(0, 2**64, (test, k), dtype=np.uint64)
    te[rng.choice(test, max(1, test // 1000), replace=False), 0] = blank
    planted_rows = rng.choice(test, test // 10, replace=False)
    sources = rng.choice(train, len(planted_rows), replace=False)
    distance = np.arange(len(planted_rows)) % (d + 3)
    for t in range(d + 3):
        sel = distance == t
        te[planted_rows[sel], planted_rows[sel] % k] = _flip(rng, tr[sources[sel]], t)
    np.save(folder / "train.npy", tr[:, None])
    np.save(folder / "test.npy", te[:, :, None])
    np.save(folder / "planted.npy", np.stack([planted_rows, sources, distance]))


def _smooth_thumbs(rng: np.random.Generator, n: int, side: int = 16) -> np.ndarray:
    """Thumbnails with a 1/f^1.5 amplitude spectrum, as natural images have."""
    f = np.sqrt(np.add.outer(np.arange(side) ** 2, np.arange(side) ** 2)) + 1.0
    out = np.empty((n, side * side), dtype=np.uint8)
    for r0 in range(0, n, 50_000):
        z = rng.standard_normal((min(n, r0 + 50_000) - r0, side, side)) / f**1.5
        img = np.real(np.fft.ifft2(z))
        img = (img - img.mean(axis=(1, 2), keepdims=True)) / (img.std(axis=(1, 2), keepdims=True) + 1e-9)
        out[r0 : r0 + len(img)] = np.clip(128 + 40 * img, 0, 255).reshape(len(img), -1)
    return out


def make_thumbs(folder: Path, train: int, test: int, seed: int = 1) -> None:
    from pytest_leakcheck.search.kernels import normalised_thumbs

    rng = np.random.default_rng(seed)
    tr, te = _smooth_thumbs(rng, train), _smooth_thumbs(rng, test)
    rows = rng.choice(test, test // 10, replace=False)
    src = tr[rng.choice(train, len(rows), replace=False)].astype(np.int16)
    te[rows] = np.clip(src + rng.integers(-12, 13, src.shape) + rng.integers(-20, 21, (len(rows), 1)), 0, 255)
    np.save(folder / "thumb_train.npy", tr)
    np.save(folder / "thumb_test.npy", te)
    for name, t in (("desc_train", tr), ("desc_test", te)):
        desc = np.empty(t.shape, dtype=np.float16)
        for r0 in range(0, len(t), 100_000):
            desc[r0 : r0 + 100_000] = normalised_thumbs(t[r0 : r0 + 100_000])
        np.save(folder / f"{name}.npy", desc)


# ---------------------------------------------------------------- child processes


def child(method: str, folder: Path, d: int, nprobe: int) -> dict:
    """One measurement in this (fresh) process; results go to ``folder`` for the parent to check."""
    from pytest_leakcheck.search import kernels, mih, retrieval

    sample = np.load(folder / "sample.npy")
    fsample = np.load(folder / "float_sample.npy") if (folder / "float_sample.npy").exists() else None
    info: dict = {}
    if method in ("index", "brute"):
        tr, te = np.load(folder / "train.npy"), np.load(folder / "test.npy")
        info["rss_before_mb"] = _rss_mb()
        t = time.perf_counter()
        if method == "index":
            plan = mih.choose(len(te), te.shape[1], len(tr), 1, d)
            info["plan"] = {"chunks": [[c.width, c.radius] for c in plan.chunks], "indexed": plan.faster,
                            "index_queries": plan.index_queries}
            out = kernels.hamming_pairs(te, tr, d)
        else:
            out = kernels.brute_hamming_pairs(te[sample], tr, d)
        info["seconds"] = time.perf_counter() - t
    else:
        tr = np.load(folder / ("thumb_train.npy" if method == "float-kernel" else "desc_train.npy"), mmap_mode="r")
        te = np.load(folder / ("thumb_test.npy" if method == "float-kernel" else "desc_test.npy"), mmap_mode="r")
        tr = np.ascontiguousarray(tr)
        info["rss_before_mb"] = _rss_mb()
        # float-kernel is cosine_pairs' own DCT-pruned path, forced at every size (past
        # kernels._RETRIEVAL_PAIRS cosine_pairs now hands over to retrieval.within, i.e. float-exact).
        kernels._RETRIEVAL_PAIRS = float("inf")
        run = {
            "float-faiss": lambda q: retrieval.within(retrieval.Sides(q, tr), MIN_COSINE, backend="faiss", nprobe=nprobe),
            "float-exact": lambda q: retrieval.within(retrieval.Sides(q, tr), MIN_COSINE),
            "float-kernel": lambda q: kernels.cosine_pairs(q, tr, ["identity"], MIN_COSINE)[:3],
            "float-brute": lambda q: _float_brute(q, tr),  # float32 products with every train row
        }[method]
        if method == "float-faiss":
            t = time.perf_counter()
            out = run(np.ascontiguousarray(te))
            info["seconds"] = time.perf_counter() - t
        else:
            # Each call has a fixed cost (fitting and transforming the references) besides its
            # per-query cost: time one query (the fixed cost) and the sample, and extrapolate.
            run(np.ascontiguousarray(te[fsample[:1]]))  # warm-up (first BLAS and LAPACK calls)
            t = time.perf_counter()
            run(np.ascontiguousarray(te[fsample[:1]]))
            fixed = time.perf_counter() - t
            t = time.perf_counter()
            out = run(np.ascontiguousarray(te[fsample]))
            full = time.perf_counter() - t
            per_query = max(0.0, full - fixed) / (len(fsample) - 1)
            info.update(seconds=full, fixed=fixed, per_query=per_query, whole=fixed + per_query * len(te))
    np.savez(folder / f"out-{method}.npz", *out)
    info["pairs"] = len(out[0])
    info["peak_rss_mb"] = _rss_mb()
    return info


def _float_brute(q: np.ndarray, refs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    q32 = q.astype(np.float32)
    found = []
    for b0 in range(0, len(refs), 8192):
        s = q32 @ refs[b0 : b0 + 8192].astype(np.float32).T
        ia, ib = np.nonzero(s >= MIN_COSINE)
        found.append((ia, ib + b0, s[ia, ib]))
    return tuple(np.concatenate(x) for x in zip(*found))  # type: ignore[return-value]


def run_child(method: str, folder: Path, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, __file__, "--child", method, "--data", str(folder),
           "--max-distance", str(args.max_distance), "--nprobe", str(args.nprobe)]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _load(folder: Path, method: str) -> tuple[np.ndarray, ...]:
    with np.load(folder / f"out-{method}.npz") as z:
        return tuple(z[f"arr_{i}"] for i in range(len(z.files)))


# ---------------------------------------------------------------- checks and report


def check_hashes(folder: Path, d: int) -> dict:
    """The indexed result against brute force on the sample, and against the planted pairs on the whole."""
    idx, brute = _load(folder, "index"), _load(folder, "brute")
    sample = np.load(folder / "sample.npy")
    in_sample = np.isin(idx[0], sample)
    mapped = (sample[brute[0]], *brute[1:])
    same = all(np.array_equal(x[in_sample], y) for x, y in zip(idx, mapped))
    rows, sources, dist = np.load(folder / "planted.npy")
    got = dict(zip(zip(idx[0].tolist(), idx[1].tolist()), idx[2].tolist()))
    near = dist <= d
    found = [got.get((r, s)) == t for r, s, t in zip(rows[near].tolist(), sources[near].tolist(), dist[near].tolist())]
    absent = [(r, s) not in got for r, s in zip(rows[~near].tolist(), sources[~near].tolist())]
    return {"sample_equal": bool(same), "sample_pairs": int(in_sample.sum()),
            "planted_within_found": int(sum(found)), "planted_within": int(near.sum()),
            "planted_beyond_absent": int(sum(absent)), "planted_beyond": int((~near).sum()),
            "exact": bool(same and all(found) and all(absent))}


def check_floats(folder: Path) -> dict:
    fsample = np.load(folder / "float_sample.npy")
    truth = _load(folder, "float-brute")
    want = set(zip(fsample[truth[0]].tolist(), truth[1].tolist()))
    out = {"truth_pairs": len(want)}
    for method in ("float-exact", "float-kernel", "float-faiss"):
        res = _load(folder, method)
        a = res[0] if method == "float-faiss" else fsample[res[0]]
        keep = np.isin(a, fsample)
        got = set(zip(a[keep].tolist(), res[1][keep].tolist()))
        out[method] = {"recall": len(got & want) / max(1, len(want)), "extra": len(got - want)}
    return out


def _range(values: list[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f}"


def hash_part(folder: Path, args: argparse.Namespace) -> dict:
    runs: dict[str, list[dict]] = {"index": [], "brute": []}
    scale = args.test / len(np.load(folder / "sample.npy"))
    checks = []
    for r in range(args.repeat):
        for method in runs:
            runs[method].append(run_child(method, folder, args))
        checks.append(check_hashes(folder, args.max_distance))
        i, b = runs["index"][-1], runs["brute"][-1]
        print(f"  run {r + 1}: indexed {i['seconds']:.2f} s ({i['pairs']:,} pairs, "
              f"peak RSS {i['peak_rss_mb']:.0f} MB), brute force {b['seconds']:.2f} s on the sample -> "
              f"{b['seconds'] * scale:.1f} s scaled, "
              f"exact {checks[-1]['exact']}", flush=True)
    idx_s = [x["seconds"] for x in runs["index"]]
    brute_s = [x["seconds"] * scale for x in runs["brute"]]
    print(f"hashes: indexed {_range(idx_s)} s, brute force {_range(brute_s)} s (scaled from {args.sample} queries), "
          f"speedup {min(brute_s) / max(idx_s):.0f}-{max(brute_s) / min(idx_s):.0f}x, plan {runs['index'][0]['plan']}")
    print(f"  checks: {checks[-1]}")
    return {"seconds": max(idx_s), "seconds_range": [min(idx_s), max(idx_s)],
            "brute_force_seconds": min(brute_s), "brute_force_range": [min(brute_s), max(brute_s)],
            "brute_force_sampled_queries": args.sample, "brute_force_scaled_by": scale,
            "speedup_min": min(brute_s) / max(idx_s), "exact": all(c["exact"] for c in checks),
            "peak_rss_mb": max(x["peak_rss_mb"] for x in runs["index"]),
            "brute_force_peak_rss_mb": max(x["peak_rss_mb"] for x in runs["brute"]),
            "pairs": runs["index"][0]["pairs"], "plan": runs["index"][0]["plan"], "checks": checks[-1]}


def float_part(folder: Path, args: argparse.Namespace) -> dict:
    methods = ("float-faiss", "float-exact", "float-kernel", "float-brute")
    runs: dict[str, list[dict]] = {m: [] for m in methods}
    for r in range(args.repeat):
        for m in methods:
            runs[m].append(run_child(m, folder, args))
        quality = check_floats(folder)
        fixed = {m: f" (fixed {x[-1]['fixed']:.1f} s)" if "fixed" in x[-1] else "" for m, x in runs.items()}
        print(f"  run {r + 1}: " + ", ".join(f"{m} {runs[m][-1]['seconds']:.1f} s{fixed[m]}" for m in methods)
              + f"; {quality}", flush=True)
    secs = {m: [x["seconds"] if m == "float-faiss" else x["whole"] for x in runs[m]] for m in methods}
    print("floats (whole comparison; all but faiss extrapolated from one query and the sample): "
          + ", ".join(f"{m} {_range(secs[m])} s" for m in methods))
    return {"min_cosine": MIN_COSINE, "sampled_queries": args.float_sample, "nprobe": args.nprobe,
            **{f"{m}_seconds": [min(secs[m]), max(secs[m])] for m in methods},
            **{f"{m}_peak_rss_mb": max(x["peak_rss_mb"] for x in runs[m]) for m in methods},
            "recall": {m: quality[m]["recall"] for m in methods[:3]}, "truth_pairs": quality["truth_pairs"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=int, default=1_000_000)
    parser.add_argument("--test", type=int, default=100_000)
    parser.add_argument("--max-distance", type=int, default=8)
    parser.add_argument("--orientations", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sample", type=int, default=2000, help="brute-force hash queries (scaled)")
    parser.add_argument("--float-sample", type=int, default=2048, help="float queries for exact search and recall")
    parser.add_argument("--nprobe", type=int, default=16)
    parser.add_argument("--no-float", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, Path(args.data), args.max_distance, args.nprobe)))
        return
    with tempfile.TemporaryDirectory(prefix="leakcheck-scale-") as tmp:
        folder = Path(tmp)
        rng = np.random.default_rng(42)
        t = time.perf_counter()
        make_hashes(folder, args.train, args.test, args.max_distance, args.orientations)
        np.save(folder / "sample.npy", np.sort(rng.choice(args.test, args.sample, replace=False)))
        print(f"{args.train:,} train x {args.test:,} test hashes, {args.orientations} orientation(s), "
              f"max_distance {args.max_distance} (generated in {time.perf_counter() - t:.0f} s)", flush=True)
        result = {"train": args.train, "test": args.test, "max_distance": args.max_distance,
                  "orientations": args.orientations, "repeat": args.repeat, **hash_part(folder, args)}
        if not args.no_float:
            make_thumbs(folder, args.train, args.test)
            np.save(folder / "float_sample.npy", np.sort(rng.choice(args.test, args.float_sample, replace=False)))
            result["float"] = float_part(folder, args)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
