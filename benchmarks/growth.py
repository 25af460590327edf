"""How a check grows with the dataset: cold, warm, 100 images added, and peak memory.

Run by hand: ``nice python benchmarks/growth.py [--sizes 25000,50000,100000,200000] [--jobs 2]
[--added 100] [--simulate 1000000] [--drift POLICY] [--spread POLICY]``.

Real runs.  For each size, a dataset of distinct generated 32x32 photos (the project's own
``testing.photo``; 80 % train, 20 % test, 1,000 per folder, named
without digits so that ``init`` finds no group ids in them) is built once under the system
temp folder, with exactly the policy ``leakcheck init`` writes for it (within-split
warnings, ``aligned`` on, all eight orientations, ``same_scene`` at warning).  Each step is a ``leakcheck check``
subprocess (interpreter start included), whose peak RSS (VmHWM) and CPU seconds (its own, its
threads' and its decode workers') the child itself reports, with the check's line of stage times:

- cold: a fresh store;
- warm: the same again;
- added: ``--added`` new test images (then removed, so the dataset stays as built).

Simulated (``--simulate N``, 0 to skip): the ``aligned`` search alone at the signature
level, as ``benchmarks/scale.py`` does for hashes, on N generated descriptor rows (smooth
random 32 px grey images, 80/20 train/test, within-split on): a cold search into a file
store, then the same store with ``--added`` new rows; each in its own child process for
its peak RSS.  Decoding is left out: it is linear and per file (``docs/scale.md``).

``--drift POLICY`` measures how the calibrated levels move when a share of a real dataset
changes (the measurement behind ``state.LEVELS_AFTER``): with the dataset's signatures
(from its store; a check must have run) and one index, the levels estimated on all rows
against those estimated with 1, 2, 5, 10 and 20 % of the rows left out (drawn at random,
``--repeat`` times; the range of the largest move of either level is printed).

``--spread POLICY`` measures how noisy the levels are (the measurement behind
``alignment.CALIBRATION_QUERIES``): every row of the dataset searched upside down once (minutes
at 55,000), then the cross-split levels of disjoint content-keyed samples of each of
``--spread-sizes``: their mean, standard deviation and range, against the quantiles of all
rows' impostors.  ``--root`` names the dataset's folder when the policy lies elsewhere.

The last line is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

_CHILD = """
import sys, json, time
from pathlib import Path
t0 = time.perf_counter()
from pytest_leakcheck.cli import main
code = main(sys.argv[1:])
hwm = [l for l in Path('/proc/self/status').read_text().splitlines() if l.startswith('VmHWM:')]
import resource
cpu = sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
          for f in ('ru_utime', 'ru_stime'))
print(json.dumps({'code': code, 'seconds': time.perf_counter() - t0, 'cpu_seconds': cpu,
                  'rss_mb': int(hwm[0].split()[1]) / 1024 if hwm else None}), file=sys.stderr)
