"""Every image resolves to exactly one split; stray files become findings, not crashes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_leakcheck import check
from pytest_leakcheck.files.globs import compile as compile_glob
from pytest_leakcheck.dataset.inventory import scan
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.testing import photo, save

from ..conftest import write_policy

SMALL = (64, 48)


def _touch(path: Path, data: bytes = b"x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _scan(root: Path, text: str):
    return scan(load(write_policy(root, text)))


def _kinds(report) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for f in report.findings:
        out.setdefault(f.kind, set()).update(m.path for m in f.members)
    return out


@pytest.mark.parametrize(
    ("pattern", "yes", "no"),
    [
        (
            "train/**",
            ["train/a.jpg", "train/x/y/a.jpg"],
            ["trainx/a.jpg", "a/train.jpg", "val/train/a.jpg"],
        ),
        (
            "train",
            ["train/a.jpg", "train/x/a.jpg", "sub/train/a.jpg"],
            ["trains/a.jpg", "train.jpg"],
        ),
        ("train/", ["train/a.jpg", "sub/train/a.jpg"], ["train"]),
        ("*.png", ["a.png", "x/y/a.png"], ["a.jpg", "a.png.jpg"]),
        ("**/x/*.jpg", ["x/a.jpg", "a/b/x/c.jpg"], ["x/y/c.jpg", "ax/c.jpg", "x/a.png"]),
        ("./test/img_?.jpg", ["test/img_1.jpg"], ["test/img_10.jpg", "test/img_/.jpg"]),
        ("data/[ab]*.jpg", ["data/a1.jpg", "data/b.jpg"], ["data/c.jpg"]),
        ("data/[!ab]*.jpg", ["data/c.jpg"], ["data/a1.jpg"]),
    ],
)
def test_glob_semantics(pattern: str, yes: list[str], no: list[str]) -> None:
    """Globs act as in .gitignore: `**` spans folders, `*` stays in one name."""
    rx = compile_glob(pattern)
    assert [p for p in yes if not rx.match(p)] == []
    assert [p for p in no if rx.match(p)] == []


def test_paths_are_posix_relative_and_sorted(tmp_path: Path) -> None:
    """Records carry POSIX paths relative to the root, in a stable order, with size and mtime."""
    _touch(tmp_path / "train/b/z.jpg", b"12345")
    _touch(tmp_path / "train/a.JPG")
    _touch(tmp_path / "test/c.png")
    _touch(tmp_path / "train/notes.txt")
    inv = _scan(tmp_path, "version: 1\nsplits: {train: [train/**], test: [test/**]}\n")
    assert [r.path for r in inv.records] == ["test/c.png", "train/a.JPG", "train/b/z.jpg"]
    assert [r.split for r in inv.records] == ["test", "train", "train"]
    rec = inv.records[2]
    st = os.stat(tmp_path / "train/b/z.jpg")
    assert (rec.size, rec.mtime_ns) == (5, st.st_mtime_ns)
    assert inv.issues == ()


def test_unassigned_and_ambiguous_issues(tmp_path: Path) -> None:
    """A file in no split and a file in two splits are issues, and neither becomes a record."""
    _touch(tmp_path / "train/a.jpg")
    _touch(tmp_path / "train/shared/b.jpg")
    _touch(tmp_path / "test/c.jpg")
    _touch(tmp_path / "stray/d.jpg")
    inv = _scan(
        tmp_path, "version: 1\nsplits:\n  train: [train/**]\n  test: [test/**, train/shared/**]\n"
    )
    assert [r.path for r in inv.records] == ["test/c.jpg", "train/a.jpg"]
    issues = {(i.kind, i.path, i.splits) for i in inv.issues}
    assert issues == {
        ("unassigned", "stray/d.jpg", ()),
        ("ambiguous", "train/shared/b.jpg", ("train", "test")),
    }


def test_file_findings_do_not_stop_the_check(tmp_path: Path) -> None:
    """Unassigned (warning) and ambiguous (error) files are findings; a leak is still found."""
    save(photo(1, SMALL), tmp_path / "train/a.jpg")
    save(photo(1, SMALL), tmp_path / "test/a.jpg")
    save(photo(2, SMALL), tmp_path / "stray/b.jpg")
    save(photo(3, SMALL), tmp_path / "train/shared/c.jpg")
    write_policy(
        tmp_path, "version: 1\nsplits:\n  train: [train/**]\n  test: [test/**, train/shared/**]\n"
    )
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    kinds = _kinds(report)
    assert kinds["unassigned-file"] == {"stray/b.jpg"}
    assert kinds["ambiguous-file"] == {"train/shared/c.jpg"}
    assert kinds["identical-file"] == {"train/a.jpg", "test/a.jpg"}
    severity = {f.kind: f.severity for f in report.findings}
    assert severity["unassigned-file"] == "warning"
    assert severity["ambiguous-file"] == "error"
    amb = next(f for f in report.findings if f.kind == "ambiguous-file")
    assert amb.members[0].split == "train+test"


def test_manifest_splits_groups_and_missing_files(tmp_path: Path) -> None:
    """A manifest assigns splits and groups; a listed file not on disk is `missing-file`."""
    save(photo(1, SMALL), tmp_path / "img/a.jpg")
    save(photo(2, SMALL), tmp_path / "img/b.jpg")
    save(photo(3, SMALL), tmp_path / "img/c.jpg")
    save(photo(4, SMALL), tmp_path / "img/d.jpg")
    (tmp_path / "splits.csv").write_text(
        "path,split,group\n"
        "img/a.jpg,train,p1\n"
        "./img/b.jpg,test,\n"
        "img\\c.jpg,train,p2\n"
        "img/c.jpg,test,p2\n"
        "img/gone.jpg,test,p3\n"
    )
    inv = _scan(tmp_path, "version: 1\nsplits:\n  manifest: splits.csv\n")
    assert [(r.path, r.split, r.group) for r in inv.records] == [
        ("img/a.jpg", "train", "p1"),
        ("img/b.jpg", "test", None),
    ]
    assert inv.splits == ("train", "test")
    assert inv.policy.pairs == (("train", "test"),)
    assert {(i.kind, i.path) for i in inv.issues} == {
        ("ambiguous", "img/c.jpg"),
        ("unassigned", "img/d.jpg"),
        ("missing", "img/gone.jpg"),
    }
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    kinds = _kinds(report)
    assert kinds["missing-file"] == {"img/gone.jpg"}
    assert kinds["unassigned-file"] == {"img/d.jpg"}
    assert kinds["ambiguous-file"] == {"img/c.jpg"}
    missing = next(f for f in report.findings if f.kind == "missing-file")
    assert missing.severity == "error"
    assert missing.members[0].split == "test"


def test_symlinks_leaving_the_root_are_not_followed(tmp_path: Path) -> None:
    """A linked folder or file outside the root is not followed but reported; links that stay inside are listed."""
    root = tmp_path / "data"
    _touch(tmp_path / "outside/x.jpg")
    _touch(tmp_path / "outside/y.jpg")
    _touch(root / "train/a.jpg")
    _touch(root / "pool/p.jpg")
    (root / "train/ext").symlink_to(tmp_path / "outside", target_is_directory=True)
    (root / "train/ext_file.jpg").symlink_to(tmp_path / "outside/x.jpg")
    (root / "test").mkdir()
    (root / "test/pool").symlink_to(root / "pool", target_is_directory=True)
    (root / "test/alias.jpg").symlink_to(root / "train/a.jpg")
    inv = _scan(
        root, "version: 1\nsplits: {train: [train/**], test: [test/**]}\nignore: [pool/**]\n"
    )
    assert [r.path for r in inv.records] == ["test/alias.jpg", "test/pool/p.jpg", "train/a.jpg"]
    # Not followed, and not silent either: each is an `outside_root` issue in the split it sits in.
    assert [(i.kind, i.path, i.splits) for i in inv.issues] == [
        ("outside_root", "train/ext", ("train",)), ("outside_root", "train/ext_file.jpg", ("train",))]


def test_train_folder_linked_into_test_is_a_leak(tmp_path: Path) -> None:
    """Two paths to one folder are both listed, so a train folder linked into test is reported."""
    save(photo(1, SMALL), tmp_path / "train/sub/a.jpg")
    save(photo(2, SMALL), tmp_path / "test/b.jpg")
    (tmp_path / "test/sub").symlink_to(tmp_path / "train/sub", target_is_directory=True)
    write_policy(tmp_path, "version: 1\nsplits: {train: [train/**], test: [test/**]}\n")
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    assert _kinds(report) == {"identical-file": {"train/sub/a.jpg", "test/sub/a.jpg"}}


def test_symlink_loop_terminates(tmp_path: Path) -> None:
    """A folder linking to its own parent is walked once, not forever."""
    _touch(tmp_path / "train/a.jpg")
    (tmp_path / "train/loop").symlink_to(tmp_path / "train", target_is_directory=True)
    inv = _scan(tmp_path, "version: 1\nsplits: {train: [train/**]}\n")
    assert [r.path for r in inv.records] == ["train/a.jpg"]


def test_ignore_and_cache_folders_are_skipped_hidden_files_are_not(tmp_path: Path) -> None:
    """Ignore globs and the cache folder never reach the inventory; dot-files and dot-folders
    do, as torchvision's ImageFolder loads them (issue 22)."""
    _touch(tmp_path / "train/a.jpg")
    _touch(tmp_path / "train/skip/b.jpg")
    _touch(tmp_path / "train/c.tmp.png")
    _touch(tmp_path / ".hidden/d.jpg")
    _touch(tmp_path / "train/.thumbs/e.jpg")
    _touch(tmp_path / "train/.f.jpg")
    _touch(tmp_path / "cachedir/g.jpg")
    inv = _scan(
        tmp_path,
        "version: 1\nsplits: {train: [train/**]}\nignore: [train/skip, '*.tmp.png']\n"
        "cache: cachedir/cache.sqlite\n",
    )
    assert [r.path for r in inv.records] == ["train/.f.jpg", "train/.thumbs/e.jpg", "train/a.jpg"]
    assert [(i.kind, i.path) for i in inv.issues] == [("unassigned", ".hidden/d.jpg")]


