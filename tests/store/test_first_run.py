"""The first run leaves the repository clean (issue 27): the store's folder ignores itself."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_leakcheck.files.atomic import GITIGNORE, own_folder
from pytest_leakcheck.testing import photo, save

from ..gitrepo import commit_all, git


def _leakcheck(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_leakcheck", *args], cwd=cwd,
                          capture_output=True, text=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_init_and_check_on_an_imagefolder_tree_leave_only_the_policy(tmp_path: Path) -> None:
    """A new user's first two commands: `git status` then shows leakcheck.yaml and nothing else."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    for split, seeds in (("train", range(6)), ("val", range(20, 23)), ("test", range(40, 43))):
        for n, seed in enumerate(seeds):
            save(photo(seed, (64, 48)), repo / f"data/{split}/{'cat' if n % 2 else 'dog'}/{n}.jpg", quality=90)
    shutil.copyfile(repo / "data/train/dog/0.jpg", repo / "data/test/dog/leak.jpg")  # one leak to find
    commit_all(repo, "dataset")

    init = _leakcheck("init", "data", cwd=repo)
    assert init.returncode == 0, init.stdout + init.stderr
    assert "ignores itself in git" in init.stdout
    check = _leakcheck("check", "--policy", "data/leakcheck.yaml", cwd=repo)
    assert check.returncode == 1, check.stdout + check.stderr  # the leak is found...
    assert (repo / "data/.leakcheck/cache.sqlite").is_file()  # ...the store is written...
    status = git(repo, "status", "--porcelain", "--untracked-files=all")
    assert status.splitlines() == ["?? data/leakcheck.yaml"]  # ...and git sees only the policy
    assert (repo / "data/.leakcheck/.gitignore").read_text() == GITIGNORE


def test_an_existing_folder_is_never_given_a_gitignore(tmp_path: Path) -> None:
    """`cache: cache.sqlite` puts the store in the dataset folder: that folder must stay visible to git."""
    assert own_folder(tmp_path) is False
    assert not (tmp_path / ".gitignore").exists()
    assert own_folder(tmp_path / "a/b") is True
    assert (tmp_path / "a/b/.gitignore").read_text() == GITIGNORE
    assert not (tmp_path / "a/.gitignore").exists()
