"""Peak memory of a check over N + N identical images (issue 22, class 6).

Run by hand: ``python benchmarks/identical_memory.py [--sizes 1000,5000,20000] [--repeat 2] [--jobs 2]``.

For each N it writes N byte copies of one generated photo into ``train/`` and N into
``test/`` (a temporary folder; ``--workdir`` to choose), plus, as the baseline in the same
run, a dataset of the same size in which every image is distinct, and runs
``leakcheck check --no-cache`` on each in a child process.  It reports the peak resident
memory of that process (``wait4``'s ``ru_maxrss``: the driver, and its decode workers,
whichever was largest) and the wall time, each as the range over ``--repeat`` runs, and the
ratio identical / distinct.  Target: 20,000 + 20,000 identical images under 2 GB
(main before issue 22: 1,000 + 1,000 took 2.2 GB; 10,000 + 10,000 were killed at 24 GB).
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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_leakcheck.testing import photo, save

PACKAGE = str(Path(__file__).resolve().parent.parent)
POLICY = "version: 1\nsplits: {train: [train/**], test: [test/**]}\n"
SIZE = (64, 48)


def identical(root: Path, n: int) -> Path:
    src = save(photo(1, SIZE), root / "src.jpg", quality=90)
    for split in ("train", "test"):
        (root / split).mkdir(parents=True, exist_ok=True)
        for i in range(n):
            shutil.copyfile(src, root / f"{split}/{i:06d}.jpg")
    src.unlink()
    (root / "leakcheck.yaml").write_text(POLICY)
    return root


def distinct(root: Path, n: int) -> Path:
    for split, base in (("train", 0), ("test", 10_000_000)):
        for i in range(n):
            save(photo(base + i, SIZE), root / f"{split}/{i:06d}.jpg", quality=90)
    (root / "leakcheck.yaml").write_text(POLICY)
    return root


def measure(root: Path, jobs: int) -> tuple[float, float, int]:
    """(peak RSS in MB, seconds, exit code) of one check in a child process."""
    argv = [sys.executable, "-m", "pytest_leakcheck", "check", "--policy", str(root / "leakcheck.yaml"),
            "--no-cache", "--jobs", str(jobs), "--quiet", "--format", "json", "-o", str(root / "report.json")]
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, env={**os.environ, "PYTHONPATH": PACKAGE},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss / 1024, time.monotonic() - t0, proc.returncode


def _range(values: list[float]) -> str:
    return f"{min(values):.0f}" if max(values) - min(values) < 0.5 else f"{min(values):.0f}-{max(values):.0f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,5000,20000", help="N per split, comma separated")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=None,
                        help="where to write the datasets (default: a temp folder)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the distinct-image datasets")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="identical-memory-", dir=args.workdir))
    rows = []
    try:
        for n in (int(s) for s in args.sizes.split(",")):
            row: dict[str, object] = {"n_per_split": n}
            kinds = [("identical", identical)] + ([] if args.no_baseline else [("distinct", distinct)])
            for kind, make in kinds:
                root = make(base / f"{kind}-{n}", n)
                runs = [measure(root, args.jobs) for _ in range(args.repeat)]
                row[kind] = {"peak_mb": _range([r[0] for r in runs]), "seconds": _range([r[1] for r in runs]),
                             "exit": sorted({r[2] for r in runs})}
                row[f"{kind}_peak_mb_max"] = max(r[0] for r in runs)
                shutil.rmtree(root)
            if "distinct_peak_mb_max" in row:
                row["ratio_identical_over_distinct"] = round(
                    float(row["identical_peak_mb_max"]) / float(row["distinct_peak_mb_max"]), 2)
            print(json.dumps(row), flush=True)
            rows.append(row)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    biggest = max(rows, key=lambda r: int(r["n_per_split"]))
    ok = float(biggest["identical_peak_mb_max"]) < 2048 or int(biggest["n_per_split"]) < 20_000
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
