"""`leakcheck split` on split folders (print or --apply the moves) and `--keep` edits (issue 15)."""

from __future__ import annotations

import csv
import hashlib
import shutil
from pathlib import Path

import pytest

from pytest_leakcheck import EXIT_CLEAN, EXIT_LEAKS, EXIT_USAGE
from pytest_leakcheck.testing import photo, save

from ..conftest import write_policy
from ..gitrepo import commit_all, git

POLICY = """\
version: 1
splits: {train: [data/train/**], test: [data/test/**]}
groups:
  - regex: '(?P<group>s\\d+)_'
ungrouped: own-group
"""


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """ImageFolder tree: subjects s00-s05 in train, s06-s07 in test; s01 also has a shot in test,
    and test/cat/copy.jpg is a byte copy of a train image."""
    root = tmp_path / "ds"
    for s in range(8):
        split = "train" if s < 6 else "test"
        for shot in range(2):
            save(photo(s * 10 + shot, (64, 48)), root / f"data/{split}/cat/s{s:02d}_{shot}.jpg", quality=90)
    save(photo(17, (64, 48)), root / "data/test/cat/s01_9.jpg", quality=90)
    shutil.copyfile(root / "data/train/cat/s03_0.jpg", root / "data/test/cat/copy.jpg")
    write_policy(root, POLICY)
    return root


