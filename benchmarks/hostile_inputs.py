"""A campaign of pull requests that change only what a split source reads or what a link points
at, against `check --changed-since` and the pre-commit hook (issue 34, classes 4, 5 and 11):
count the outcomes.

Run by hand: ``python benchmarks/hostile_inputs.py [--random 20] [--seed 0]``.  Each input is a
git repository whose base (branch ``main``) has no leak across splits, and a pull request that
touches no image in a split, yet makes one: a YOLO list line moved from ``train.txt`` to
``val.txt`` (lists named ``.txt`` or ``.jpg``, nested list of lists), a table row's split
changed (CSV, metadata.jsonl), a COCO image moved between split files, an image copy appended
to a test tar shard, a file in no split rewritten under a link (a file link, a folder link, a
chain of two links), and NUL bytes in ``data.yaml``'s ``path:`` or a list line; then
``--random`` YOLO repositories with a random line moved.  For each, the full check (the trusted
verdict), ``check --changed-since main`` and ``hook`` on the changed files run in children
(hostile_common.py).  Counted: inputs tried (each way in counts once), exit codes, exit 3,
hangs, files moved outside the repository (always 0), leaks passed (``--changed-since`` or the
hook exit 0 where the full check exits 1).
"""

from __future__ import annotations

import argparse
import io
import json
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hostile_common import Tally, leakcheck  # noqa: E402

from pytest_leakcheck.testing import photo, save  # noqa: E402

IDENT = ["-c", "user.name=c", "-c", "user.email=c@example.invalid", "-c", "commit.gpgsign=false"]
SIZE = (48, 36)


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *IDENT, *args], cwd=root, check=True, capture_output=True, text=True).stdout


def images(root: Path, folder: str = "images", n: int = 4) -> None:
    for i in range(n):
        save(photo(i, SIZE), root / f"{folder}/t{i}.jpg", quality=90)
        save(photo(50 + i, SIZE), root / f"{folder}/v{i}.jpg", quality=90)
    shutil.copyfile(root / f"{folder}/t0.jpg", root / f"{folder}/dup.jpg")  # a copy, in train on the base


def yolo(root: Path, suffix: str = ".txt", nested: bool = False) -> Callable[[Path], list[str]]:
    images(root)
    train = [f"images/t{i}.jpg" for i in range(4)] + ["images/dup.jpg"]
    (root / "lists").mkdir()
    (root / f"lists/train{suffix}").write_text("".join(f"../{p}\n" for p in train))
    (root / f"lists/val{suffix}").write_text("".join(f"../images/v{i}.jpg\n" for i in range(4)))
    (root / "lists/extra.txt").write_text("../images/v3.jpg\n")
    val = f"[lists/val{suffix}, lists/extra.txt]" if nested else f"lists/val{suffix}"
    (root / "data.yaml").write_text(f"path: .\ntrain: lists/train{suffix}\nval: {val}\n")
    (root / "leakcheck.yaml").write_text("version: 1\nsplits:\n  yolo: data.yaml\n")

    def pr(root: Path) -> list[str]:
        t = root / f"lists/train{suffix}"
        t.write_text(t.read_text().replace("../images/dup.jpg\n", ""))
        target = root / ("lists/extra.txt" if nested else f"lists/val{suffix}")
        target.write_text(target.read_text() + "../images/dup.jpg\n")
        return [f"lists/train{suffix}", target.relative_to(root).as_posix()]
    return pr


def table(root: Path, jsonl: bool = False) -> Callable[[Path], list[str]]:
    images(root)
    rows = [(f"t{i}.jpg", "train") for i in range(4)] + [("dup.jpg", "train")] + [(f"v{i}.jpg", "test") for i in range(4)]
    name = "images/metadata.jsonl" if jsonl else "labels.csv"

    def write(rows: list[tuple[str, str]]) -> None:
        if jsonl:
            (root / name).write_text("".join(json.dumps({"file_name": f, "split": s}) + "\n" for f, s in rows))
        else:
            (root / name).write_text("filename,split\n" + "".join(f"{f},{s}\n" for f, s in rows))
    write(rows)
    policy = ("  metadata: images/metadata.jsonl\n" if jsonl
              else "  table:\n    file: labels.csv\n    images: images\n    columns: {file: filename, split: split}\n")
    (root / "leakcheck.yaml").write_text("version: 1\nsplits:\n" + policy)

    def pr(root: Path) -> list[str]:
        write([(f, "test" if f == "dup.jpg" else s) for f, s in rows])
        return [name]
    return pr


def coco(root: Path) -> Callable[[Path], list[str]]:
    images(root)
    (root / "annotations").mkdir()

    def write(train: list[str], test: list[str]) -> None:
        for split, names in (("train", train), ("test", test)):
            doc = {"images": [{"id": k, "file_name": n, "width": 48, "height": 36} for k, n in enumerate(names)],
                   "annotations": [], "categories": []}
            (root / f"annotations/instances_{split}.json").write_text(json.dumps(doc))
    train, test = [f"t{i}.jpg" for i in range(4)] + ["dup.jpg"], [f"v{i}.jpg" for i in range(4)]
    write(train, test)
    (root / "leakcheck.yaml").write_text(
        "version: 1\nsplits:\n  coco:\n    train: {file: annotations/instances_train.json, images: images}\n"
        "    test: {file: annotations/instances_test.json, images: images}\n")

    def pr(root: Path) -> list[str]:
        write(train[:-1], [*test, "dup.jpg"])
        return ["annotations/instances_train.json", "annotations/instances_test.json"]
    return pr


