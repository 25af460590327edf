"""`leakcheck split --apply` all or nothing (issue 22, class 5): the plan is validated whole
before the first move, the moves are journaled, and a failure puts every file back."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_leakcheck import EXIT_CLEAN, EXIT_USAGE
from pytest_leakcheck.testing import photo, save

from ..conftest import write_policy
from ..gitrepo import commit_all, git

POLICY = "version: 1\nsplits: {train: [data/train/**], test: [data/test/**]}\n"


def _tree(root: Path, copies: dict[str, str], policy: str = POLICY) -> Path:
    """Distinct photos in train and test, plus test files that are byte copies of train
    files (``copies``: test path -> train path), which the plan moves into train."""
    for k in range(3):
        save(photo(k, (64, 48)), root / f"data/train/dog/t{k}.jpg", quality=90)
        save(photo(50 + k, (64, 48)), root / f"data/test/dog/e{k}.jpg", quality=90)
    for n, (test, train) in enumerate(copies.items()):
        if not (root / train).exists():
            save(photo(100 + n, (64, 48)), root / train, quality=90)
        (root / test).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / train, root / test)
    write_policy(root, policy)
    return root


def _files(root: Path) -> dict[str, str]:
    """Every file under ``root`` (links as their target), but leakcheck's own folder."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(".leakcheck") or rel.startswith(".git/"):
            continue
        if path.is_symlink():
            out[rel] = "-> " + os.readlink(path)
        elif path.is_file():
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _apply(run_cli, root: Path, *args: str) -> tuple[int, str, str]:
    return run_cli("split", "--policy", str(root / "leakcheck.yaml"), "-j", "1", "--no-cache", "--apply", *args)


def _refused(run_cli, root: Path, *words: str) -> None:
    before = _files(root)
    code, out, err = _apply(run_cli, root)
    assert code == EXIT_USAGE, (out, err)
    assert "nothing was moved" in err
    for word in words:
        assert word in err
    assert _files(root) == before


def test_targets_equal_but_for_case_are_refused(tmp_path: Path, run_cli) -> None:
    """IMG.jpg and img.jpg into one folder: one file on a case-insensitive file system."""
    root = _tree(tmp_path / "ds", {"data/test/cat/IMG.jpg": "data/train/dog/a.jpg",
                                   "data/test/cat/img.jpg": "data/train/dog/b.jpg"})
    _refused(run_cli, root, "data/train/cat/IMG.jpg", "data/train/cat/img.jpg", "case-insensitive")


def test_target_equal_to_an_existing_file_but_for_case_is_refused(tmp_path: Path, run_cli) -> None:
    root = _tree(tmp_path / "ds", {"data/test/dog/copy.jpg": "data/train/dog/a.jpg"})
    save(photo(300, (64, 48)), root / "data/train/dog/COPY.jpg", quality=90)
    _refused(run_cli, root, "data/train/dog/copy.jpg", "would overwrite data/train/dog/COPY.jpg")


def test_target_folder_that_is_a_link_out_of_the_repository_is_refused(tmp_path: Path, run_cli) -> None:
    root = _tree(tmp_path / "ds", {"data/test/cat/copy.jpg": "data/train/dog/a.jpg"})
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "data/train/cat").symlink_to(outside)
    _refused(run_cli, root, "data/train/cat is a symbolic link")
    assert list(outside.iterdir()) == []


def test_target_folder_that_is_a_link_inside_the_repository_is_refused(tmp_path: Path, run_cli) -> None:
    root = _tree(tmp_path / "ds", {"data/test/cat/copy.jpg": "data/train/dog/a.jpg"})
    (root / "elsewhere").mkdir()
    (root / "data/train/cat").symlink_to(root / "elsewhere")
    _refused(run_cli, root, "data/train/cat is a symbolic link")


def test_parent_that_is_a_file_refuses_the_whole_plan(tmp_path: Path, run_cli) -> None:
    """The first move could go, the second cannot: nothing moves (main moved one, then exit 3)."""
    root = _tree(tmp_path / "ds", {"data/test/cat/copy.jpg": "data/train/dog/a.jpg",
                                   "data/test/zebra/copy.jpg": "data/train/dog/b.jpg"})
    (root / "data/train/zebra").write_text("a file where a folder would go\n")
    _refused(run_cli, root, "data/train/zebra is a file")


def test_dot_slash_globs_move_into_the_split_folder(tmp_path: Path, run_cli) -> None:
    policy = "version: 1\nsplits: {train: ['./data/train/**'], test: ['./data/test/**']}\n"
    root = _tree(tmp_path / "ds", {"data/test/dog/copy.jpg": "data/train/dog/a.jpg"}, policy)
    code, out, err = _apply(run_cli, root)
    assert code == EXIT_CLEAN, err
    assert "moved 1 files" in out
    assert (root / "data/train/dog/copy.jpg").is_file() and not (root / "data/test/dog/copy.jpg").exists()
    assert sorted(p.name for p in root.iterdir() if p.name != ".leakcheck") == ["data", "leakcheck.yaml"]


