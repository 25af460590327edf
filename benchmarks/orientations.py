"""What searching all 8 orientations costs and finds on CIFAR-10, hash detectors only.

Run by hand: ``python benchmarks/orientations.py [--data DIR] [--jobs 2] [--repeat 2]``.

It checks the 55,000 visible CIFAR-10 images (``/work/scratch/cifar10``, or ``--data``, a
folder with ``train/`` and ``test/``) cold, a fresh store each time, with the default
detectors (identical-file, identical-pixels, phash, thumbnail; aligned off) and the
default pairs (train~test, each split with itself as warnings), twice: orientations
``[hflip]`` (the old default) and all 8 (the new one).  For each it prints the wall time
(range over ``--repeat`` runs), the decode and search seconds, how many error-level
cross-split findings there are, how many test images they flag, and how many of the
ciFAIR-listed near-duplicates land in one error finding with their training original.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import tempfile
import time
from pathlib import Path

LABELS = Path("/work/shared/data/cifar10-visible-duplicates.csv")
SCRATCH = Path("/work/scratch/cifar10")
HEAD = "version: 1\nsplits: {train: [train/**], test: [test/**]}\n"
SETTINGS = {
    "hflip only": "augmentations: [hflip]\n",
    "8 orientations": "augmentations: [hflip, vflip, rot90, rot180, rot270, transpose, transverse]\n",
}


def listed() -> list[tuple[str, str]]:
    """(test path, train path) of the human-judged near-duplicates, relative to the data folder."""
    with open(LABELS, newline="") as fh:
        rows = list(csv.DictReader(fh))
    return [(r["test_image"], r["duplicate_of"]) for r in rows if r["judgment"] == "near-duplicate"]


def one(name: str, root: Path, tmp: Path, jobs: int | None):
    from pytest_leakcheck import check
    from pytest_leakcheck.policy.load import load

    folder = Path(tempfile.mkdtemp(dir=tmp))
    (folder / "leakcheck.yaml").write_text(HEAD + SETTINGS[name] + f"cache: {folder}/cache.sqlite\n")
    # The policy lives in the temp folder; the images stay where they are, untouched.
    policy = dataclasses.replace(load(folder / "leakcheck.yaml"), root=root)
    t0 = time.perf_counter()
    report = check(policy=policy, jobs=jobs)
    return report, time.perf_counter() - t0


def summary(report, pairs: list[tuple[str, str]]) -> str:
    cross = [f for f in report.findings if f.severity == "error" and len(f.splits) > 1]
    flagged = {m.path for f in cross for m in f.members if m.split == "test"}
    found = sum(any({a, b} <= {m.path for m in f.members} for f in cross) for a, b in pairs)
    within = sum(len(f.splits) == 1 and f.is_copy for f in report.findings)
    return (f"cross-split error findings {len(cross)}, test images flagged {len(flagged)}, "
            f"listed near-duplicates found {found}/{len(pairs)}, within-split findings {within}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=SCRATCH)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--only", choices=list(SETTINGS), help="run one setting")
    args = ap.parse_args()
    pairs = listed()
    print(f"{sum(1 for _ in args.data.glob('*/*/*.jpg'))} images under {args.data}, jobs={args.jobs}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in [args.only] if args.only else SETTINGS:
            runs = [one(name, args.data, Path(tmp), args.jobs) for _ in range(args.repeat)]
            report, _ = runs[0]
            times = sorted(t for _, t in runs)
            st = report.stats
            print(f"{name}: cold {times[0]:.1f}-{times[-1]:.1f} s (decode {st['seconds_decode']:.1f} s, "
                  f"search {st['seconds_search']:.1f} s); {summary(report, pairs)}", flush=True)


if __name__ == "__main__":
    main()
