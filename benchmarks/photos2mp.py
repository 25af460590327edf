"""Cold `leakcheck check` on 2 MP photos against a bare full decode of the same files.

Run by hand: ``python benchmarks/photos2mp.py [--n 289] [--jobs 2] [--repeat 2]``, or
``--data DIR`` for a real set (a folder holding its ``leakcheck.yaml``, e.g. a copy of a
Roboflow export).  Without ``--data`` it builds (once, cached under the system temp folder)
N photos at 2048 x 1371 of one fixed scene: one background (``testing.photo``) with a small
object moved between shots, split 70/20/10 into train, val and test.  That is the worst case
for cost: no two are copies, yet every pair looks alike at 32 px, so most of N² pairs reach
the verdicts that judge them (the fine look at 96 px among them).

In one run, alternating, it measures:

- bare: every file read and fully decoded (``Image.open(f).load()``) in ``--jobs`` processes;
- cold: ``leakcheck check`` with an empty store and ``--jobs`` processes, in a fresh
  interpreter; its peak RSS is the larger of the driver's and its largest worker's.

The targets (issue 37): cold at most 4x bare, peak RSS under 1 GB whatever N.

Growth with N (stop 61, ``--jobs 2 --repeat 2`` on a 2-core machine at load 23-33; wall seconds):

======  ===========  =====  =====  ======  ======  =========  ==========  =======
N       code         cold   bare   ratio   RSS MB  pHash (s)  thumb (s)   aligned
======  ===========  =====  =====  ======  ======  =========  ==========  =======
289     d13ad45      104.3  35.6   2.9x    148     0.7        3.1         21.8
289     d13ad45      83.0   12.6   6.6x    148     0.6        2.2         28.6
1,200   d13ad45      194.4  94.2   2.1x    265     26.9       19.2        40.4
1,200   d13ad45      689.5  226.8  3.0x    265     33.2       48.6        157.6
1,200   + kernel     687.4  223.6  3.1x    263     19.9       39.9        159.6
1,200   + kernel     423.5  151.4  2.8x    264     15.7       36.4        102.1
600     + kernel     130.7  97.5   1.3x    222     0.3        3.5         16.8
======  ===========  =====  =====  ======  ======  =========  ==========  =======

The first two 1,200 rows of d13ad45 and "+ kernel" ran side by side.  ``--data`` on ``traps``
(800 camera-trap photos, 2048x1536, ``leakcheck init``'s policy), "+ kernel": 2.7x (276 s / 101 s),
193 MB.  ``leakcheck report --html`` right after the 1,200-shot check: 1.7 s wall, 0.8 s CPU.  pHash and the thumbnail grow with N² (every pair of shots
is a hit); "+ kernel" counts pHash's upright and mirrored hits in the Hamming kernel
(``kernels.Tally``).  ``aligned`` and ``same_scene`` take a bounded number of candidates per image.
"""

from __future__ import annotations

import argparse
import functools
import json
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

SIZE = (2048, 1371)
#: The benchmark's own store, inside the dataset (a store must live under the policy's root).
STORE = ".leakcheck-photos2mp"


@functools.lru_cache(maxsize=1)
def _scene():
    from pytest_leakcheck.testing import photo

    # The one scene every shot shows, drawn once per process: drawing it took most of the
    # generation (a few seconds a shot on a loaded 2-core machine); the files are the same.
    return photo(7, SIZE)


def _shot(args: tuple[int, str]) -> None:
    import numpy as np
    from PIL import ImageDraw

    seed, path = args
    img = _scene().copy()
    rng = np.random.default_rng(seed)
    x, y = int(rng.integers(100, SIZE[0] - 300)), int(rng.integers(100, SIZE[1] - 300))
    colour = tuple(int(c) for c in rng.integers(0, 256, 3))
    ImageDraw.Draw(img).ellipse((x, y, x + 160, y + 160), fill=colour)  # the piece moved
    img.save(path, quality=90)


def fixed_camera(n: int) -> Path:
    """N shots of one scene with one object moved, 70/20/10 into train/val/test, built once."""
    root = Path(tempfile.gettempdir()) / f"leakcheck-bench-fixed2mp-{n}"
    if (root / ".complete").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    tasks = []
    for i in range(n):
        split = "test" if i % 10 == 0 else "val" if i % 10 in (1, 2) else "train"
        (root / split).mkdir(parents=True, exist_ok=True)
        tasks.append((i, str(root / split / f"shot_{i:05d}.jpg")))
    print(f"generating {n} photos at {SIZE[0]}x{SIZE[1]} in {root} ...", flush=True)
    with ProcessPoolExecutor(2) as pool:
        list(pool.map(_shot, tasks, chunksize=8))
    (root / "leakcheck.yaml").write_text(
        "version: 1\nsplits:\n  train: [train/**]\n  val: [val/**]\n  test: [test/**]\n")
    (root / ".complete").touch()
    return root


