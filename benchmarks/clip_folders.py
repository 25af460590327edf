"""Video clips in folders, frames split at random (issue 37 item 5, stop 53): does ``init`` propose the clip?

Run by hand: ``python benchmarks/clip_folders.py [--out /work/scratch/s53-clips] [--clips 8] [--frames 36]``.

Two sets are built from bare mirrors (``fetch`` or ``git clone --bare`` of the repository; nothing is
committed here), then ``leakcheck init`` and ``leakcheck check`` run on each as a user runs them:

- ``davis``: DAVIS 2016 as the EOR-VOS repository ships it (``MathLee/EOR-VOS`` at 1bde4d5,
  ``DAVIS/JPEGImages/480p/<clip>/00000.jpg``): the first ``--clips`` clips, the first ``--frames``
  frames of each, every frame put in ``train/<clip>/`` or ``test/<clip>/`` at random (80/20, seed 0),
  the clip folder's name kept under each split.  Every clip then sits in both splits: the leak.
  Expected: the clip-folder rule proposed, and one ``group-split`` error per clip.
- ``nail``: the ``nail`` field dataset (``FahdAby/5_Nail_Disease_Machine-Learing``, benchmarks/field_sources.py)
  laid out as ImageFolder class folders whose files are renumbered ``1.jpg, 2.jpg…`` per class and split
  (sorted by their Roboflow names, as a renaming script does): numbered files, ≥ 8 per folder, every
  folder name in every split, but different photos.  Expected: no clip rule (the pixel check refuses).
- ``cifar``: CIFAR-10 as ImageFolder (``/work/shared/data/cifar10-jpg.tar.gz``: ``train/frog/train_00000.jpg``,
  one counter over the split), the first 60 images of each class from train and 15 from test: class
  folders of counter names again.  Expected: no clip rule.

Printed per set: init's ``Found``/``Not set up`` lines about groups, the ``groups:`` rule written, the
check's exit code and its ``group-split`` findings (group, files per split).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import random
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

PACKAGE = str(Path(__file__).resolve().parent.parent)
MIRRORS = Path(os.environ.get("FIELD_MIRRORS", "/work/.mirror"))
DAVIS = ("MathLee/EOR-VOS", "1bde4d5f936304c5ad69e301956e9d65082dfbc8", "DAVIS/JPEGImages/480p")
NAIL = ("FahdAby/5_Nail_Disease_Machine-Learing", "0ee4eed0a7788efc1b05ad32a3f20750875e95b3")
CIFAR = Path("/work/shared/data/cifar10-jpg.tar.gz")


def _archive(repo: str, commit: str, paths: list[str], dest: Path) -> None:
    git_dir = MIRRORS / repo.replace("/", "+") / "repo"
    if not git_dir.is_dir():
        raise SystemExit(f"no mirror of {repo} at {git_dir}: fetch it (git clone --bare https://github.com/{repo})")
    out = subprocess.run(["git", "--git-dir", str(git_dir), "archive", commit, "--", *paths],
                         check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(out)) as tar:
        tar.extractall(dest, filter="data")


def build_davis(root: Path, clips: int, frames: int, seed: int = 0, test: float = 0.2) -> dict[str, int]:
    """``root/{train,test}/<clip>/<frame>.jpg`` from the first ``clips`` DAVIS clips; frames per split."""
    raw = root.with_name(root.name + "-raw")
    if not raw.is_dir():
        _archive(DAVIS[0], DAVIS[1], [DAVIS[2]], raw)
    source = raw / DAVIS[2]
    rng = random.Random(seed)
    counts = {"train": 0, "test": 0}
    for clip in sorted(p.name for p in source.iterdir() if p.is_dir())[:clips]:
        for frame in sorted((source / clip).glob("*.jpg"))[:frames]:
            split = "test" if rng.random() < test else "train"
            (root / split / clip).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(frame, root / split / clip / frame.name)
            counts[split] += 1
    return counts


def build_nail(root: Path) -> dict[str, int]:
    """``root/<split>/<class>/<n>.jpg``: the nail photos in class folders, renumbered per class and split."""
    raw = root.with_name(root.name + "-raw")
    if not raw.is_dir():
        _archive(NAIL[0], NAIL[1], ["train", "valid", "test"], raw)
    counts: dict[str, int] = {}
    for split in ("train", "valid", "test"):
        with (raw / split / "_classes.csv").open(newline="") as fh:
            rows = list(csv.reader(fh))
        classes = [c.strip() for c in rows[0][1:]]
        by_class: dict[str, list[str]] = {}
        for row in rows[1:]:
            flags = [v.strip() == "1" for v in row[1:]]
            if sum(flags) == 1:  # multi-label rows have no one class folder
                by_class.setdefault(classes[flags.index(True)], []).append(row[0].strip())
        for name, files in by_class.items():
            folder = root / split / name.replace(" ", "_")
            folder.mkdir(parents=True, exist_ok=True)
            for n, file in enumerate(sorted(files), 1):
                shutil.copyfile(raw / split / file, folder / f"{n}.jpg")
            counts[split] = counts.get(split, 0) + len(files)
    return counts


def build_cifar(root: Path, train: int = 60, test: int = 15) -> dict[str, int]:
    """``root/{train,test}/<class>/<split>_NNNNN.jpg``: the first images of each class of CIFAR-10."""
    want = {"train": train, "test": test}
    taken: dict[tuple[str, str], int] = {}
    with tarfile.open(CIFAR) as tar:
        for member in tar:
            parts = member.name.split("/")  # cifar10/<split>/<class>/<name>
            if len(parts) != 4 or not member.isfile() or taken.get((parts[1], parts[2]), 0) >= want[parts[1]]:
                continue
            taken[parts[1], parts[2]] = taken.get((parts[1], parts[2]), 0) + 1
            (root / parts[1] / parts[2]).mkdir(parents=True, exist_ok=True)
            (root / parts[1] / parts[2] / parts[3]).write_bytes(tar.extractfile(member).read())  # type: ignore[union-attr]
    return {split: sum(n for (s, _), n in taken.items() if s == split) for split in want}


def _cli(*args: str) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-m", "pytest_leakcheck", *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": PACKAGE})
    return done.returncode, done.stdout + done.stderr


def run(root: Path) -> None:
    """init, then check; print what init said about groups, the rule, and the group-split findings."""
    policy = root / "leakcheck.yaml"
    shutil.rmtree(root / ".leakcheck", ignore_errors=True)
    code, out = _cli("init", str(root), "--force")
    print(f"  init exit {code}")
    for line in out.splitlines():
        if "group" in line.lower() or "clip" in line.lower():
            print("   ", line)
    text = policy.read_text() if policy.is_file() else ""
    rule = [line for line in text.splitlines() if line.startswith("  - ")]
    print(f"  rule: {rule[0].strip() if rule else 'none'}")
    report = root / "report.json"
    code, out = _cli("check", "--policy", str(policy), "-j", "1", "-q", "--format", "json", "-o", str(report))
    findings = json.loads(report.read_text())["findings"] if report.is_file() else []
    groups = [f for f in findings if f["kind"] == "group-split"]
    print(f"  check exit {code}: {len(groups)} group-split findings "
          f"({sum(f['severity'] == 'error' for f in groups)} errors) of {len(findings)} findings")
    for f in groups:
        print(f"    {f['message'][:160]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("/work/scratch/s53-clips"))
    parser.add_argument("--clips", type=int, default=8)
    parser.add_argument("--frames", type=int, default=36)
    parser.add_argument("--only", choices=("davis", "nail", "cifar"))
    args = parser.parse_args()
    builders = {"davis": lambda root: build_davis(root, args.clips, args.frames), "nail": build_nail,
                "cifar": build_cifar}
    for name, build in builders.items():
        if args.only not in (None, name):
            continue
        root = args.out / name
        shutil.rmtree(root, ignore_errors=True)
        counts = build(root)
        print(f"{name}: {root} {counts}")
        run(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