def _tar(path: Path, members: dict[str, bytes]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))


def webdataset(root: Path) -> Callable[[Path], list[str]]:
    def jpeg(seed: int) -> bytes:
        buf = io.BytesIO()
        photo(seed, SIZE).save(buf, "JPEG", quality=90)
        return buf.getvalue()
    _tar(root / "shards/train-0.tar", {f"t{i}.jpg": jpeg(i) for i in range(3)})
    _tar(root / "shards/test-0.tar", {"v0.jpg": jpeg(60)})
    (root / "leakcheck.yaml").write_text("version: 1\nsplits:\n  webdataset: {train: 'shards/train-*.tar', "
                                         "test: 'shards/test-*.tar'}\n")

    def pr(root: Path) -> list[str]:
        _tar(root / "shards/test-0.tar", {"v0.jpg": jpeg(60), "v1.jpg": jpeg(1)})
        return ["shards/test-0.tar"]
    return pr


def linked(root: Path, how: str) -> Callable[[Path], list[str]]:
    for i in range(4):
        save(photo(i, SIZE), root / f"train/t{i}.png")
    save(photo(60, SIZE), root / "test/e0.png")
    save(photo(61, SIZE), root / "assets/img.png")
    if how == "file":
        (root / "test/x.png").symlink_to("../assets/img.png")
    elif how == "folder":
        (root / "test/more").symlink_to("../assets")
    else:
        (root / "mid").mkdir()
        (root / "mid/y.png").symlink_to("../assets/img.png")
        (root / "test/x.png").symlink_to("../mid/y.png")
    (root / "leakcheck.yaml").write_text("version: 1\nsplits: {train: [train/**], test: [test/**]}\n")

    def pr(root: Path) -> list[str]:
        shutil.copyfile(root / "train/t1.png", root / "assets/img.png")
        return ["assets/img.png"]
    return pr


def nul(root: Path, where: str) -> Callable[[Path], list[str]]:
    pr = yolo(root)

    def bad(root: Path) -> list[str]:
        if where == "path":
            (root / "data.yaml").write_text('path: "da\\0ta"\ntrain: lists/train.txt\nval: lists/val.txt\n')
            return ["data.yaml"]
        changed = pr(root)
        (root / "lists/val.txt").write_text((root / "lists/val.txt").read_text() + "../images/v\0.jpg\n")
        return changed
    return bad


CASES: dict[str, Callable[[Path], Callable[[Path], list[str]]]] = {
    "YOLO list line moved": yolo,
    "YOLO lists named .jpg": lambda r: yolo(r, ".jpg"),
    "YOLO nested list of lists": lambda r: yolo(r, nested=True),
    "table row's split changed (CSV)": table,
    "metadata.jsonl row's split changed": lambda r: table(r, jsonl=True),
    "COCO image moved between split files": coco,
    "copy appended to a test tar shard": webdataset,
    "file link's target rewritten": lambda r: linked(r, "file"),
    "folder link's file rewritten": lambda r: linked(r, "folder"),
    "chain of links, last target rewritten": lambda r: linked(r, "chain"),
    "NUL in data.yaml path": lambda r: nul(r, "path"),
    "NUL in a list line": lambda r: nul(r, "list"),
}


def one(tally: Tally, name: str, setup: Callable[[Path], Callable[[Path], list[str]]]) -> None:
    base = Path(tempfile.mkdtemp(prefix="hostile-inputs-"))
    try:
        root = base / "repo"
        root.mkdir()
        git(root, "init", "-q", "-b", "main")
        pr = setup(root)
        (root / ".gitignore").write_text(".leakcheck/\n")
        git(root, "add", "-A")
        git(root, "commit", "-qm", "base")
        git(root, "checkout", "-q", "-b", "pr")
        policy = str(root / "leakcheck.yaml")
        leakcheck("check", "--policy", policy, "-j", "1", cwd=root)  # the store, warm from the base
        changed = pr(root)
        git(root, "add", "-A")
        full, _, _ = leakcheck("check", "--policy", policy, "-j", "1", "--no-cache", cwd=root)
        leak = full == 1
        hook, _, err_h = leakcheck("hook", "--policy", "leakcheck.yaml", *changed, cwd=root)
        tally.count(f"{name} (hook)", hook, err_h, leak=leak, full=full)
        git(root, "commit", "-qm", "pr")
        since, _, err_s = leakcheck("check", "--policy", policy, "-j", "1", "--changed-since", "main", cwd=root)
        tally.count(f"{name} (--changed-since)", since, err_s, leak=leak, full=full)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--random", type=int, default=20, help="YOLO repositories with a random line moved")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    tally = Tally("source inputs")
    for name, setup in CASES.items():
        one(tally, name, setup)
    for k in range(args.random):
        suffix, nested = rng.choice([".txt", ".jpg", ".list"]), rng.random() < 0.5
        one(tally, f"random {k}: YOLO {suffix}{' nested' if nested else ''}",
            lambda r, suffix=suffix, nested=nested: yolo(r, suffix, nested))
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
