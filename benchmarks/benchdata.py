"""Generated benchmark datasets, built once and cached under the system temp folder."""

from __future__ import annotations

import shutil
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

POLICY = (
    "version: 1\nsplits:\n  train: [train/**]\n  test: [test/**]\naugmentations: [hflip]\n"
    "cache: .leakcheck/cache.sqlite\n"
)


def _make(args: tuple[int, str, tuple[int, int]]) -> None:
    from pytest_leakcheck.testing import photo

    seed, path, size = args
    photo(seed, size).save(path, quality=90)


def generated(name: str, n: int, size: tuple[int, int], *, per_folder: int | None = None) -> Path:
    """N distinct JPEGs split 80/20 into train/ and test/, with a default policy.

    ``per_folder`` spreads files over numbered sub-folders, as large datasets
    are usually laid out.  A finished dataset is reused by later runs.
    """
    root = Path(tempfile.gettempdir()) / f"leakcheck-bench-{name}-{n}"
    done = root / ".complete"
    if done.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    tasks = []
    for i in range(n):
        folder = root / ("test" if i % 5 == 0 else "train")
        if per_folder:
            folder /= f"{i // per_folder:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        tasks.append((i, str(folder / f"img_{i:06d}.jpg"), size))
    print(f"generating {n} JPEGs at {size[0]}x{size[1]} in {root} ...", flush=True)
    t = time.perf_counter()
    with ProcessPoolExecutor() as pool:
        list(pool.map(_make, tasks, chunksize=64))
    print(f"  {time.perf_counter() - t:.0f} s", flush=True)
    (root / "leakcheck.yaml").write_text(POLICY)
    done.touch()
    return root