def _digests(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*.jpg"))}


def _split(run_cli, root: Path, *args: str) -> tuple[int, str, str]:
    return run_cli("split", "--policy", str(root / "leakcheck.yaml"), "-j", "1", "--no-cache", *args)


def _check(run_cli, root: Path) -> int:
    return run_cli("check", "--policy", str(root / "leakcheck.yaml"), "-j", "1", "--no-cache")[0]


def test_split_prints_the_moves_and_touches_nothing(tree: Path, run_cli) -> None:
    before = _digests(tree)
    code, out, _ = _split(run_cli, tree)
    assert code == EXIT_CLEAN
    moves = [line for line in out.splitlines() if line.startswith("mv ")]
    assert moves == ["mv data/test/cat/copy.jpg data/train/cat/copy.jpg",
                     "mv data/test/cat/s01_9.jpg data/train/cat/s01_9.jpg"]
    assert "run with --apply" in out
    assert _digests(tree) == before
    # The plan shows what the moves make of the folders, and nothing they do not do (issue 27).
    assert "target" not in out and "(none)" not in out
    shares = [line.split() for line in out.splitlines() if line.startswith("  ")]
    assert [(row[0], int(row[1])) for row in shares] == [("train", 14), ("test", 4)]


def test_split_apply_moves_files_and_the_check_passes(tree: Path, run_cli) -> None:
    assert _check(run_cli, tree) == EXIT_LEAKS
    before = _digests(tree)
    code, out, _ = _split(run_cli, tree, "--apply")
    assert code == EXIT_CLEAN
    assert "moved 2 files (0 with git mv)" in out
    after = _digests(tree)
    assert sorted(after.values()) == sorted(before.values())  # nothing lost, nothing overwritten
    assert "data/train/cat/s01_9.jpg" in after and "data/test/cat/s01_9.jpg" not in after
    assert _check(run_cli, tree) == EXIT_CLEAN
    assert "nothing to move" in _split(run_cli, tree)[1]


def test_split_apply_never_overwrites(tree: Path, run_cli) -> None:
    save(photo(500, (64, 48)), tree / "data/train/cat/copy.jpg")  # the target of one move exists
    (tree / "data/train/cat/copy.jpg").rename(tree / "data/train/cat/copy.jpg")
    before = _digests(tree)
    code, _, err = _split(run_cli, tree, "--apply")
    assert code == EXIT_USAGE
    assert "data/train/cat/copy.jpg exists already" in err and "nothing was moved" in err
    assert _digests(tree) == before


def test_split_apply_uses_git_mv_in_a_work_tree(tree: Path, run_cli) -> None:
    git(tree, "init", "-q", "-b", "main")
    (tree / ".gitignore").write_text(".leakcheck/\n")
    commit_all(tree, "dataset")
    code, out, _ = _split(run_cli, tree)
    assert "git mv data/test/cat/s01_9.jpg data/train/cat/s01_9.jpg" in out
    code, out, _ = _split(run_cli, tree, "--apply")
    assert code == EXIT_CLEAN and "(2 with git mv)" in out
    status = git(tree, "status", "--porcelain").splitlines()
    assert "R  data/test/cat/s01_9.jpg -> data/train/cat/s01_9.jpg" in status


def test_keep_changes_only_the_rows_that_must_change(tree: Path, run_cli) -> None:
    """Columns, their order, line endings and every untouched row stay byte for byte."""
    rows = []
    for p in sorted((tree / "data").rglob("*.jpg")):
        rel = p.relative_to(tree).as_posix()
        rows.append(["cat", rel.split("/")[1], rel, "keep me"])
    text = "label,split,path,note\r\n" + "".join(",".join(r) + "\r\n" for r in rows)
    (tree / "kept.csv").write_text(text, newline="")
    write_policy(tree, POLICY.replace("{train: [data/train/**], test: [data/test/**]}", "{manifest: kept.csv}"))
    code, _, _ = _split(run_cli, tree, "--keep", str(tree / "kept.csv"), "--names", "train,val,test",
                        "--test", "0.2", "-o", str(tree / "fixed.csv"))
    assert code == EXIT_CLEAN
    old = (tree / "kept.csv").read_bytes().split(b"\r\n")
    new = (tree / "fixed.csv").read_bytes().split(b"\r\n")
    assert new[0] == b"label,split,path,note" and len(new) == len(old)
    changed = [(a, b) for a, b in zip(old, new) if a != b]
    assert changed == [(b"cat,test,data/test/cat/copy.jpg,keep me", b"cat,train,data/test/cat/copy.jpg,keep me"),
                       (b"cat,test,data/test/cat/s01_9.jpg,keep me", b"cat,train,data/test/cat/s01_9.jpg,keep me")]
    with open(tree / "fixed.csv", newline="") as fh:
        assert csv.DictReader(fh).fieldnames == ["label", "split", "path", "note"]


def test_split_never_empties_a_split_every_group_of_which_is_mostly_elsewhere(tmp_path: Path, run_cli) -> None:
    """Frames of three videos, each mostly in train with a few in test: moving every video to its
    majority split would leave test empty; test keeps at least half its share, a whole video."""
    root = tmp_path / "ds"
    for v, n in enumerate((6, 8, 10)):
        for t in range(n):
            split = "test" if t < 2 else "train"
            save(photo(100 * v + t, (64, 48)), root / f"data/{split}/cat/v{v}_{t:02d}.jpg", quality=90)
    write_policy(root, POLICY.replace("(?P<group>s", "(?P<group>v"))
    code, out, _ = _split(run_cli, root)
    assert code == EXIT_CLEAN
    test_after = {line.split()[2] for line in out.splitlines() if line.startswith("mv ")
                  and line.split()[2].startswith("data/test/")}
    kept_in_test = {f"data/test/cat/v{v}_{t:02d}.jpg" for v in range(3) for t in range(2)}
    moved_out = {line.split()[1] for line in out.splitlines() if line.startswith("mv data/test/")}
    in_test = (kept_in_test - moved_out) | test_after
    assert in_test and len({p.rsplit("/", 1)[1][:2] for p in in_test}) == 1, out  # one whole video
    assert len(in_test) >= 0.5 * 6, out  # at least half of test's 6 of 24 files


def test_tree_moves_move_a_shard_once_and_refuse_its_members_apart() -> None:
    """Members of a tar (or frames of a DICOM file) are listed one by one; only their file can move."""
    import numpy as np

    from pytest_leakcheck.errors import UsageError
    from pytest_leakcheck.split.apply import tree_moves
    from pytest_leakcheck.split.plan import Plan

    paths = ("train/0.tar#1.jpg", "train/0.tar#2.jpg", "train/a.jpg")
    current = dict.fromkeys(paths, "train")
    folders = {"train": "train", "test": "test"}

    def plan(*split: int) -> Plan:
        return Plan(("train", "val", "test"), paths, np.array(split), (None, None, None))

    assert [(m.src, m.dst) for m in tree_moves(plan(2, 2, 0), folders, current)] == [("train/0.tar", "test/0.tar")]
    with pytest.raises(UsageError, match="inside train/0.tar in two splits"):
        tree_moves(plan(2, 0, 0), folders, current)


def test_split_apply_moves_each_images_annotations_with_it(tmp_path: Path, run_cli) -> None:
    """A YOLO export keeps ``labels/x.txt`` beside ``images/x.jpg``, FUNSD ``annotations/x.json``,
    LabelMe ``x.json`` in the image's folder: moving the image alone left its labels in the old
    split (YOLO then trains the moved image as background).  Each travels with its image; a label
    file that two images bound for different places share stays where it is."""
    root = tmp_path / "ds"
    for split, k in (("train", 0), ("train", 1), ("test", 2)):
        save(photo(k, (64, 48)), root / f"{split}/images/p{k}.jpg", quality=90)
        (root / f"{split}/labels").mkdir(parents=True, exist_ok=True)
        (root / f"{split}/labels/p{k}.txt").write_text(f"0 0.5 0.5 0.1 0.{k}\n")
    shutil.copyfile(root / "train/images/p0.jpg", root / "test/images/copy.jpg")
    (root / "test/labels/copy.txt").write_text("0 0.5 0.5 0.2 0.2\n")
    (root / "test/images/copy.json").write_text("{}")  # a LabelMe file in the image's own folder
    write_policy(root, "version: 1\nsplits: {train: [train/**], test: [test/**]}\n")
    code, out, _ = _split(run_cli, root)
    assert code == EXIT_CLEAN
    assert [line for line in out.splitlines() if line.startswith("mv ")] == [
        "mv test/images/copy.jpg train/images/copy.jpg",
        "mv test/images/copy.json train/images/copy.json",
        "mv test/labels/copy.txt train/labels/copy.txt"]
    assert _split(run_cli, root, "--apply")[0] == EXIT_CLEAN
    assert (root / "train/labels/copy.txt").read_text() == "0 0.5 0.5 0.2 0.2\n"
    assert not (root / "test/labels/copy.txt").exists() and (root / "test/labels/p2.txt").exists()


def test_an_annotation_two_images_claim_for_different_places_stays() -> None:
    from pytest_leakcheck.split import sidecars
    from pytest_leakcheck.split.moves import Move

    import tempfile

    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        for name in ("test/images/x.jpg", "test/images/x.png", "test/labels/x.txt"):
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(b"x")
        moves = [Move("test/images/x.jpg", "train/images/x.jpg"), Move("test/images/x.png", "val/images/x.png")]
        listed = {"test/images/x.jpg", "test/images/x.png"}
        assert sidecars.beside(root, moves, listed) == []
        assert sidecars.beside(root, moves[:1], listed) == []  # x.png stays: the label may be its
        both = [moves[0], Move("test/images/x.png", "train/images/x.png")]
        assert sidecars.beside(root, both, listed) == [Move("test/labels/x.txt", "train/labels/x.txt")]