def test_extensions_are_configurable(tmp_path: Path) -> None:
    """`files.extensions` replaces the default image suffixes, case-insensitively."""
    _touch(tmp_path / "train/a.jpg")
    _touch(tmp_path / "train/b.PGM")
    inv = _scan(tmp_path, "version: 1\nsplits: {train: [train/**]}\nfiles: {extensions: [pgm]}\n")
    assert [r.path for r in inv.records] == ["train/b.PGM"]


def test_a_folder_of_files_in_no_split_is_one_finding_that_counts_them_all(tmp_path: Path) -> None:
    """A stray copy of the data beside the splits (a re-split export's old `train/`): one warning
    for its folder, which lists the first files and counts every one; a few strays elsewhere
    stay a finding each."""
    save(photo(1, SMALL), tmp_path / "data/train/a.jpg")
    save(photo(2, SMALL), tmp_path / "data/test/b.jpg")
    for k in range(12):
        save(photo(10 + k, SMALL), tmp_path / f"old/train/images/{k:02d}.jpg")
    for k in range(2):
        save(photo(40 + k, SMALL), tmp_path / f"extra/{k}.jpg")
    write_policy(tmp_path, "version: 1\nsplits:\n  train: [data/train/**]\n  test: [data/test/**]\n")
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    strays = [f for f in report.findings if f.kind == "unassigned-file"]
    folded = [f for f in strays if len(f.members) > 1]
    assert len(folded) == 1 and len(strays) == 3
    (f,) = folded
    assert [m.path for m in f.members] == [f"old/train/images/{k:02d}.jpg" for k in range(5)]
    assert "all 12 files of this folder are in no split" in f.message and f.severity == "warning"
    assert {m.path for g in strays if g is not f for m in g.members} == {"extra/0.jpg", "extra/1.jpg"}


