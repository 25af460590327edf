"""Pull request mode: an edit to a group source is a change to the policy (hardening, class 11)."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_leakcheck import EXIT_LEAKS
from pytest_leakcheck.cli import main
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.ci.pullrequest import changed_since

from ..conftest import POLICY, write_policy
from ..gitrepo import commit_all, dataset_repo, git


def test_group_csv_edit_alone_fails_the_pull_request(tmp_path: Path) -> None:
    """A branch that only edits the group CSV, putting a train and a test image in one group,
    brings a new group-split error: `--changed-since` fails as a full check would, instead
    of calling the finding `existing` because no image changed."""
    repo = tmp_path / "repo"
    dataset_repo(repo)
    git(repo, "checkout", "-q", "main")
    write_policy(repo, POLICY + "ungrouped: own-group\ngroups:\n  - csv: groups.csv\n")
    (repo / "groups.csv").write_text("path,group\n")
    commit_all(repo, "group rules")
    git(repo, "checkout", "-q", "-B", "pr")
    (repo / "groups.csv").write_text("path,group\ntrain/img_01.jpg,car7\ntest/img_00.jpg,car7\n")
    commit_all(repo, "one car in two splits")

    assert changed_since(load(repo / "leakcheck.yaml"), "main").policy_changed
    out = tmp_path / "report.json"
    code = main(["check", "--policy", str(repo / "leakcheck.yaml"), "--changed-since", "main",
                 "--format", "json", "-o", str(out), "-j", "1"])
    report = json.loads(out.read_text())
    assert code == EXIT_LEAKS
    assert [(f["kind"], f["status"]) for f in report["findings"]] == [("group-split", "new")]