"""


def _photo(task: tuple[int, str]) -> None:
    from pytest_leakcheck.testing import photo

    seed, path = task
    photo(seed, (32, 32)).save(path, quality=90)


def _policy(root: Path) -> str:
    """What ``leakcheck init`` writes for the folder (a train and a test folder)."""
    from pytest_leakcheck.init.recognise import detect, policy_text

    return policy_text(detect(root))


def _letters(n: int) -> str:
    """A folder name without digits: ``init`` reads digits in folder names as group ids."""
    abc = "abcdefghijklmnopqrstuvwxyz"
    return abc[n // 26 % 26] + abc[n % 26]


def dataset(n: int, jobs: int) -> Path:
    root = Path(tempfile.gettempdir()) / f"leakcheck-growth-{n}"
    if (root / ".complete").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    tasks = []
    for i in range(n):
        split, k = ("test", i // 5) if i % 5 == 0 else ("train", i - i // 5 - 1)
        folder = root / split / f"part_{_letters(k // 1000)}"
        folder.mkdir(parents=True, exist_ok=True)
        tasks.append((i, str(folder / f"img_{k:06d}.jpg")))
    print(f"generating {n} JPEGs in {root} ...", flush=True)
    with ProcessPoolExecutor(jobs) as pool:
        list(pool.map(_photo, tasks, chunksize=256))
    (root / "leakcheck.yaml").write_text(_policy(root))
    (root / ".complete").touch()
    return root


def _check(root: Path, jobs: int) -> dict[str, float]:
    """One ``leakcheck check`` in a child; its wall time and its own peak RSS."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _CHILD, "check", "--policy", str(root / "leakcheck.yaml"),
                           "-j", str(jobs), "--format", "json", "-o", os.devnull],
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    last = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "{}"
    info = json.loads(last) if last.startswith("{") else {}
    if info.get("code") not in (0, 1):
        raise SystemExit(f"check failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    # The check's own line of stage times ("... images in 526.1 s (hashing 3.1 s, ...)").
    stages = [line for line in proc.stderr.splitlines() if " images in " in line and "(" in line]
    return {"seconds": round(wall, 2), "cpu_seconds": round(info.get("cpu_seconds", 0.0), 1),
            "rss_gb": round(info["rss_mb"] / 1024, 3),
            "stages": stages[-1].split("(", 1)[1].rstrip(")") if stages else ""}


def real(n: int, jobs: int, added: int) -> dict[str, object]:
    root = dataset(n, jobs)
    shutil.rmtree(root / ".leakcheck", ignore_errors=True)
    cold = _check(root, jobs)
    warm = _check(root, jobs)
    extra = root / "test" / "added"
    shutil.rmtree(extra, ignore_errors=True)
    extra.mkdir()
    with ProcessPoolExecutor(jobs) as pool:
        list(pool.map(_photo, [(50_000_000 + n + i, str(extra / f"new_{i:05d}.jpg")) for i in range(added)]))
    more = _check(root, jobs)
    shutil.rmtree(extra)
    _check(root, jobs)  # back to the dataset as built, for the next run
    row = {"images": n, "cold_s": cold["seconds"], "warm_s": warm["seconds"], "added_s": more["seconds"],
           "cold_cpu_s": cold["cpu_seconds"], "added_cpu_s": more["cpu_seconds"],
           "added_share": round(more["seconds"] / cold["seconds"], 3), "cold_rss_gb": cold["rss_gb"],
           "added_rss_gb": more["rss_gb"], "cold_stages": cold["stages"], "added_stages": more["stages"]}
    print(json.dumps(row), flush=True)
    return row


# --------------------------------------------------------------------------
# Simulated: the aligned search at the signature level


def smooth_greys(rng: np.random.Generator, n: int) -> np.ndarray:
    """(n, 32, 32) uint8: random 6x6 fields zoomed to 32 px plus fine noise, distinct by construction."""
    x = np.linspace(0, 5, 32)
    i0 = np.minimum(x.astype(int), 4)
    w = (x - i0).astype(np.float32)
    out = np.empty((n, 32, 32), np.uint8)
    for a in range(0, n, 16384):
        b = min(n, a + 16384)
        f = rng.normal(128, 50, (b - a, 6, 6)).astype(np.float32)
        rows = f[:, i0] * (1 - w)[None, :, None] + f[:, i0 + 1] * w[None, :, None]
        img = rows[:, :, i0] * (1 - w) + rows[:, :, i0 + 1] * w
        img += rng.normal(0, 6, img.shape).astype(np.float32)
        out[a:b] = np.clip(img, 0, 255).astype(np.uint8)
    return out


def _sim_sigs(n: int, seed: int):
    from pytest_leakcheck.detectors.aligned import descriptors
    from pytest_leakcheck.signals.families import Signatures

    rng = np.random.default_rng(seed)
    grey = smooth_greys(rng, n)
    hog = np.concatenate([descriptors.hog(grey[a:a + 8192].astype(np.float32)).astype(np.float16)
                          for a in range(0, n, 8192)])
    digests = tuple(rng.bytes(32) for _ in range(n))
    return Signatures(digests, np.ones(n, bool), {}, np.full((n, 2), 32, np.int64),
                      {"desc:grey32": grey.reshape(n, 1024), "desc:hog": hog}, {})


_SIM_CHILD = """
import sys, json, time
from pathlib import Path
sys.path.insert(0, {bench!r})
import growth
out = growth.sim_step(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
hwm = [l for l in Path('/proc/self/status').read_text().splitlines() if l.startswith('VmHWM:')]
out['rss_gb'] = round(int(hwm[0].split()[1]) / 1024 ** 2, 3)
print(json.dumps(out))
"""


def sim_step(n: int, added: int, store_path: str) -> dict[str, float]:
    """One aligned search over ``n`` simulated rows (+ ``added`` new ones) with the store at ``store_path``."""
    from pytest_leakcheck.detectors.aligned import DETECTOR, AlignedSettings
    from pytest_leakcheck.search.run import SearchRun
    from pytest_leakcheck.signals.families import Signatures
    from pytest_leakcheck.store.db import open_store

    sigs = _sim_sigs(n, 0)
    if added:
        more = _sim_sigs(added, 1)
        sigs = Signatures(sigs.digests + more.digests, np.ones(n + added, bool), {},
                          np.full((n + added, 2), 32, np.int64),
                          {k: np.concatenate([v, more.arrays[k]]) for k, v in sigs.arrays.items()}, {})
    total = n + added
    split_of = tuple("test" if i % 5 == 0 else "train" for i in range(total))
    paths = tuple(f"{s}/{i:07d}.jpg" for i, s in enumerate(split_of))
    with open_store(store_path) as store:
        run = SearchRun(sigs=sigs, split_of=split_of, splits=("train", "test"),
                        comparisons=(("train", "test"), ("train", "train"), ("test", "test")),
                        orientations=("identity", "hflip"), store=store, root=Path("."), paths=paths,
                        max_pixels=1 << 30)
        t0 = time.perf_counter()
        found = DETECTOR.find(run, AlignedSettings())
        seconds = time.perf_counter() - t0
    return {"seconds": round(seconds, 2), "matches": len(found)}


def simulated(n: int, added: int) -> dict[str, object]:
    bench = str(Path(__file__).resolve().parent)
    with tempfile.TemporaryDirectory() as tmp:
        store = str(Path(tmp) / "cache.sqlite")
        steps = {}
        for name, extra in (("cold", 0), ("added", added)):
            proc = subprocess.run([sys.executable, "-c", _SIM_CHILD.format(bench=bench), str(n), str(extra), store],
                                  capture_output=True, text=True, check=False)
            if proc.returncode:
                raise SystemExit(f"simulated step failed:\n{proc.stderr[-2000:]}")
            steps[name] = json.loads(proc.stdout.strip().splitlines()[-1])
    row = {"images": n, "simulated": True, "cold_s": steps["cold"]["seconds"], "cold_rss_gb": steps["cold"]["rss_gb"],
           "added_s": steps["added"]["seconds"], "added_rss_gb": steps["added"]["rss_gb"]}
    print(json.dumps(row), flush=True)
    return row


def _loaded(policy_path: str, root: str | None = None):
    """A dataset's signatures (from its store; a check must have run), its search run, one
    index, and what the search reads."""
    import dataclasses

    from pytest_leakcheck.detectors.aligned import pairs
    from pytest_leakcheck.pipeline import matches as stage
    from pytest_leakcheck.pipeline.run import RunOptions
    from pytest_leakcheck.pipeline.signatures import compute
    from pytest_leakcheck.dataset import groups, inventory
    from pytest_leakcheck.policy.load import load
    from pytest_leakcheck.store.db import open_store
    from pytest_leakcheck.store.storefile import locate

    policy = load(policy_path)
    if root:
        policy = dataclasses.replace(policy, root=Path(root))
    inv = groups.resolve(inventory.scan(policy))
    with open_store(locate(inv.policy.cache, inv.policy.store_folders)) as store:
        sigs = compute(inv.records, inv.policy, store, RunOptions(jobs=2), update_snapshot=False)
        run = stage.new_run(inv, sigs, inv.policy, store, RunOptions())
    index = pairs.fit(sigs, np.flatnonzero(sigs.valid))
    return sigs, run, pairs.prepare(sigs, True, index)


def drift(policy_path: str, repeat: int, root: str | None = None) -> dict[str, object]:
    """Levels on all rows against levels with a share of rows left out, one index throughout."""
    from pytest_leakcheck.detectors.aligned import pairs
    from pytest_leakcheck.detectors.aligned import AlignedSettings
    from pytest_leakcheck.detectors.aligned.levels import calibration

    sigs, run, data = _loaded(policy_path, root)
    valid = np.flatnonzero(sigs.valid)
    settings = AlignedSettings()

    def levels(mask: np.ndarray) -> tuple[float, float]:
        p = pairs.plan(run.rows_by_split(mask), run.comparisons, run.split_of, settings.candidates, True)
        cal = calibration(data, p, settings, sigs.digests)
        return cal["threshold"], cal["error_threshold"]

    base = levels(sigs.valid)
    rng = np.random.default_rng(0)
    out: dict[str, object] = {"rows": int(len(valid)), "base": base, "moves": {}}
    for share in (0.01, 0.02, 0.05, 0.1, 0.2):
        moves = []
        for _ in range(repeat):
            mask = sigs.valid.copy()
            mask[rng.choice(valid, int(share * len(valid)), replace=False)] = False
            warn, err = levels(mask)
            moves.append(max(abs(warn - base[0]), abs(err - base[1])))
        out["moves"][share] = [round(min(moves), 4), round(max(moves), 4)]
        print(f"{share:.0%} of rows left out: levels move by {min(moves):.4f}-{max(moves):.4f}", flush=True)
    return out


def spread(policy_path: str, sizes: list[int], root: str | None = None) -> dict[str, object]:
    """How noisy the calibrated levels are: every row searched upside down once, then the
    cross-split levels of disjoint content-keyed samples of each size (consecutive runs of
    rows in content-digest order, the order the calibration samples in), against the
    impostors' own rates over all rows."""
    from pytest_leakcheck.detectors.aligned import alignment
    from pytest_leakcheck.detectors.aligned import pairs
    from pytest_leakcheck.detectors.aligned import AlignedSettings
    from pytest_leakcheck.detectors.aligned.levels import TURNED_COPY

    sigs, run, data = _loaded(policy_path, root)
    settings = AlignedSettings()
    p = pairs.plan(run.rows_by_split(sigs.valid), run.comparisons, run.split_of, settings.candidates, True)
    every = np.sort(np.concatenate([p.rows[a] for a in p.targets]))
    alignment.CALIBRATION_QUERIES = len(every)  # every row an impostor, in impostors()'s order:
    cross = pairs.impostors(data, p, sigs.digests)["cross"]
    # impostors() lists each split's rows in turn, for the splits compared with another.
    rows = np.concatenate([every[p.split_of[every] == a] for a in p.targets if any(b != a for b in p.targets[a])])
    head = np.frombuffer(b"".join(sigs.digests[r][:8].ljust(8, b"\0") for r in rows.tolist()), ">u8")
    cross = cross[np.lexsort((rows, head))]
    cross = cross[~(cross >= TURNED_COPY)]
    rates = (settings.false_alarms_per_10k, settings.error_false_alarms_per_10k)
    top = np.sort(cross)[::-1]
    out: dict[str, object] = {"impostors": int(len(cross)),
                              "all_rows_quantiles": [round(float(top[max(0, round(r * len(cross) / 1e4) - 1)]), 4)
                                                     for r in rates]}
    for n in sizes:
        lv = np.array([[alignment.calibrate(cross[k * n:(k + 1) * n], r) for r in rates] for k in range(len(cross) // n)])
        out[n] = {"samples": len(lv), "mean": np.round(lv.mean(0), 4).tolist(),
                  "sd": np.round(lv.std(0, ddof=1), 4).tolist() if len(lv) > 1 else None,
                  "min": np.round(lv.min(0), 4).tolist(), "max": np.round(lv.max(0), 4).tolist()}
        print(f"{n} impostors: {out[n]}", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="25000,50000,100000,200000")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--added", type=int, default=100)
    ap.add_argument("--simulate", type=int, default=1_000_000, help="simulated rows (0: skip)")
    ap.add_argument("--drift", metavar="POLICY", help="measure how the levels move with the data instead")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--spread", metavar="POLICY", help="measure the levels' spread across disjoint samples instead")
    ap.add_argument("--spread-sizes", default="4000,8000")
    ap.add_argument("--root", help="the dataset's folder, when it is not the policy's (--drift, --spread)")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    if args.drift:
        print(json.dumps(drift(args.drift, args.repeat, args.root)))
        return
    if args.spread:
        print(json.dumps(spread(args.spread, [int(n) for n in args.spread_sizes.split(",")], args.root), default=str))
        return
    rows = [real(int(n), args.jobs, args.added) for n in args.sizes.split(",") if n]
    sim = simulated(args.simulate, args.added) if args.simulate else None
    by = {r["images"]: r for r in rows}
    ratio = round(by[200_000]["cold_s"] / by[50_000]["cold_s"], 2) if 200_000 in by and 50_000 in by else None
    # CPU seconds (the check, its threads and its decode workers) are what a shared machine
    # distorts least: the wall-time ratio moves with whatever else runs during either row.
    cpu = (round(by[200_000]["cold_cpu_s"] / by[50_000]["cold_cpu_s"], 2)
           if 200_000 in by and 50_000 in by and by[50_000].get("cold_cpu_s") else None)
    print(json.dumps({"real": rows, "simulated": sim, "cold_200k_over_50k": ratio, "cold_cpu_200k_over_50k": cpu}))


if __name__ == "__main__":
    main()
