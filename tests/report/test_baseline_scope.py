"""Hardening, class 10: a verdict holds only for the splits it was given in, `judge`
needs an unambiguous id and never overwrites silently, and broken files are never copies."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
import yaml

from pytest_leakcheck import EXIT_CLEAN, EXIT_LEAKS, EXIT_USAGE, check
from pytest_leakcheck.cli import main
from pytest_leakcheck.report.model import finding_id
from pytest_leakcheck.testing import photo, save

from ..conftest import write_policy

BASELINE = ".leakcheck-baseline.yaml"
MANIFEST_POLICY = "version: 1\nsplits:\n  manifest: splits.csv\n"


def _manifest(root: Path, moves: dict[str, str] | None = None) -> None:
    """splits.csv for every image under root: its top folder is its split unless ``moves`` says otherwise."""
    rows = ["path,split"]
    order = ("train", "val", "test")  # a manifest's split order is the order splits first appear
    for path in sorted((p.relative_to(root).as_posix() for p in root.rglob("*.jpg")),
                       key=lambda p: (order.index(p.split("/")[0]), p)):
        rows.append(f"{path},{(moves or {}).get(path, path.split('/')[0])}")
    (root / "splits.csv").write_text("\n".join(rows) + "\n")


@pytest.fixture
def trainval(tmp_path: Path) -> Path:
    """train/val/test by manifest; val/copy.jpg is a byte copy of train/img_0.jpg (a train~val leak)."""
    for i in range(4):
        save(photo(i), tmp_path / f"train/img_{i}.jpg", quality=90)
    for i in range(2):
        save(photo(100 + i), tmp_path / f"val/own_{i}.jpg", quality=90)
        save(photo(200 + i), tmp_path / f"test/own_{i}.jpg", quality=90)
    shutil.copyfile(tmp_path / "train/img_0.jpg", tmp_path / "val/copy.jpg")
    _manifest(tmp_path)
    write_policy(tmp_path, MANIFEST_POLICY)
    return tmp_path


def _check(root: Path):
    return check(root / "leakcheck.yaml", use_cache=False)


def _cli(root: Path, *args: str) -> int:
    return main([*args, "--policy", str(root / "leakcheck.yaml"), "--no-cache"])


def _copy_finding(report):
    return next(f for f in report.findings if f.kind == "identical-file")


def _entries(root: Path) -> dict:
    return yaml.safe_load((root / BASELINE).read_text())["findings"]


# --------------------------------------------------------------------------
# A verdict holds for its splits


@pytest.mark.slow
@pytest.mark.parametrize("how", ["judge duplicate", "judge distinct", "baseline"])
def test_verdict_does_not_follow_a_copy_moved_into_test(trainval: Path, how: str) -> None:
    """A train~val copy accepted (judged either way, or recorded by `baseline`) fails again
    once the manifest alone moves the copy into test: same bytes, same id, other splits."""
    before = _copy_finding(_check(trainval))
    assert before.split_pair == "train~val"
    if how == "baseline":
        assert _cli(trainval, "baseline") == EXIT_CLEAN
    else:
        verdict = how.split()[1]
        assert _cli(trainval, "judge", before.id, verdict, "--reason", "accepted for val") == EXIT_CLEAN
    assert _check(trainval).exit_code == EXIT_CLEAN
    assert _entries(trainval)[before.id]["splits"] == ["train", "val"]

    _manifest(trainval, {"val/copy.jpg": "test"})
    after = _check(trainval)
    moved = _copy_finding(after)
    assert (moved.id, moved.split_pair, moved.status) == (before.id, "train~test", "new")
    assert after.exit_code == EXIT_LEAKS
    assert after.stale == ()  # the entry still names content that is here: not stale
    assert _cli(trainval, "check") == EXIT_LEAKS


@pytest.mark.slow
def test_verdict_holds_when_a_cluster_shrinks_into_fewer_splits(trainval: Path) -> None:
    """Moving the val copy into train leaves a within-train duplicate: no split the verdict
    did not cover, so it stays accepted."""
    fid = _copy_finding(_check(trainval)).id
    _cli(trainval, "judge", fid, "duplicate", "--reason", "accepted")
    _manifest(trainval, {"val/copy.jpg": "train"})
    report = _check(trainval)
    assert [(f.id, f.split_pair, f.status) for f in report.findings] == [(fid, "train", "known")]
    assert report.exit_code == EXIT_CLEAN


@pytest.mark.slow
def test_baseline_re_recording_a_moved_finding_says_which_verdict_it_dropped(
    trainval: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`leakcheck baseline` after a move accepts the finding as it stands now, for its new
    splits only, and prints the verdict it no longer carries."""
    fid = _copy_finding(_check(trainval)).id
    _cli(trainval, "judge", fid, "distinct", "--reason", "different shot")
    capsys.readouterr()
    _manifest(trainval, {"val/copy.jpg": "test"})
    assert _cli(trainval, "baseline") == EXIT_CLEAN
    out = capsys.readouterr().out
    assert fid in out and "dropped its verdict distinct ('different shot') for train~val" in out
    entry = _entries(trainval)[fid]
    assert entry["splits"] == ["train", "test"] and "verdict" not in entry


