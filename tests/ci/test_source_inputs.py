"""What a split source reads, and what a link points at, are inputs of the check (issue 34,
classes 4, 5 and 11): a pull request or a commit that only edits an image list, or only
rewrites a link's target, is checked as a full check would be; a NUL byte in data.yaml or
a list is exit 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_leakcheck import EXIT_CLEAN, EXIT_LEAKS, EXIT_USAGE
from pytest_leakcheck.ci.hook import policy_inputs
from pytest_leakcheck.cli import main
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.testing import photo, save

from ..conftest import write_policy
from ..gitrepo import commit_all, git

SIZE = (96, 72)


def _yolo_repo(repo: Path) -> None:
    """A YOLO dataset on `main` whose images/y.jpg (a copy of images/x.jpg) is in train; branch `pr`."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    for i in range(4):
        save(photo(i, SIZE), repo / f"images/t{i}.jpg", quality=90)
        save(photo(50 + i, SIZE), repo / f"images/v{i}.jpg", quality=90)
    save(photo(9, SIZE), repo / "images/x.jpg", quality=90)
    shutil.copyfile(repo / "images/x.jpg", repo / "images/y.jpg")
    (repo / "lists").mkdir()
    (repo / "lists/train.txt").write_text("".join(f"../images/t{i}.jpg\n" for i in range(4))
                                          + "../images/x.jpg\n../images/y.jpg\n")
    (repo / "lists/val.txt").write_text("".join(f"../images/v{i}.jpg\n" for i in range(4)))
    (repo / "data.yaml").write_text("path: .\ntrain: lists/train.txt\nval: lists/val.txt\n")
    write_policy(repo, "version: 1\nsplits:\n  yolo: data.yaml\n")
    (repo / ".gitignore").write_text(".leakcheck/\n")
    commit_all(repo, "base")
    git(repo, "checkout", "-q", "-b", "pr")


def _move_line(repo: Path) -> None:
    """The whole pull request: one line moves from train.txt to val.txt."""
    train = (repo / "lists/train.txt").read_text().replace("../images/y.jpg\n", "")
    (repo / "lists/train.txt").write_text(train)
    (repo / "lists/val.txt").write_text((repo / "lists/val.txt").read_text() + "../images/y.jpg\n")


def _since(repo: Path, tmp_path: Path) -> tuple[int, list[tuple[str, str]]]:
    out = tmp_path / "report.json"
    code = main(["check", "--policy", str(repo / "leakcheck.yaml"), "--changed-since", "main", "--format", "json",
                 "-o", str(out), "-j", "1"])
    report = json.loads(out.read_text())
    return code, [(f["kind"], f["status"]) for f in report["findings"] if f["severity"] == "error"]


def test_every_file_a_source_reads_is_a_policy_input(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    _yolo_repo(repo)
    inputs = policy_inputs(load(repo / "leakcheck.yaml"))
    assert {p.name for p in inputs} >= {"leakcheck.yaml", "data.yaml", "train.txt", "val.txt"}


def test_moving_one_line_of_a_yolo_list_fails_the_pull_request(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    _yolo_repo(repo)
    _move_line(repo)
    commit_all(repo, "y.jpg to val")
    code, errors = _since(repo, tmp_path)
    assert code == EXIT_LEAKS
    assert ("identical-file", "new") in errors


def test_moving_one_line_of_a_yolo_list_fails_the_hook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    _yolo_repo(repo)
    _move_line(repo)
    git(repo, "add", "-A")
    monkeypatch.chdir(repo)
    assert main(["hook", "--policy", "leakcheck.yaml", "lists/train.txt", "lists/val.txt"]) == EXIT_LEAKS


def _link_repo(repo: Path) -> None:
    """`test/x.png -> ../assets/img.png` on `main`, assets in no split; branch `pr`."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    for i in range(4):
        save(photo(i, SIZE), repo / f"train/t{i}.png")
    save(photo(60, SIZE), repo / "test/e0.png")
    save(photo(61, SIZE), repo / "assets/img.png")
    (repo / "test/x.png").symlink_to("../assets/img.png")
    (repo / "test/more").symlink_to("../assets")  # a link to the folder, too
    write_policy(repo, "version: 1\nsplits: {train: [train/**], test: [test/**]}\n")
    (repo / ".gitignore").write_text(".leakcheck/\n")
    commit_all(repo, "base")
    git(repo, "checkout", "-q", "-b", "pr")


def test_rewriting_a_link_target_fails_the_pull_request_as_check_does(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    _link_repo(repo)
    shutil.copyfile(repo / "train/t1.png", repo / "assets/img.png")  # the whole pull request
    commit_all(repo, "assets/img.png becomes a train image")
    assert main(["check", "--policy", str(repo / "leakcheck.yaml"), "-j", "1", "--no-cache"]) == EXIT_LEAKS
    code, errors = _since(repo, tmp_path)
    assert code == EXIT_LEAKS
    assert ("identical-file", "new") in errors


def test_rewriting_a_link_target_fails_the_hook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    _link_repo(repo)
    monkeypatch.chdir(repo)
    assert main(["check", "--policy", "leakcheck.yaml", "-j", "1"]) == EXIT_CLEAN  # the store is warm
    shutil.copyfile(repo / "train/t1.png", repo / "assets/img.png")
    git(repo, "add", "-A")
    assert main(["hook", "--policy", "leakcheck.yaml", "assets/img.png"]) == EXIT_LEAKS


@pytest.mark.parametrize("where", ["path", "list", "entry"])
def test_a_nul_byte_in_data_yaml_or_a_list_is_exit_2(tmp_path: Path, run_cli, where: str) -> None:
    for i in range(2):
        save(photo(i, SIZE), tmp_path / f"images/train/t{i}.jpg", quality=90)
        save(photo(50 + i, SIZE), tmp_path / f"images/val/v{i}.jpg", quality=90)
    (tmp_path / "val.txt").write_text("images/val/v0.jpg\nimages/val/v\0.jpg\n" if where == "list"
                                      else "images/val/v0.jpg\n")
    base = '"da\\0ta"' if where == "path" else "."
    train = '"images/tr\\0ain"' if where == "entry" else "images/train"
    (tmp_path / "data.yaml").write_text(f"path: {base}\ntrain: {train}\nval: val.txt\n")
    write_policy(tmp_path, "version: 1\nsplits:\n  yolo: data.yaml\n")
    code, _, err = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "-j", "1", "--no-cache")
    assert code == EXIT_USAGE, err
    assert ("NUL" in err or "\\x00" in err) and "Traceback" not in err and "internal error" not in err
