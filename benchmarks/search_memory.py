"""Peak memory of the search on a 1,000,000 x 100,000 comparison.

Run by hand: ``python benchmarks/search_memory.py [--train 1000000] [--test 100000] [--slice 4000]``.

It builds random 64-bit hashes (two orientations) and 16x16 thumbnails for a
train split of ``--train`` rows and a test split of ``--test`` rows, then runs the
two brute-force searches (Hamming and thumbnail cosine) of ``--slice`` test rows
against every train row, and reports with tracemalloc the peak of what the
search itself allocates, beside the size of the signature arrays it reads.
Both searches work block by block, so the peak does not grow with the number
of rows; the slice only keeps the run short (the time is printed too, with the
pairs per second, for a rough extrapolation to the whole comparison).
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from pytest_leakcheck.search.kernels import cosine_pairs, hamming_pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=int, default=1_000_000)
    parser.add_argument("--test", type=int, default=100_000)
    parser.add_argument("--slice", type=int, default=4000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    train_hash = rng.integers(0, 2**63, (args.train, 1), dtype=np.uint64)
    test_hash = rng.integers(0, 2**63, (args.test, 2, 1), dtype=np.uint64)
    train_thumb = rng.integers(0, 256, (args.train, 256), dtype=np.uint8)
    test_thumb = rng.integers(0, 256, (args.test, 256), dtype=np.uint8)
    arrays = sum(a.nbytes for a in (train_hash, test_hash, train_thumb, test_thumb))
    print(f"signature arrays: {arrays / 2**20:.0f} MB for {args.train:,} train + {args.test:,} test rows")

    for name, run in (
        ("hamming <= 8, 2 orientations", lambda: hamming_pairs(test_hash[: args.slice], train_hash, 8)),
        ("thumbnail cosine >= 0.95, 2 orientations",
         lambda: cosine_pairs(test_thumb[: args.slice], train_thumb, ["identity", "hflip"], 0.95)),
    ):
        tracemalloc.start()
        t = time.perf_counter()
        found = run()
        dt = time.perf_counter() - t
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        pairs = args.slice * args.train
        print(f"{name}: peak {peak / 2**20:.0f} MB above the arrays, {len(found[0])} hits, "
              f"{pairs / dt / 1e6:.0f} M pairs/s ({dt:.1f} s for {args.slice:,} x {args.train:,})")


if __name__ == "__main__":
    main()
