"""`leakcheck check --changed-since`: new findings fail, findings already on the base do not."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_leakcheck import EXIT_CLEAN, EXIT_LEAKS, EXIT_USAGE
from pytest_leakcheck.cli import main
from pytest_leakcheck.pipeline.run import check
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.ci.pullrequest import changed_since
from pytest_leakcheck.store.db import open_store

from ..gitrepo import add_clean, add_leak, commit_all, dataset_repo, git


def _run(repo: Path, *args: str) -> tuple[int, dict]:
    out = repo.parent / "report.json"
    code = main(["check", "--policy", str(repo / "leakcheck.yaml"), "--format", "json",
                 "-o", str(out), "-j", "1", *args])
    return code, json.loads(out.read_text())


def _status(report: dict) -> dict[str, str]:
    """path of each member -> status of its finding."""
    return {m["path"]: f["status"] for f in report["findings"] for m in f["members"]}


def test_branch_adding_a_leak_fails(tmp_path: Path) -> None:
    """A committed re-encoded copy of a training image in test is a new error: exit 1."""
    repo = tmp_path / "repo"
    dataset_repo(repo)
    add_leak(repo)
    commit_all(repo, "add a leak")
    code, report = _run(repo, "--changed-since", "main")
    assert code == EXIT_LEAKS
    assert _status(report) == {"train/img_01.jpg": "new", "test/new_leak.jpg": "new"}
    assert report["stats"]["changed_files"] == 1


def test_branch_adding_a_clean_image_passes(tmp_path: Path) -> None:
    """A distinct new image brings no finding: exit 0."""
    repo = tmp_path / "repo"
    dataset_repo(repo)
    add_clean(repo)
    commit_all(repo, "add a clean image")
    code, report = _run(repo, "--changed-since", "main")
    assert code == EXIT_CLEAN
    assert report["findings"] == []


def test_leak_on_base_is_existing_not_new(tmp_path: Path) -> None:
    """A leak already on main is reported as existing; it fails only with --fail-on all."""
    repo = tmp_path / "repo"
    dataset_repo(repo, base_leak=True)
    add_clean(repo)
    commit_all(repo, "add a clean image")
    code, report = _run(repo, "--changed-since", "main")
    assert code == EXIT_CLEAN
    assert _status(report) == {"train/img_00.jpg": "existing", "test/old_leak.jpg": "existing"}
    code_all, _ = _run(repo, "--changed-since", "main", "--fail-on", "all")
    assert code_all == EXIT_LEAKS


def test_uncommitted_and_untracked_files_count_as_changed(tmp_path: Path) -> None:
    """Before a commit, an untracked leak is already new (the same command works locally)."""
    repo = tmp_path / "repo"
    dataset_repo(repo)
    add_leak(repo, "test/untracked.jpg")
    changes = changed_since(load(repo / "leakcheck.yaml"), "main")
    assert changes.paths == {"test/untracked.jpg"}
    code, _ = _run(repo, "--changed-since", "main")
    assert code == EXIT_LEAKS


def test_paths_are_relative_to_the_policy_root(tmp_path: Path) -> None:
    """A dataset in a sub-folder of the repository gets root-relative changed paths."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    dataset_repo(repo / "data")  # a nested repo would hide the outer one; undo it
    git(repo / "data", "checkout", "-q", "main")
    (repo / "data/.git").rename(tmp_path / "inner.git")
    commit_all(repo, "base")
    git(repo, "checkout", "-q", "-b", "pr")
    add_leak(repo / "data")
    commit_all(repo, "leak")
    changes = changed_since(load(repo / "data/leakcheck.yaml"), "main")
    assert changes.paths == {"test/new_leak.jpg"}


def test_policy_change_makes_every_finding_new(tmp_path: Path) -> None:
    """Editing the policy can move files between splits, so nothing counts as existing."""
    repo = tmp_path / "repo"
    dataset_repo(repo, base_leak=True)
    policy = repo / "leakcheck.yaml"
    policy.write_text(policy.read_text() + "# tweak\n")
    commit_all(repo, "edit policy")
    code, report = _run(repo, "--changed-since", "main")
    assert code == EXIT_LEAKS
    assert set(_status(report).values()) == {"new"}


