"""The pre-commit hook's time for one staged image against a store of 50,000 signatures.

Run by hand: ``python benchmarks/hook_speed.py [--n 50000] [--repeat 3]``.  It builds
(once, cached under the system temp folder) N distinct 64x64 JPEGs split 80/20 into
train and test, warms the store with one full check, then measures in one run:

- baseline: a warm full ``leakcheck check`` of the same tree (every file stat'ed, every
  signature loaded, every pair searched);
- ``leakcheck hook FILE`` for one new image, as a subprocess: the wall time a commit waits;
- the same focus check in-process (``check(policy, focus=[FILE])``), without interpreter
  and import start-up.

The new image is a fresh file each round, so every round hashes and decodes it.
Target: the hook under 1 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

SIZE = (64, 64)


def _make(args: tuple[int, str]) -> None:
    from pytest_leakcheck.testing import photo

    seed, path = args
    photo(seed, SIZE).save(path, quality=90)


def build(n: int) -> Path:
    root = Path(tempfile.gettempdir()) / f"leakcheck-bench-hook-{n}"
    done = root / ".complete"
    if done.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    tasks = []
    for i in range(n):
        split = "test" if i % 5 == 0 else "train"
        # 1,000 files per folder, as large datasets are usually laid out.
        folder = root / split / f"{i // 1000:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        tasks.append((i, str(folder / f"img_{i:06d}.jpg")))
    print(f"generating {n} JPEGs at {SIZE[0]}x{SIZE[1]} in {root} ...", flush=True)
    t = time.perf_counter()
    with ProcessPoolExecutor() as pool:
        list(pool.map(_make, tasks, chunksize=256))
    print(f"  {time.perf_counter() - t:.0f} s", flush=True)
    (root / "leakcheck.yaml").write_text(
        "version: 1\nsplits:\n  train: [train/**]\n  test: [test/**]\naugmentations: [hflip]\n"
        "cache: .leakcheck/cache.sqlite\n"
    )
    done.touch()
    return root


def run(cmd: list[str], cwd: Path) -> tuple[float, subprocess.CompletedProcess]:
    t = time.perf_counter()
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    return time.perf_counter() - t, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    root = build(args.n)
    policy = root / "leakcheck.yaml"
    leakcheck = [sys.executable, "-m", "pytest_leakcheck"]
    staged = root / "test" / "staged"
    shutil.rmtree(staged, ignore_errors=True)

    if not (root / ".leakcheck" / "cache.sqlite").exists():
        print("warming the store with a full check ...", flush=True)
        dt, _ = run([*leakcheck, "check", "--policy", str(policy)], root)
        print(f"  cold full check: {dt:.1f} s", flush=True)
    print(f"{args.n} images, {os.cpu_count()} cores", flush=True)

    full = [run([*leakcheck, "check", "--policy", str(policy)], root)[0] for _ in range(args.repeat)]

    from pytest_leakcheck import check
    from pytest_leakcheck.policy import load
    from pytest_leakcheck.testing import photo

    hook_times, inproc_times, exit_codes = [], [], set()
    loaded = load(policy)
    for r in range(args.repeat):
        staged.mkdir(parents=True, exist_ok=True)
        new = staged / f"new_{r}.jpg"
        photo(10_000_000 + r, SIZE).save(new, quality=90)
        rel = new.relative_to(root).as_posix()
        dt, out = run([*leakcheck, "hook", "--policy", str(policy), rel], root)
        hook_times.append(dt)
        exit_codes.add(out.returncode)
        new2 = staged / f"new_{r}_b.jpg"
        photo(20_000_000 + r, SIZE).save(new2, quality=90)
        t = time.perf_counter()
        report = check(policy=loaded, focus=[new2.relative_to(root).as_posix()])
        inproc_times.append(time.perf_counter() - t)
        stats = report.stats
    shutil.rmtree(staged, ignore_errors=True)

    best_full, best_hook, best_in = min(full), min(hook_times), min(inproc_times)
    print(f"baseline: warm full `leakcheck check` (subprocess): {best_full:6.2f} s  (best of {len(full)})")
    print(f"`leakcheck hook` one new image (subprocess):      {best_hook:6.2f} s  (best of {len(hook_times)};"
          f" all: {', '.join(f'{t:.2f}' for t in hook_times)}; exit {sorted(exit_codes)})")
    print(f"check(focus=[one new image]) in-process:          {best_in:6.2f} s  "
          f"(hashed {stats.get('hashed')}, decoded {stats.get('decoded')}, reused {stats.get('reused')};"
          f" search {stats.get('seconds_search')} s)")
    print(f"hook / full check: {best_hook / best_full:.2f}   target: hook < 1 s -> "
          f"{'met' if best_hook < 1 else 'NOT met'}")


if __name__ == "__main__":
    main()
