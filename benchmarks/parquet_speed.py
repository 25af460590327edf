"""The same images as files and embedded in Parquet shards: cold and warm `leakcheck check` times.

Run by hand: ``python benchmarks/parquet_speed.py --data /path/to/cifar10-jpg.tar.gz [--n 50000]``.

Data: CIFAR-10 as JPEGs (Krizhevsky, 2009), the team's shared archive
(``cifar10-jpg.tar.gz``, README beside it); its first N training images, one in
five put in ``test``.  Both layouts are built once under the system temp
folder, outside the repository:

- files: ``train/<i>.jpg``, ``test/<i>.jpg`` and a glob policy;
- parquet: ``data/train-0000k.parquet`` / ``data/test-0000k.parquet``, 10,000
  rows per shard and 100 rows per row group (what ``datasets`` writes for
  images), the image as the ``Image`` feature's ``{bytes, path}`` struct, and a
  ``huggingface:`` policy.

Each round runs a cold check (empty store) of both, alternating, then a warm
one; it prints every time, the range, and the Parquet / files ratio of each
round (target: cold within 1.5x).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROWS_PER_SHARD = 10_000
ROW_GROUP = 100


def _images(archive: Path, n: int) -> list[bytes]:
    """The first n CIFAR-10 training JPEGs, in index order."""
    found: dict[int, bytes] = {}
    if archive.is_dir():
        for path in archive.rglob("train_*.jpg"):
            index = int(path.stem.split("_")[1])
            if index < n:
                found[index] = path.read_bytes()
    else:
        with tarfile.open(archive) as tf:
            for member in tf:
                name = member.name.rsplit("/", 1)[-1]
                if member.isfile() and name.startswith("train_") and name.endswith(".jpg"):
                    index = int(name[6:-4])
                    if index < n:
                        found[index] = tf.extractfile(member).read()  # type: ignore[union-attr]
    return [found[i] for i in sorted(found)]


def build(archive: Path, n: int) -> Path:
    root = Path(tempfile.gettempdir()) / f"leakcheck-bench-parquet-{n}"
    if (root / ".complete").exists():
        return root
    import pyarrow as pa
    import pyarrow.parquet as pq

    shutil.rmtree(root, ignore_errors=True)
    images = _images(archive, n)
    by_split: dict[str, list[tuple[int, bytes]]] = {"train": [], "test": []}
    for i, data in enumerate(images):
        split = "test" if i % 5 == 0 else "train"
        by_split[split].append((i, data))
        path = root / "files" / split / f"{i:06d}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    image_type = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    for split, rows in by_split.items():
        for k in range(0, len(rows), ROWS_PER_SHARD):
            part = rows[k:k + ROWS_PER_SHARD]
            table = pa.table({
                "image": pa.array([{"bytes": d, "path": f"{i:06d}.jpg"} for i, d in part], type=image_type),
                "label": pa.array([i % 10 for i, _ in part], type=pa.int64()),
            })
            out = root / "parquet/data" / f"{split}-{k // ROWS_PER_SHARD:05d}.parquet"
            out.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, out, row_group_size=ROW_GROUP)
    (root / "files/leakcheck.yaml").write_text(
        "version: 1\nsplits:\n  train: [train/**]\n  test: [test/**]\ncache: .leakcheck/cache.sqlite\n")
    (root / "parquet/leakcheck.yaml").write_text(
        "version: 1\nsplits:\n  huggingface:\n    train: data/train-*.parquet\n    test: data/test-*.parquet\n"
        "cache: .leakcheck/cache.sqlite\n")
    (root / ".complete").touch()
    return root


def timed(policy: Path, jobs: int) -> dict:
    code = (
        "import json, sys, time\n"
        "from pytest_leakcheck import check\n"
        "t = time.perf_counter()\n"
        f"r = check({str(policy)!r}, jobs={jobs})\n"
        "print(json.dumps({'seconds': time.perf_counter() - t, 'files': r.stats['files'],"
        " 'decoded': r.stats['decoded'], 'findings': len(r.findings)}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="cifar10-jpg.tar.gz, or the folder it unpacks to")
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    root = build(args.data, args.n)
    layouts = {"files": root / "files/leakcheck.yaml", "parquet": root / "parquet/leakcheck.yaml"}
    cold: dict[str, list[float]] = {k: [] for k in layouts}
    warm: dict[str, list[float]] = {k: [] for k in layouts}
    for r in range(args.repeat):
        for name, policy in layouts.items():
            shutil.rmtree(policy.parent / ".leakcheck", ignore_errors=True)
            first = timed(policy, args.jobs)
            again = timed(policy, args.jobs)
            cold[name].append(first["seconds"])
            warm[name].append(again["seconds"])
            print(f"round {r + 1} {name:8s} cold {first['seconds']:7.1f} s ({first['files']} images, decoded "
                  f"{first['decoded']}, {first['findings']} findings)  warm {again['seconds']:6.2f} s", flush=True)
    for label, times in (("cold", cold), ("warm", warm)):
        ratios = [p / f for p, f in zip(times["parquet"], times["files"])]
        print(f"{label}: files {min(times['files']):.1f}-{max(times['files']):.1f} s, parquet "
              f"{min(times['parquet']):.1f}-{max(times['parquet']):.1f} s; parquet/files per round "
              f"{', '.join(f'{x:.2f}' for x in ratios)} (best {min(times['parquet']) / min(times['files']):.2f}x"
              + (", target <= 1.5x)" if label == "cold" else ")"))


if __name__ == "__main__":
    main()
