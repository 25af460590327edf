"""`leakcheck split --apply` all or nothing (issue 22, class 5): the plan is validated whole
before the first move, the moves are journaled, and a failure puts every file back."""

from __future__ import annotations

import hashlib
import os
import select
import shutil
import signal
import subprocess
import sys
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


# The apply runs in a child that stops itself at a known point of its K-th move, says so on a pipe
# and waits there for the test's SIGKILL: the kill lands mid-apply on a fast machine or a loaded one
# (a timed kill could miss a short apply, and the test then had to skip).  The seam is this script,
# a test's own: nothing in the package reads it, so no data or environment can reach it.
_PAUSED_APPLY = """\
import os, signal, sys
from pytest_leakcheck.split import moves
point, k, fd = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
real_move, real_link = moves._move, os.link
count = 0

def stop_here():
    os.write(fd, b"!")
    signal.pause()  # SIGKILL ends the process here

def link(src, dst, **kw):  # the journal's own link comes before the first move (count 0)
    if point == "journaled" and count == k:
        stop_here()
    real_link(src, dst, **kw)
    if point == "linked" and count == k:
        stop_here()

def move(*args):
    global count
    count += 1
    real_move(*args)
    if point == "moved" and count == k:
        stop_here()

os.link, moves._move = link, move
from pytest_leakcheck.cli import main
sys.exit(main(sys.argv[4:]))
"""
#: The move the apply stops at; the plan has more than that (asserted), so the kill is mid-apply.
_KTH = 7


def _apply_until_killed(argv: list[str], env: dict[str, str], point: str) -> None:
    """Run ``argv`` (a ``split --apply``) until it stops at ``point`` of move ``_KTH``, then SIGKILL it."""
    ready, write_end = os.pipe()
    child = subprocess.Popen([sys.executable, "-c", _PAUSED_APPLY, point, str(_KTH), str(write_end), *argv],
                             env=env, pass_fds=(write_end,), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    os.close(write_end)
    try:
        # A hang guard, not a timing: the child says it stopped, or it ended (the pipe closes: b"").
        said = os.read(ready, 1) if select.select([ready], [], [], 300)[0] else b""
        assert said == b"!", f"the apply never reached move {_KTH} ({point}): exit {child.poll()}"
    finally:
        os.close(ready)
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)
        child.communicate()
    assert child.returncode == -signal.SIGKILL


@pytest.mark.slow
@pytest.mark.parametrize(("point", "away"), [("journaled", _KTH - 1), ("linked", _KTH - 1), ("moved", _KTH)])
def test_apply_killed_outright_is_rolled_back_by_the_journal(tmp_path: Path, point: str, away: int) -> None:
    """SIGKILL mid-apply (after move K's journal line, between its link and unlink, after it):
    a rerun is refused, `split --rollback` puts every file back, then the apply completes."""
    root = tmp_path / "ds"
    copies = {f"data/test/c{k:03d}/copy.jpg": f"data/train/dog/x{k:03d}.jpg" for k in range(3 * _KTH)}
    _tree(root, copies)
    before = _files(root)
    journal = root / ".leakcheck/split-apply.journal"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    argv = ["split", "--policy", str(root / "leakcheck.yaml"), "-j", "1"]
    cli = [sys.executable, "-m", "pytest_leakcheck", *argv]
    subprocess.run(cli, env=env, check=True, capture_output=True)  # warms the store: the apply is what dies
    _apply_until_killed([*argv, "--apply"], env, point)
    assert journal.exists()
    # Exactly the moves before the stop are away from where they were ("linked": the K-th file has
    # its new name too, and its old one still).
    assert sum(1 for rel in before if not (root / rel).exists()) == away
    refused = subprocess.run([*cli, "--apply"], env=env, capture_output=True, text=True)
    assert refused.returncode == EXIT_USAGE and "split --rollback" in refused.stderr
    done = subprocess.run([*cli, "--rollback"], env=env, capture_output=True, text=True)
    assert done.returncode == EXIT_CLEAN, done.stderr
    assert f"put {away} files back" in done.stdout
    assert _files(root) == before
    assert not journal.exists()
    # Nothing lost either way: the same plan now applies whole, and it had more than K moves.
    applied = subprocess.run([*cli, "--apply"], env=env, capture_output=True, text=True)
    assert applied.returncode == EXIT_CLEAN, applied.stderr
    moved = int(applied.stdout.split("moved ", 1)[1].split()[0])
    assert moved > _KTH
    assert sorted(_files(root).values()) == sorted(before.values())
    assert not journal.exists()
