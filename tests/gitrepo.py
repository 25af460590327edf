"""A throwaway git repository holding a small generated dataset, for pull request tests."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from pytest_leakcheck.testing import jpeg_quality, photo, save

from .conftest import write_policy

_IDENTITY = ["-c", "user.name=Test", "-c", "user.email=test@example.invalid", "-c", "commit.gpgsign=false"]


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", *_IDENTITY, *args], cwd=repo, check=True, capture_output=True, text=True)
    return out.stdout.strip()


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def dataset_repo(root: Path, *, base_leak: bool = False) -> str:
    """6 train and 2 test images on branch ``main`` (optionally test/old_leak.jpg, a byte
    copy of train/img_00.jpg), then branch ``pr`` checked out.  Returns main's SHA."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    for i in range(6):
        save(photo(i, (96, 72)), root / f"train/img_{i:02d}.jpg", quality=90)
    for i in range(2):
        save(photo(200 + i, (96, 72)), root / f"test/img_{i:02d}.jpg", quality=90)
    if base_leak:
        shutil.copyfile(root / "train/img_00.jpg", root / "test/old_leak.jpg")
    write_policy(root)
    (root / ".gitignore").write_text(".leakcheck/\n")
    sha = commit_all(root, "base dataset")
    git(root, "checkout", "-q", "-b", "pr")
    return sha


def add_leak(root: Path, name: str = "test/new_leak.jpg") -> Path:
    """A re-encoded copy of train/img_01.jpg in test."""
    return save(jpeg_quality(photo(1, (96, 72)), 40), root / name, quality=90)


def add_clean(root: Path, name: str = "test/clean.jpg") -> Path:
    return save(photo(777, (96, 72)), root / name, quality=90)
