"""The baseline: judged findings stop failing the check, and only those."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from pytest_leakcheck import EXIT_CLEAN, EXIT_LEAKS, EXIT_USAGE, check
from pytest_leakcheck.cli import main
from pytest_leakcheck.render import render
from pytest_leakcheck.testing import jpeg_quality, photo, save

from ..conftest import write_policy

BASELINE = ".leakcheck-baseline.yaml"


@pytest.fixture
def leaks(tmp_path: Path) -> Path:
    """Six train images, two distinct test images, a byte copy and a JPEG-q40 copy in test."""
    for i in range(6):
        save(photo(i), tmp_path / f"train/img_{i}.jpg", quality=90)
    for i in range(2):
        save(photo(100 + i), tmp_path / f"test/distinct_{i}.jpg", quality=90)
    shutil.copyfile(tmp_path / "train/img_0.jpg", tmp_path / "test/copy.jpg")
    save(jpeg_quality(photo(1), 40), tmp_path / "test/q40.jpg", quality=90)
    write_policy(tmp_path)
    return tmp_path


def _check(root: Path):
    return check(root / "leakcheck.yaml", use_cache=False)


def _cli(root: Path, *args: str) -> int:
    return main([*args, "--policy", str(root / "leakcheck.yaml"), "--no-cache"])


def _entries(root: Path, name: str = BASELINE) -> dict:
    return yaml.safe_load((root / name).read_text())["findings"]


def _by_path(report, path: str):
    return next(f for f in report.findings if any(m.path == path for m in f.members))


@pytest.mark.slow
def test_baselined_finding_no_longer_fails(leaks: Path) -> None:
    """After `leakcheck baseline`, the same findings are reported as known and exit 0."""
    before = _check(leaks)
    assert before.exit_code == EXIT_LEAKS and len(before.errors) == 2
    assert _cli(leaks, "baseline") == EXIT_CLEAN
    after = _check(leaks)
    assert [f.id for f in after.findings] == [f.id for f in before.findings]
    assert {f.status for f in after.findings} == {"known"}
    assert after.exit_code == EXIT_CLEAN


def test_renamed_leaking_file_stays_baselined(leaks: Path) -> None:
    """Moving a leaking copy to another folder and name keeps its finding known."""
    _cli(leaks, "baseline")
    (leaks / "test/sub").mkdir()
    (leaks / "test/q40.jpg").rename(leaks / "test/sub/renamed.jpg")
    report = _check(leaks)
    assert _by_path(report, "test/sub/renamed.jpg").status == "known"
    assert report.exit_code == EXIT_CLEAN
    assert report.stale == ()


@pytest.mark.slow
def test_new_leak_still_fails(leaks: Path) -> None:
    """A leak added after baselining is new and fails; the recorded ones stay known."""
    _cli(leaks, "baseline")
    save(photo(3), leaks / "test/new_leak.png")
    report = _check(leaks)
    assert report.exit_code == EXIT_LEAKS
    assert _by_path(report, "test/new_leak.png").status == "new"
    assert sorted(f.status for f in report.findings) == ["known", "known", "new"]


@pytest.mark.slow
def test_copy_joining_a_recorded_cluster_is_new(leaks: Path) -> None:
    """One more byte copy of a baselined file is a new leak, even with equal digests."""
    _cli(leaks, "baseline")
    shutil.copyfile(leaks / "train/img_0.jpg", leaks / "test/copy2.jpg")
    assert _by_path(_check(leaks), "test/copy2.jpg").status == "new"


def test_cluster_losing_a_copy_keeps_its_verdict(leaks: Path) -> None:
    """A recorded cluster of three that loses one copy is still covered by its entry."""
    shutil.copyfile(leaks / "train/img_0.jpg", leaks / "test/copy2.jpg")
    _cli(leaks, "baseline")
    (leaks / "test/copy2.jpg").unlink()
    report = _check(leaks)
    assert _by_path(report, "test/copy.jpg").status == "known"
    assert report.exit_code == EXIT_CLEAN


@pytest.mark.slow
def test_distinct_verdict_survives_reruns(leaks: Path, capsys) -> None:
    """A finding judged distinct is dropped from every later check and kept by `baseline`."""
    fid = _by_path(_check(leaks), "test/q40.jpg").id
    assert _cli(leaks, "judge", fid[:6], "distinct", "--reason", "different shot") == EXIT_CLEAN
    for _ in range(2):
        assert _cli(leaks, "baseline") == EXIT_CLEAN
        report = _check(leaks)
        assert fid not in {f.id for f in report.findings}
        assert report.stats["distinct"] == 1
        entry = _entries(leaks)[fid]
        assert (entry["verdict"], entry["reason"]) == ("distinct", "different shot")
    # The other finding was recorded by `baseline` without a verdict, and is known.
    assert {f.status for f in report.findings} == {"known"}
    assert fid in capsys.readouterr().out


@pytest.mark.slow
def test_judge_duplicate_reports_known(leaks: Path) -> None:
    """`judge duplicate` on an unrecorded finding records it, and it no longer fails."""
    fid = _by_path(_check(leaks), "test/copy.jpg").id
    assert _cli(leaks, "judge", fid, "duplicate", "--reason", "accepted until v2") == EXIT_CLEAN
    report = _check(leaks)
    assert _by_path(report, "test/copy.jpg").status == "known"
    assert _by_path(report, "test/q40.jpg").status == "new"
    assert report.exit_code == EXIT_LEAKS


def test_judge_unknown_id_is_a_usage_error(leaks: Path, capsys) -> None:
    """An id that matches nothing exits 2 and leaves no baseline behind."""
    assert _cli(leaks, "judge", "ffffffffffff", "distinct", "--reason", "x") == EXIT_USAGE
    assert "ffffffffffff" in capsys.readouterr().err
    assert not (leaks / BASELINE).exists()


@pytest.mark.slow
def test_prune_removes_only_stale_entries(leaks: Path, capsys) -> None:
    """Stale entries are reported, kept by `baseline`, and dropped by `baseline --prune` alone."""
    fid = _by_path(_check(leaks), "test/q40.jpg").id
    _cli(leaks, "judge", fid, "distinct", "--reason", "different shot")
    _cli(leaks, "baseline")
    stale = _by_path(_check(leaks), "test/copy.jpg").id
    (leaks / "test/copy.jpg").unlink()
    report = _check(leaks)
    assert report.stale == (stale,)
    assert any(stale in w and "--prune" in w for w in report.warnings)
    assert json.loads(render(report, "json"))["stale"] == [stale]
    _cli(leaks, "baseline")
    assert set(_entries(leaks)) == {fid, stale}
    assert _cli(leaks, "baseline", "--prune") == EXIT_CLEAN
    assert set(_entries(leaks)) == {fid}
    assert _check(leaks).stale == ()
    assert "1 stale pruned" in capsys.readouterr().out


def test_focused_check_reports_nothing_stale(leaks: Path) -> None:
    """A focused check sees few findings, so it never calls the others stale."""
    _cli(leaks, "baseline")
    report = check(leaks / "leakcheck.yaml", use_cache=False, focus=["test/q40.jpg"])
    assert report.stale == ()
    assert [f.status for f in report.findings] == ["known"]


@pytest.mark.slow
def test_two_runs_write_identical_bytes(leaks: Path) -> None:
    """The baseline is sorted and has no timestamps: re-running changes no byte."""
    fid = _by_path(_check(leaks), "test/q40.jpg").id
    _cli(leaks, "judge", fid, "distinct", "--reason", "ünïcode: reason # not a comment")
    _cli(leaks, "baseline")
    first = (leaks / BASELINE).read_bytes()
    _cli(leaks, "baseline")
    assert (leaks / BASELINE).read_bytes() == first
    ids = list(_entries(leaks))
    assert ids == sorted(ids) and len(ids) == 2


def test_policy_sets_the_baseline_location(leaks: Path) -> None:
    """`baseline:` in the policy moves the file; the default place stays empty."""
    policy = (leaks / "leakcheck.yaml").read_text() + "baseline: review/judged.yaml\n"
    write_policy(leaks, policy)
    _cli(leaks, "baseline")
    assert len(_entries(leaks, "review/judged.yaml")) == 2
    assert not (leaks / BASELINE).exists()
    assert _check(leaks).exit_code == EXIT_CLEAN


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("version: 1\nfindings:\n  abc: [unclosed\n", 4, "invalid YAML"),
        ("version: 1\nfindings:\n<<<<<<< HEAD\n  0123456789ab: {}\n=======\n", 3, "merge conflict"),
        ("# comment\nversion: 3\nfindings: {}\n", 2, "newer than this leakcheck"),
        ("version: 1\nfindings:\n  0123456789ab:\n    verdict: maybe\n", 4, "invalid verdict"),
        ("version: 1\nfindings:\n  0123456789ab:\n    verdcit: distinct\n", 4, "unknown key"),
        ("version: 1\nfindings:\n  not-an-id: {}\n", 3, "not 12 hex digits"),
    ],
)
def test_bad_baseline_exits_2_naming_the_line(leaks: Path, capsys, text: str, line: int, words: str) -> None:
    """A broken or newer baseline stops every command with file:line and is never rewritten."""
    (leaks / BASELINE).write_text(text)
    for args in (("check",), ("baseline",), ("judge", "0123456789ab", "distinct", "--reason", "x")):
        assert _cli(leaks, *args) == EXIT_USAGE
        err = capsys.readouterr().err
        assert f"{BASELINE}:{line}: " in err and words in err
        assert "Traceback" not in err
    assert (leaks / BASELINE).read_text() == text