def test_split_glob_matching_nothing_is_refused_as_check_refuses_it(tmp_path: Path, run_cli) -> None:
    policy = POLICY.replace("test: [data/test/**]", "test: [data/tset/**]")
    root = _tree(tmp_path / "ds", {"data/test/dog/copy.jpg": "data/train/dog/a.jpg"}, policy)
    before = _files(root)
    for args in ((), ("--apply",)):
        code, _, err = run_cli("split", "--policy", str(root / "leakcheck.yaml"), "--no-cache", *args)
        assert code == EXIT_USAGE
        assert "`splits.test`" in err and "has no images" in err
    assert run_cli("check", "--policy", str(root / "leakcheck.yaml"), "--no-cache")[0] == EXIT_USAGE
    assert _files(root) == before


def test_git_failing_after_the_moves_puts_every_file_back(tmp_path: Path, run_cli) -> None:
    """A real failure mid-plan: git's index is locked by another command.  The untracked
    file moved first goes back too (main left it moved and exited 3)."""
    root = _tree(tmp_path / "ds", {"data/test/cat/copy.jpg": "data/train/dog/a.jpg",
                                   "data/test/zebra/copy.jpg": "data/train/dog/b.jpg"})
    git(root, "init", "-q", "-b", "main")
    (root / ".gitignore").write_text(".leakcheck/\ndata/test/cat/\n")  # the first move is untracked
    commit_all(root, "dataset")
    index = (root / ".git/index").read_bytes()
    (root / ".git/index.lock").write_text("")
    before = _files(root)
    code, _, err = _apply(run_cli, root)
    assert code == EXIT_USAGE
    assert "git could not record the moves" in err and "every file was put back" in err
    assert _files(root) == before
    assert (root / ".git/index").read_bytes() == index
    assert not (root / "data/train/cat").exists()  # the folder it made is gone again
    os.unlink(root / ".git/index.lock")
    code, out, _ = _apply(run_cli, root)
    assert code == EXIT_CLEAN and "moved 2 files (1 with git mv)" in out
    assert "R  data/test/zebra/copy.jpg -> data/train/zebra/copy.jpg" in git(root, "status", "--porcelain")


@pytest.fixture
def tiny_fs(tmp_path: Path):
    """A tmpfs of its own (root only), so that a real file system can run out of inodes."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root to mount a tmpfs")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m,nr_inodes=200", "tmpfs", str(mnt)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_file_system_failing_mid_plan_puts_every_file_back(tiny_fs: Path, run_cli) -> None:
    """The file system runs out of inodes after the first folder is made: every file goes back."""
    root = _tree(tiny_fs / "ds", {"data/test/cat/copy.jpg": "data/train/dog/a.jpg",
                                  "data/test/zebra/copy.jpg": "data/train/dog/b.jpg"})
    (root / ".leakcheck").mkdir()
    filler = tiny_fs / "filler"
    filler.mkdir()
    n = 0
    # Leave three inodes: the journal, the first folder the plan makes, and one too few for the second.
    while os.statvfs(tiny_fs).f_ffree > 2:
        (filler / str(n)).touch()
        n += 1
    before = _files(root)
    code, _, err = _apply(run_cli, root)
    assert code == EXIT_USAGE, err
    assert "every file moved was put back" in err and "data/train/zebra" in err
    assert _files(root) == before
    assert not (root / "data/train/cat").exists()
    assert not (root / ".leakcheck/split-apply.journal").exists()


@pytest.mark.slow
def test_apply_killed_outright_is_rolled_back_by_the_journal(tmp_path: Path) -> None:
    """SIGKILL at a random moment of a long apply: `split --rollback` puts every file back."""
    root = tmp_path / "ds"
    copies = {f"data/test/c{k:03d}/copy.jpg": f"data/train/dog/x{k:03d}.jpg" for k in range(150)}
    _tree(root, copies)
    before = _files(root)
    journal = root / ".leakcheck/split-apply.journal"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    argv = [sys.executable, "-m", "pytest_leakcheck", "split", "--policy", str(root / "leakcheck.yaml"), "-j", "1"]
    subprocess.run(argv, env=env, check=True, capture_output=True)  # warm the store: the apply is what dies
    child = subprocess.Popen([*argv, "--apply"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not journal.exists() and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.001)
    time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait()
    if not journal.exists():
        pytest.skip("the apply finished before the kill landed")
    # Every file away from where it was: the copies, and whole train components moved into test to
    # keep its share (no split falls below half of it).
    moved = sum(1 for rel in before if not (root / rel).exists())
    refused = subprocess.run([*argv, "--apply"], env=env, capture_output=True, text=True)
    assert refused.returncode == EXIT_USAGE and "split --rollback" in refused.stderr
    done = subprocess.run([*argv, "--rollback"], env=env, capture_output=True, text=True)
    assert done.returncode == EXIT_CLEAN, done.stderr
    assert f"put {moved} files back" in done.stdout
    assert _files(root) == before
    assert not journal.exists()
