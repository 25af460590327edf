"""The ``aligned`` search locally vs on a Dask LocalCluster of 2 worker processes.

At the signature level, as ``benchmarks/growth.py --simulate`` does: N generated
32x32 grey rows (``growth.smooth_greys``: distinct by construction), 80 % train and
20 % test, within-split comparisons on, and 1 % of them planted as shifted,
re-noised copies of other rows so that the search has pairs to find.  Each run is
the detector's cold ``find`` (index fit, retrieval, verification blocks, impostor
blocks, levels) into a fresh in-memory store; with the cluster, the verification
and impostor blocks run on its workers and the search's data is scattered to them
once per run (part of the time).  Every cluster run must give the local run's
pairs and levels exactly; the number of block tasks it sent is printed.  The
cluster is started before and not timed (a real one is already running); a
warm-up run of 2,000 rows loads the workers' imports first.  The machine may be
shared: read the range, not one figure.

    nice python benchmarks/dask_search.py [--sizes 10000,40000] [--repeat 3]

The last line is one JSON object with every run's seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from growth import smooth_greys  # noqa: E402

from pytest_leakcheck.detectors.aligned import descriptors, pairs  # noqa: E402
from pytest_leakcheck.detectors.aligned import DETECTOR, AlignedSettings  # noqa: E402
from pytest_leakcheck.search.run import SearchRun  # noqa: E402
from pytest_leakcheck.signals.executors import connect  # noqa: E402
from pytest_leakcheck.signals.families import Signatures  # noqa: E402
from pytest_leakcheck.store.db import open_store  # noqa: E402


def rows(n: int, seed: int = 0) -> Signatures:
    """``n`` signature rows, 1 % of them copies of others shifted by a pixel with new noise."""
    rng = np.random.default_rng(seed)
    grey = smooth_greys(rng, n)
    copies = rng.choice(n, size=2 * (n // 100), replace=False).reshape(2, -1)
    shifted = np.roll(grey[copies[0]], 1, axis=2).astype(np.float32) + rng.normal(0, 3, (copies.shape[1], 32, 32))
    grey[copies[1]] = np.clip(shifted, 0, 255).astype(np.uint8)
    hog = np.concatenate([descriptors.hog(grey[a:a + 8192].astype(np.float32)).astype(np.float16)
                          for a in range(0, n, 8192)])
    digests = tuple(rng.bytes(32) for _ in range(n))
    return Signatures(digests, np.ones(n, bool), {}, np.full((n, 2), 32, np.int64),
                      {"desc:grey32": grey.reshape(n, 1024), "desc:hog": hog}, {})


def one(sigs: Signatures, executor: object) -> tuple[float, dict]:
    """One cold aligned ``find``: its seconds, and what it found (pairs, levels, block tasks run)."""
    n = len(sigs.valid)
    split_of = tuple("test" if i % 5 == 0 else "train" for i in range(n))
    got: dict = {}
    real_search = pairs.search

    def search(*args, **kwargs):  # the detector's pairs, as it got them
        got["pairs"] = real_search(*args, **kwargs)
        return got["pairs"]

    pairs.search = search
    try:
        with open_store(None) as store:
            run = SearchRun(sigs=sigs, split_of=split_of, splits=("train", "test"),
                            comparisons=(("train", "test"), ("train", "train"), ("test", "test")),
                            orientations=("identity", "hflip"), store=store, root=Path("."),
                            paths=tuple(f"{s}/{i:07d}.jpg" for i, s in enumerate(split_of)),
                            max_pixels=1 << 30, executor=executor)  # type: ignore[arg-type]
            since = time.time()
            t = time.perf_counter()
            found = DETECTOR.find(run, AlignedSettings())
            seconds = time.perf_counter() - t
    finally:
        pairs.search = real_search
    cal = {k: v for k, v in run.stats["aligned"].items() if not k.endswith("_at")}
    client = getattr(executor, "client", None)
    tasks = [] if client is None else client.get_task_stream(start=since)
    sent = sum(1 for task in tasks if str(task.get("key", "")).startswith("aligned-"))
    return seconds, {"pairs": got["pairs"], "levels": cal, "matches": len(found), "sent": sent}


def shared_mb(sigs: Signatures) -> float:
    """What a run scatters to each worker: the search's data and plan, pickled."""
    valid = np.flatnonzero(sigs.valid)
    data = pairs.prepare(sigs, True, pairs.fit(sigs, valid))
    return round(len(pickle.dumps(data, protocol=5)) / 1e6, 1)


def same(a: dict, b: dict) -> bool:
    pa, pb = a["pairs"], b["pairs"]
    return a["levels"] == b["levels"] and all(np.array_equal(getattr(pa, f), getattr(pb, f))
                                              for f in ("i", "j", "score", "flipped"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,40000")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from distributed import LocalCluster

    runs: dict[str, dict] = {}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, connect(cluster.scheduler_address) as ex:
        one(rows(2000, 1), ex)  # the workers import the package once, untimed
        for n in [int(s) for s in args.sizes.split(",") if s]:
            sigs = rows(n)
            local, remote, ref = [], [], None
            for _ in range(args.repeat):  # interleaved: a load spike hits both
                s, ref = one(sigs, None)
                local.append(s)
                s, got = one(sigs, ex)
                remote.append(s)
                assert same(got, ref), "the cluster's pairs or levels differ from the local search's"
            print(f"{n:>7} rows: local {min(local):6.1f} .. {max(local):6.1f} s; "
                  f"2 workers {min(remote):6.1f} .. {max(remote):6.1f} s; {got['sent']} blocks sent, "
                  f"{len(ref['pairs'].i)} pairs, {ref['matches']} matches, identical", flush=True)
            runs[str(n)] = {"local_s": [round(x, 2) for x in local], "dask_s": [round(x, 2) for x in remote],
                            "blocks": got["sent"], "pairs": len(ref["pairs"].i), "matches": ref["matches"],
                            "scattered_mb": shared_mb(sigs)}
    print(json.dumps({"cores": os.cpu_count(), "repeat": args.repeat, "runs": runs}))


if __name__ == "__main__":
    main()