V1_ENTRY = """\
version: 1
findings:
  {id}:
    kind: identical-file
    verdict: duplicate
    reason: accepted for val
    paths:
    - train/img_0.jpg
    - val/copy.jpg
    digests:
{digests}
"""


@pytest.mark.slow
def test_version_1_entry_holds_for_no_split_until_recorded(trainval: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An entry written before splits were recorded is read, but accepts nothing (a manifest
    edit could have moved its copy anywhere) until `leakcheck baseline` stamps it; then it
    keeps its verdict and holds for the splits it covers, and no others."""
    found = _copy_finding(_check(trainval))
    digests = "".join(f"    - {m.digest}\n" for m in found.members)
    (trainval / BASELINE).write_text(V1_ENTRY.format(id=found.id, digests=digests))

    report = _check(trainval)
    assert _copy_finding(report).status == "new" and report.exit_code == EXIT_LEAKS
    assert report.stale == ()
    assert any("record no splits" in w and found.id in w and "leakcheck baseline" in w for w in report.warnings)

    assert _cli(trainval, "baseline") == EXIT_CLEAN
    assert "1 given their splits" in capsys.readouterr().out
    text = (trainval / BASELINE).read_text()
    assert "version: 2" in text
    entry = _entries(trainval)[found.id]
    assert (entry["verdict"], entry["reason"], entry["splits"]) == ("duplicate", "accepted for val", ["train", "val"])
    assert _check(trainval).exit_code == EXIT_CLEAN

    _manifest(trainval, {"val/copy.jpg": "test"})
    assert _check(trainval).exit_code == EXIT_LEAKS


@pytest.mark.parametrize("splits", ["'train'", "[train, '']", "[1]"])
def test_malformed_splits_exit_2(trainval: Path, capsys: pytest.CaptureFixture[str], splits: str) -> None:
    """`splits` must be a list of split names; anything else names the file, the line and the key."""
    (trainval / BASELINE).write_text(f"version: 2\nfindings:\n  0123456789ab:\n    splits: {splits}\n")
    assert _cli(trainval, "check") == EXIT_USAGE
    err = capsys.readouterr().err
    assert f"{BASELINE}:4: `findings.0123456789ab.splits`: expected a list of split names" in err


# --------------------------------------------------------------------------
# judge: an unambiguous id, and no silent overwrite


@pytest.mark.parametrize("prefix", ["", " ", "0", "abcde", "zzzzzz", "0123456789abc"])
def test_judge_rejects_short_and_malformed_ids(
    trainval: Path, capsys: pytest.CaptureFixture[str], prefix: str
) -> None:
    """An empty, short (< 6 digits), non-hex or over-long id is a usage error, before any check,
    and no baseline is written."""
    assert _cli(trainval, "judge", prefix, "distinct", "--reason", "x") == EXIT_USAGE
    err = capsys.readouterr().err
    assert "at least 6" in err or "is not a finding id" in err
    assert not (trainval / BASELINE).exists()
    assert not (trainval / ".leakcheck").exists()


def _entry_yaml(fid: str, digest: str) -> str:
    return f"  {fid}:\n    kind: identical-file\n    splits: [train, val]\n    digests:\n    - {digest}\n"


@pytest.mark.slow
def test_ambiguous_prefix_lists_recorded_and_current_candidates(
    trainval: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A prefix shared by two recorded entries, or by a recorded entry and a finding of the
    current check, lists every candidate and exits 2; the file is left as it was."""
    found = _copy_finding(_check(trainval))
    twin = found.id[:6] + ("000000" if not found.id.endswith("000000") else "111111")
    other = "abcdef000001" if not found.id.startswith("abcdef") else "fedcba000001"
    text = "version: 2\nfindings:\n" + _entry_yaml(twin, "a" * 64) + _entry_yaml(other, "b" * 64)
    text += _entry_yaml(other[:-1] + "2", "c" * 64)
    (trainval / BASELINE).write_text(text)
    for prefix, ids in ((found.id[:6], [found.id, twin]), (other[:6], [other, other[:-1] + "2"])):
        assert _cli(trainval, "judge", prefix, "duplicate", "--reason", "x") == EXIT_USAGE
        err = capsys.readouterr().err
        assert "ambiguous" in err and all(i in err for i in ids), err
    assert (trainval / BASELINE).read_text() == text
    # The full id is unambiguous.
    assert _cli(trainval, "judge", found.id, "duplicate", "--reason", "x") == EXIT_CLEAN


@pytest.mark.slow
def test_judging_a_judged_finding_needs_replace_and_says_what_it_replaced(
    trainval: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second verdict or reason is refused (exit 2, file unchanged, the old verdict named);
    `--replace` replaces it and prints what it replaced; repeating a verdict is a no-op."""
    fid = _copy_finding(_check(trainval)).id
    assert _cli(trainval, "judge", fid[:6], "duplicate", "--reason", "accepted until v2") == EXIT_CLEAN
    first = (trainval / BASELINE).read_bytes()
    capsys.readouterr()
    assert _cli(trainval, "judge", fid[:8], "distinct", "--reason", "looks different") == EXIT_USAGE
    err = capsys.readouterr().err
    assert "already judged duplicate ('accepted until v2') for train~val" in err and "--replace" in err
    assert (trainval / BASELINE).read_bytes() == first
    assert _cli(trainval, "judge", fid, "duplicate", "--reason", "accepted until v2") == EXIT_CLEAN
    assert (trainval / BASELINE).read_bytes() == first
    assert "replaced" not in capsys.readouterr().out
    assert _cli(trainval, "judge", fid, "distinct", "--reason", "looks different", "--replace") == EXIT_CLEAN
    out = capsys.readouterr().out
    assert f"{fid}: replaced duplicate ('accepted until v2') for train~val" in out
    entry = _entries(trainval)[fid]
    assert (entry["verdict"], entry["reason"]) == ("distinct", "looks different")


@pytest.mark.slow
def test_judging_a_moved_finding_again_scopes_the_new_verdict(trainval: Path, capsys) -> None:
    """After the copy moves to test, judging it replaces the train~val verdict only with
    `--replace`, and the new verdict holds for train~test."""
    fid = _copy_finding(_check(trainval)).id
    _cli(trainval, "judge", fid, "duplicate", "--reason", "val is ours")
    _manifest(trainval, {"val/copy.jpg": "test"})
    assert _cli(trainval, "judge", fid, "duplicate", "--reason", "val is ours") == EXIT_USAGE
    assert "for train~val" in capsys.readouterr().err
    assert _cli(trainval, "judge", fid, "duplicate", "--reason", "test too", "--replace") == EXIT_CLEAN
    assert _entries(trainval)[fid]["splits"] == ["train", "test"]
    assert _check(trainval).exit_code == EXIT_CLEAN


# --------------------------------------------------------------------------
# Broken files are never copies


@pytest.mark.parametrize("content", [b"", b"\xff\xd8\xff\xe0 truncated jpeg"], ids=["zero-byte", "corrupt"])
def test_equal_unreadable_files_are_unreadable_not_copies(tmp_path: Path, content: bytes) -> None:
    """Two (or three) equal broken files across splits are one unreadable-image finding that
    lists them all, never an identical-file leak; ids in the report stay unique."""
    for i in range(3):
        save(photo(i), tmp_path / f"train/img_{i}.jpg", quality=90)
    save(photo(100), tmp_path / "test/own.jpg", quality=90)
    for name in ("train/empty.jpg", "test/empty.jpg", "test/empty_2.jpg"):
        (tmp_path / name).write_bytes(content)
    write_policy(tmp_path, "version: 1\nsplits:\n  train: [train/**]\n  test: [test/**]\n"
                           "files: {unreadable: warning}\n")
    report = _check(tmp_path)
    assert [f.kind for f in report.findings] == ["unreadable-image"]
    (found,) = report.findings
    assert [m.path for m in found.members] == ["train/empty.jpg", "test/empty.jpg", "test/empty_2.jpg"]
    assert found.severity == "warning" and report.exit_code == EXIT_CLEAN
    # One broken file alone keeps the id it always had.
    (tmp_path / "test/empty.jpg").unlink()
    (tmp_path / "test/empty_2.jpg").unlink()
    (single,) = _check(tmp_path).findings
    assert [m.path for m in single.members] == ["train/empty.jpg"]
    assert single.id == finding_id("unreadable-image", [hashlib.sha256(content).hexdigest()]) != found.id
