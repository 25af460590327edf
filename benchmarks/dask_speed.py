"""Hashing + decoding throughput: the local process pool vs a Dask LocalCluster with 1 and 2 workers.

The signature stage (``signatures.compute``: digest, decode, every family the
default policy needs) on the same generated 640x480 JPEGs, into a cold
in-memory store each time.  Each configuration runs ``--repeat`` times; the
cluster is started before and is not timed (a real one is already running).
A warm-up on a few other images loads the worker imports first.  The machine
may be shared: read the range, not one figure.

    python benchmarks/dask_speed.py [--images 2000] [--repeat 3]

The last line is one JSON object with the per-run images/s of each configuration.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.benchdata import generated
from pytest_leakcheck.dataset import inventory
from pytest_leakcheck.pipeline import signatures
from pytest_leakcheck.pipeline.run import RunOptions
from pytest_leakcheck.signals.executors import connect
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.store.db import open_store


def _rate(records: tuple, policy: object, executor: object, jobs: int | None) -> float:
    with open_store(None) as store:
        t = time.perf_counter()
        opts = RunOptions(jobs=jobs, executor=executor)  # type: ignore[arg-type]
        sigs = signatures.compute(records, policy, store, opts)  # type: ignore[arg-type]
        seconds = time.perf_counter() - t
    assert sigs.stats["decoded"] == len(records), sigs.stats
    return len(records) / seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from distributed import LocalCluster

    root = generated("dask", args.images, (640, 480))
    policy = load(root / "leakcheck.yaml")
    records = inventory.scan(policy).records
    warm = records[:32]
    print(f"{len(records)} images of 640x480 in {root}; {os.cpu_count()} cores", flush=True)
    results: dict[str, list[float]] = {}

    def measure(name: str, executor: object, jobs: int | None) -> None:
        _rate(warm, policy, executor, jobs)
        runs = [_rate(records, policy, executor, jobs) for _ in range(args.repeat)]
        results[name] = [round(r, 1) for r in runs]
        print(f"{name:>16}: {min(runs):7.1f} .. {max(runs):7.1f} images/s", flush=True)

    measure("local pool", None, None)
    for workers in (1, 2):
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address=None) as cluster, connect(cluster.scheduler_address) as ex:
            measure(f"dask {workers} worker" + "s" * (workers > 1), ex, None)
    print(json.dumps({"images": len(records), "size": "640x480", "cores": os.cpu_count(),
                      "repeat": args.repeat, "images_per_s": results}))


if __name__ == "__main__":
    main()