#: An AppleDouble resource fork as a Mac's zip stores it: the magic, the version, Finder metadata.
_FORK = b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        " + bytes(180)


def test_a_macs_resource_forks_are_not_images_an_image_named_so_is(tmp_path: Path) -> None:
    """A zip made on a Mac leaves ``__MACOSX/…/._a.png`` (and copies to FAT leave ``._a.png`` beside
    ``a.png``): Finder metadata, not pictures.  FUNSD as a repository ships it had 199 of them, each
    an unreadable-image error; a file with such a name whose bytes are an image is still checked."""
    save(photo(1, SMALL), tmp_path / "dataset/train/a.png")
    save(photo(2, SMALL), tmp_path / "dataset/test/b.png")
    save(photo(3, SMALL), tmp_path / "dataset/test/._c.png")
    _touch(tmp_path / "dataset/train/._a.png", _FORK)
    _touch(tmp_path / "__MACOSX/dataset/train/._a.png", _FORK)
    _touch(tmp_path / "__MACOSX/dataset/test/._b.png", _FORK)
    text = ("version: 1\nsplits:\n  train: [dataset/train/**, __MACOSX/dataset/train/**]\n"
            "  test: [dataset/test/**, __MACOSX/dataset/test/**]\n")
    inv = _scan(tmp_path, text)
    assert [r.path for r in inv.records] == ["dataset/test/._c.png", "dataset/test/b.png", "dataset/train/a.png"]
    assert not inv.issues
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    assert not [f for f in report.findings if f.kind == "unreadable-image"], report.findings