def test_base_report_searches_only_changed_files(tmp_path: Path) -> None:
    """With a full report of main, existing findings come from it and only changed files are searched."""
    repo = tmp_path / "repo"
    dataset_repo(repo, base_leak=True)
    git(repo, "checkout", "-q", "main")
    base_json = tmp_path / "base.json"
    assert main(["check", "--policy", str(repo / "leakcheck.yaml"), "--format", "json",
                 "-o", str(base_json), "-j", "1"]) == EXIT_LEAKS
    git(repo, "checkout", "-q", "pr")
    add_leak(repo)
    commit_all(repo, "add a leak")
    code, report = _run(repo, "--changed-since", "main", "--base-report", str(base_json))
    assert code == EXIT_LEAKS
    assert report["stats"]["search"] == "focused"
    assert report["stats"]["decoded"] == 1  # the store is warm: only the new image is decoded
    assert _status(report) == {"train/img_00.jpg": "existing", "test/old_leak.jpg": "existing",
                               "train/img_01.jpg": "new", "test/new_leak.jpg": "new"}


def test_base_finding_with_a_deleted_member_is_dropped(tmp_path: Path) -> None:
    """Deleting the leaked copy on the branch removes the existing finding."""
    repo = tmp_path / "repo"
    dataset_repo(repo, base_leak=True)
    git(repo, "checkout", "-q", "main")
    base_json = tmp_path / "base.json"
    main(["check", "--policy", str(repo / "leakcheck.yaml"), "--format", "json", "-o", str(base_json)])
    git(repo, "checkout", "-q", "pr")
    (repo / "test/old_leak.jpg").unlink()
    commit_all(repo, "remove the leak")
    code, report = _run(repo, "--changed-since", "main", "--base-report", str(base_json))
    assert (code, report["findings"]) == (EXIT_CLEAN, [])


@pytest.mark.parametrize("setup, needle", [
    ("no-git", "not inside a git repository"),
    ("unknown-ref", "fetch-depth: 0"),
])
def test_git_problems_are_usage_errors(tmp_path: Path, capsys, setup: str, needle: str) -> None:
    """Outside git, or with a base git does not have, the message names the fix; exit 2."""
    repo = tmp_path / "repo"
    if setup == "no-git":
        repo.mkdir()
        add_clean(repo)
        (repo / "leakcheck.yaml").write_text("version: 1\nsplits: {train: [train/**], test: [test/**]}\n")
        ref = "main"
    else:
        dataset_repo(repo)
        ref = "0123456789abcdef0123456789abcdef01234567"
    code = main(["check", "--policy", str(repo / "leakcheck.yaml"), "--changed-since", ref])
    assert code == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("Error: ") and needle in err


def test_base_report_needs_changed_since(tmp_path: Path, capsys) -> None:
    """--base-report alone is a usage error."""
    repo = tmp_path / "repo"
    dataset_repo(repo)
    assert main(["check", "--policy", str(repo / "leakcheck.yaml"), "--base-report", "x.json"]) == EXIT_USAGE
    assert "--changed-since" in capsys.readouterr().err


def test_restored_store_with_new_mtimes_hashes_but_never_decodes(tmp_path: Path) -> None:
    """After a fresh checkout every mtime differs: files are re-hashed, signatures reused by digest."""
    repo = tmp_path / "repo"
    dataset_repo(repo)
    policy = load(repo / "leakcheck.yaml")
    with open_store(tmp_path / "store.sqlite") as store:
        first = check(policy=policy, store=store, jobs=1)
        for path in (repo / "train").iterdir():
            st = path.stat()
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
        second = check(policy=policy, store=store, jobs=1)
    assert first.stats["decoded"] == 8
    assert second.stats["hashed"] == 6
    assert second.stats["decoded"] == 0