def _full_decode(path: Path) -> int:
    from PIL import Image

    with Image.open(path) as img:
        img.load()
        return img.size[0]


def children_cpu() -> float:
    """CPU seconds of this process's children that have ended (a pool's workers, the check and its own)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def bare(files: list[Path], jobs: int) -> tuple[float, float]:
    """Wall and CPU seconds of a full decode of every file in ``jobs`` processes."""
    t, c = time.perf_counter(), children_cpu()
    with ProcessPoolExecutor(jobs) as pool:
        list(pool.map(_full_decode, files, chunksize=4))
    return time.perf_counter() - t, children_cpu() - c


def own_policy(root: Path) -> Path:
    """The dataset's policy with a store of this benchmark's own (emptied before every cold run)."""
    text = (root / "leakcheck.yaml").read_text()
    lines = [ln for ln in text.splitlines() if not ln.startswith("cache:")]
    path = root / "leakcheck-photos2mp.yaml"
    path.write_text("\n".join(lines) + f"\ncache: {STORE}/cache.sqlite\n")
    return path


def cold(policy: Path, jobs: int) -> dict:
    shutil.rmtree(policy.parent / STORE, ignore_errors=True)
    code = (
        "import json, resource, time\n"
        "from pytest_leakcheck import check\n"
        "t = time.perf_counter()\n"
        f"r = check({str(policy)!r}, jobs={jobs})\n"
        "dt = time.perf_counter() - t\n"
        "own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "s = r.stats\n"
        "print(json.dumps({'seconds': dt, 'driver_mb': own / 1024, 'worker_mb': kids / 1024,"
        " 'findings': len(r.findings), 'errors': sum(f.severity == 'error' for f in r.findings),"
        " 'largest': max((len(f.members) for f in r.findings), default=0),"
        " 'stages': {'hash': s.get('seconds_hash'), 'decode': s.get('seconds_decode'),"
        " **s.get('seconds_stages', {})}}))\n"
    )
    c = children_cpu()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"the check failed:\n{out.stderr[-3000:]}")
    # CPU as well as wall: on a shared 2-core machine the wall ratio moved 2.6x-6.6x between rounds.
    return {**json.loads(out.stdout.strip().splitlines()[-1]), "cpu": children_cpu() - c}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=289)
    parser.add_argument("--data", type=Path, help="a dataset folder holding its leakcheck.yaml")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    root = args.data.resolve() if args.data else fixed_camera(args.n)
    policy = own_policy(root)
    files = sorted(p for p in root.rglob("*") if p.suffix.lower() in (".jpg", ".jpeg", ".png"))
    print(f"{len(files)} images under {root}, jobs={args.jobs}", flush=True)
    rounds = []
    for _ in range(args.repeat):
        b, b_cpu = bare(files, args.jobs)
        c = cold(policy, args.jobs)
        rounds.append((b, c))
        rss = max(c["driver_mb"], c["worker_mb"])
        print(f"  bare full decode {b:6.1f} s | cold check {c['seconds']:6.1f} s = {c['seconds'] / b:5.1f}x "
              f"(CPU {c['cpu']:.1f} s / {b_cpu:.1f} s = {c['cpu'] / max(b_cpu, 1e-9):.1f}x) "
              f"(target <= 4x) | peak RSS {rss:5.0f} MB (driver {c['driver_mb']:.0f}, largest worker "
              f"{c['worker_mb']:.0f}; target < 1024) | findings {c['findings']} ({c['errors']} errors, "
              f"largest {c['largest']} files)", flush=True)
        stages = {k: v for k, v in c["stages"].items() if v}
        print("    stages (s): " + ", ".join(f"{k} {v:.1f}" for k, v in stages.items()), flush=True)
    ratios = [c["seconds"] / b for b, c in rounds]
    print(f"cold / bare: {min(ratios):.1f}x-{max(ratios):.1f}x over {len(rounds)} rounds; peak RSS "
          f"{max(max(c['driver_mb'], c['worker_mb']) for _, c in rounds):.0f} MB")


if __name__ == "__main__":
    main()
