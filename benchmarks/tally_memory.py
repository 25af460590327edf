"""The Hamming kernel on a fixed camera's hashes, with and without ``kernels.Tally``: CPU and peak memory.

Run by hand: ``python benchmarks/tally_memory.py [--n 3000]``.  N 64-bit hashes in 8 orientations, a
few bits apart upright and far apart turned (every shot of one scene is within reach of every other,
upright), one split searched with itself at distance 14.  Without a tally every pair is returned, to
be counted and dropped by the caller (``detectors/hashing.py``); with the tally of identity and mirror
they are counted in the kernel.  Peak memory by ``tracemalloc`` (numpy's arrays are traced).
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from pytest_leakcheck.search import kernels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=3000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    base = rng.integers(0, 2**63, 1, dtype=np.uint64)
    x = np.broadcast_to(base, (args.n, 8, 1)).copy()
    for _ in range(3):
        x ^= (np.uint64(1) << rng.integers(0, 64, x.shape).astype(np.uint64)) * (rng.random(x.shape) < 0.5)
    x[:, 1:] ^= np.uint64(0xFFFF0000)  # the turned views far: identity wins, as on a fixed camera
    for views in (None, 2):
        tracemalloc.start()
        t = time.process_time()
        tally = kernels.Tally(views) if views else None
        found = kernels.hamming_pairs(x, x[:, 0].copy(), 14, same=True, tally=tally)
        cpu = time.process_time() - t
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        print(f"n={args.n} tally={views}: {cpu:.2f} s CPU, {len(found[0])} pairs returned, "
              f"{tally.count if tally else 0} counted, peak {peak:.0f} MB")


if __name__ == "__main__":
    main()
