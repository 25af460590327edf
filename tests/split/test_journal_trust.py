"""`leakcheck split --rollback` reads a journal the pull request may have written (issue 34,
classes 1 and 9): it is checked whole, and anything no run of this policy wrote is exit 2
with nothing moved, never a rename outside the repository, a git command elsewhere or exit 3."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_leakcheck import EXIT_CLEAN, EXIT_USAGE
from pytest_leakcheck.testing import photo, save

from ..conftest import write_policy
from ..gitrepo import commit_all, git

POLICY = "version: 1\nsplits: {train: [data/train/**], test: [data/test/**]}\n"


def _repo(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "repo"
    for k in range(2):
        save(photo(k, (48, 36)), root / f"data/train/t{k}.jpg", quality=90)
        save(photo(50 + k, (48, 36)), root / f"data/test/e{k}.jpg", quality=90)
    write_policy(root, POLICY)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("the user's file\n")
    return root, outside


def _journal(root: Path, lines: list[object], raw: str | None = None) -> Path:
    path = root / ".leakcheck" / "split-apply.journal"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(raw if raw is not None else "".join(json.dumps(x) + "\n" for x in lines))
    return path


def _tree(*folders: Path) -> dict[str, bytes]:
    out = {}
    for folder in folders:
        for p in sorted(folder.rglob("*")):
            if ".git" not in p.parts and p.is_file() and not p.is_symlink():
                out[str(p)] = p.read_bytes()
    return out


def _rollback(run_cli, root: Path) -> tuple[int, str, str]:
    return run_cli("split", "--policy", str(root / "leakcheck.yaml"), "--rollback")


def _refused(run_cli, root: Path, outside: Path, journal: Path) -> str:
    before = _tree(root, outside)
    code, out, err = _rollback(run_cli, root)
    assert code == EXIT_USAGE, (code, out, err)
    assert "Traceback" not in err and "nothing was moved" in err
    assert _tree(root, outside) == before  # not a file moved, inside or out
    assert journal.exists()  # kept, for the user to look at and delete
    return err


def test_a_committed_journal_is_refused_and_moves_nothing(tmp_path: Path, run_cli) -> None:
    root, outside = _repo(tmp_path)
    git(root, "init", "-q", "-b", "main")
    journal = _journal(root, [{"root": str(root)}, {"src": "data/test/e0.jpg", "dst": "data/train/e0.jpg"}])
    os.rename(root / "data/test/e0.jpg", root / "data/train/e0.jpg")
    commit_all(root, "a pull request commits a journal")
    err = _refused(run_cli, root, outside, journal)
    assert "tracked by git" in err


@pytest.mark.parametrize("hostile", ["dotdot", "absolute", "root-elsewhere", "link-out", "index-elsewhere",
                                     "index-unmoved"])
def test_a_journal_reaching_outside_the_root_is_refused(tmp_path: Path, run_cli, hostile: str) -> None:
    root, outside = _repo(tmp_path)
    head = {"root": str(root)}
    if hostile == "dotdot":  # rollback would rename ../outside/secret.txt into the repository
        lines = [head, {"src": "data/x.txt", "dst": "../outside/secret.txt"}]
    elif hostile == "absolute":
        lines = [head, {"src": "data/x.txt", "dst": str(outside / "secret.txt")}]
    elif hostile == "root-elsewhere":
        (outside / "a").mkdir()
        lines = [{"root": str(outside)}, {"src": "a/secret.txt", "dst": "secret.txt"}]
    elif hostile == "link-out":
        (root / "data/away").symlink_to(outside)
        lines = [head, {"src": "data/x.txt", "dst": "data/away/secret.txt"}]
    else:
        git(outside, "init", "-q")
        git(outside, "add", "secret.txt")
        where = str(outside) if hostile == "index-elsewhere" else str(root)
        lines = [{"root": where}, {"index": True, "undo": "100644 " + "0" * 40 + "\tsecret.txt\0"},
                 {"indexed": True}]
    journal = _journal(root, lines)
    index = (outside / ".git/index").read_bytes() if (outside / ".git").exists() else None
    _refused(run_cli, root, outside, journal)
    if index is not None:
        assert (outside / ".git/index").read_bytes() == index  # no git command ran there


@pytest.mark.parametrize("raw", [
    '{"root": 5}\n',
    '{"root": "/t\\u0101mp"}\n',
    "ROOT\n\"data/test/e0.jpg\"\n",
    "ROOT\n[\"data/test/e0.jpg\", \"data/train/e0.jpg\"]\n",
    "ROOT\n{\"src\": 5, \"dst\": \"data/train/e0.jpg\"}\n",
    "ROOT\n{\"src\": \"data/test/e0.jpg\", \"dst\": \"data/train/e0.jpg\", \"rm\": true}\n",
    "ROOT\n{\"mkdir\": [\"data\"]}\n",
    "ROOT\n{\"index\": true, \"undo\": 7}\n",
    "{\"root\": \"ROOTPATH\", \"extra\": 1}\n",
], ids=["number-root", "non-latin1-root", "string-entry", "list-entry", "number-src", "unknown-key",
        "list-mkdir", "number-undo", "extra-header-key"])
def test_a_malformed_journal_is_exit_2(tmp_path: Path, run_cli, raw: str) -> None:
    root, outside = _repo(tmp_path)
    os.rename(root / "data/test/e0.jpg", root / "data/train/e0.jpg")  # as if a move happened
    head = json.dumps({"root": str(root)})
    journal = _journal(root, [], raw.replace("ROOTPATH", str(root)).replace("ROOT\n", head + "\n"))
    _refused(run_cli, root, outside, journal)


def test_a_source_in_a_missing_folder_refuses_the_whole_rollback(tmp_path: Path, run_cli) -> None:
    """Checked before the first rename: no half-done rollback."""
    root, outside = _repo(tmp_path)
    os.rename(root / "data/test/e0.jpg", root / "data/train/e0.jpg")
    os.rename(root / "data/test/e1.jpg", root / "data/train/e1.jpg")
    journal = _journal(root, [{"root": str(root)},
                              {"src": "data/gone/e1.jpg", "dst": "data/train/e1.jpg"},
                              {"src": "data/test/e0.jpg", "dst": "data/train/e0.jpg"}])
    err = _refused(run_cli, root, outside, journal)
    assert "folder that is not there" in err


def test_the_journal_a_run_writes_still_rolls_back(tmp_path: Path, run_cli) -> None:
    root, outside = _repo(tmp_path)
    os.rename(root / "data/test/e0.jpg", root / "data/train/e0.jpg")
    (root / "data/test/new").mkdir()
    os.rename(root / "data/test/e1.jpg", root / "data/test/new/e1.jpg")
    journal = _journal(root, [{"root": str(root)}, {"src": "data/test/e0.jpg", "dst": "data/train/e0.jpg"},
                              {"mkdir": "data/test/new"}, {"src": "data/test/e1.jpg", "dst": "data/test/new/e1.jpg"}])
    code, out, err = _rollback(run_cli, root)
    assert code == EXIT_CLEAN, err
    assert "put 2 files back" in out
    assert (root / "data/test/e0.jpg").is_file() and (root / "data/test/e1.jpg").is_file()
    assert not (root / "data/test/new").exists() and not journal.exists()
