"""Reading a `split --apply` journal back, as the input it is: trusted only once checked whole.

The journal sits in the repository (``.leakcheck/split-apply.journal`` beside
the policy), so a pull request can commit one, and ``split --apply`` itself
says to run ``--rollback`` when it finds one.  Undoing a journal renames files
and runs ``git update-index``, so before anything is touched it must be one
this run's owner wrote, for this policy:

- a regular file (not a link), owned by the user running leakcheck, and not
  tracked by git (a committed journal is the pull request's, never a run's);
- its ``root`` is the policy's root;
- every entry is one a run writes (``mkdir``; ``src``/``dst``; ``index`` with
  its ``undo`` records; ``indexed``), every path relative, without ``..``, and
  inside the root with links resolved; every ``undo`` record names a file one
  of its moves moved;
- every step can be undone without overwriting anything: the file to put
  back is a file, its old name is free, its old folder is there.

Anything else is a :class:`UsageError` (exit 2) and nothing is moved.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..errors import UsageError

_INDEX_RECORD = re.compile(r"(?:0|100644|100755|120000|160000) (?:[0-9a-f]{40}|[0-9a-f]{64})\t(.+)", re.DOTALL)


@dataclass(frozen=True)
class Step:
    """One step to undo, newest first: ``kind`` is ``move`` (put ``dst`` back at ``src``),
    ``unlink`` (drop ``dst``, a second name of ``src``), ``rmdir`` or ``index`` (``undo`` to git)."""

    kind: str
    src: str = ""
    dst: str = ""
    undo: str = ""
    #: ``index`` only: git recorded the moves, so a failure to put the index back is an error.
    required: bool = False


def _refuse(journal: Path, problem: str) -> UsageError:
    return UsageError(f"the journal {journal} {problem}; nothing was moved",
                      fix="it was not written by a `split --apply` of this policy on this machine: "
                          "delete it (and `git rm` it if a commit added it), then run `leakcheck split` again")


def decode(text: object, journal: Path, what: str, *, records: bool = False) -> str:
    """A name the journal holds (its bytes as latin-1 text), back as the ``str`` of those bytes."""
    if not isinstance(text, str):
        raise _refuse(journal, f"holds {what} that is not text")
    try:
        raw = text.encode("latin-1")
    except UnicodeEncodeError:
        raise _refuse(journal, f"holds {what} that no run writes (a character above U+00FF)") from None
    if b"\0" in raw and not records:  # git records are NUL-separated; names never hold one
        raise _refuse(journal, f"holds {what} with a NUL byte")
    return os.fsdecode(raw)


def tracked_by_git(path: Path) -> bool:
    """Whether git tracks ``path`` (False outside a work tree or without git)."""
    try:
        proc = subprocess.run(["git", "ls-files", "--error-unmatch", "--", path.name], cwd=path.parent,
                              capture_output=True, check=False)
    except OSError:
        return False
    return proc.returncode == 0


def read(journal: Path, root: Path) -> list[dict]:
    """The journal's entries after its header, checked to be a journal of ``root`` written by this user."""
    try:
        st = os.lstat(journal)
    except FileNotFoundError:
        raise UsageError(f"there is no unfinished `split --apply` to roll back ({journal} does not exist)") from None
    if not stat.S_ISREG(st.st_mode) or os.path.islink(journal.parent):
        raise _refuse(journal, "is not a regular file in leakcheck's own folder (a link is on the way)")
    if st.st_uid != os.geteuid():
        raise _refuse(journal, "belongs to another user")
    if tracked_by_git(journal) or tracked_by_git(Path(os.path.realpath(journal))):
        raise _refuse(journal, "is tracked by git (a commit added it)")
    try:
        lines = journal.read_bytes().decode("ascii").splitlines()
    except (OSError, UnicodeDecodeError):
        raise _refuse(journal, "is not a journal of `split --apply` (not ASCII JSON lines)") from None
    entries: list[object] = []
    for line in lines:
        try:
            entries.append(json.loads(line))
        except (ValueError, RecursionError):
            break  # a line cut by the crash: its step never started
    head = entries[0] if entries else None
    if not isinstance(head, dict) or set(head) != {"root"}:
        raise _refuse(journal, "is not a journal of `split --apply`")
    written = decode(head["root"], journal, "a root")
    if not os.path.isabs(written) or os.path.realpath(written) != os.path.realpath(root):
        raise _refuse(journal, "names another root than the policy's")
    out = []
    for entry in entries[1:]:
        if not isinstance(entry, dict) or frozenset(entry) not in _SHAPES:
            raise _refuse(journal, f"holds an entry no run writes ({str(entry)[:60]!r})")
        out.append(entry)
    return out


_SHAPES = {frozenset({"mkdir"}), frozenset({"src", "dst"}), frozenset({"index", "undo"}), frozenset({"indexed"})}


def _relative(journal: Path, root: Path, text: object, what: str) -> str:
    """A path an entry names, relative to the root, checked to stay inside it with links resolved."""
    rel = decode(text, journal, what)
    parts = PurePosixPath(rel).parts
    if not rel or rel.startswith("/") or ".." in parts:
        raise _refuse(journal, f"names {what} outside the root ({rel[:60]!r})")
    real_root = os.path.realpath(root)
    parent = os.path.realpath(root / PurePosixPath(rel).parent)
    if parent != real_root and not parent.startswith(real_root + os.sep):
        raise _refuse(journal, f"names {what} reached through a link out of the root ({rel[:60]!r})")
    return rel


def steps(journal: Path, root: Path, entries: list[dict], git_prefix: str | None) -> list[Step]:
    """The undo steps, newest first, each checked; ``git_prefix`` is the root below git's top (None: no git)."""
    moved: set[str] = set()
    out: list[Step] = []
    indexed = any("indexed" in e for e in entries)
    for entry in reversed(entries):
        if "mkdir" in entry:
            out.append(Step("rmdir", dst=_relative(journal, root, entry["mkdir"], "a folder")))
        elif "dst" in entry:
            src = _relative(journal, root, entry["src"], "a source")
            dst = _relative(journal, root, entry["dst"], "a target")
            moved |= {src, dst}
            out.append(Step("move", src=src, dst=dst))
        elif "index" in entry:
            out.append(Step("index", undo=decode(entry["undo"], journal, "git records", records=True), required=indexed))
    for step in out:
        if step.kind == "index":
            _check_index(journal, step.undo, moved, git_prefix)
    return _feasible(journal, root, out)


def _check_index(journal: Path, undo: str, moved: set[str], prefix: str | None) -> None:
    if prefix is None:
        raise _refuse(journal, "holds git records, but the root is not in a git work tree")
    for record in undo.split("\0")[:-1] if undo.endswith("\0") else [undo]:
        m = _INDEX_RECORD.fullmatch(record)
        if m is None or not m.group(1).startswith(prefix) or m.group(1)[len(prefix):] not in moved:
            raise _refuse(journal, "holds a git record for a file none of its moves moved")


def _feasible(journal: Path, root: Path, out: list[Step]) -> list[Step]:
    """The steps as they will run: each move checked against the tree as the steps before leave it."""
    present: dict[str, bool] = {}

    def exists(rel: str) -> bool:
        return present[rel] if rel in present else os.path.lexists(root / rel)

    done = []
    for step in out:
        if step.kind != "move":
            done.append(step)
            continue
        src, dst = root / step.src, root / step.dst
        if not exists(step.dst):
            continue  # never moved (the kill came first), or put back already
        if step.dst not in present and not (stat.S_ISREG(os.lstat(dst).st_mode) or stat.S_ISLNK(os.lstat(dst).st_mode)):
            raise _refuse(journal, f"would move {step.dst[:60]!r}, which is not a file")
        if exists(step.src):
            if step.src not in present and _same(src, dst):
                done.append(Step("unlink", src=step.src, dst=step.dst))  # killed between link and unlink
                present[step.dst] = False
            continue  # its old name is taken: never overwritten
        if not src.parent.is_dir():
            raise _refuse(journal, f"would put {step.dst[:60]!r} back into a folder that is not there "
                                   f"({PurePosixPath(step.src).parent.as_posix()[:60]!r})")
        done.append(step)
        present[step.dst], present[step.src] = False, True
    return done


def _same(a: Path, b: Path) -> bool:
    try:
        x, y = os.lstat(a), os.lstat(b)
    except OSError:
        return False
    return (x.st_dev, x.st_ino) == (y.st_dev, y.st_ino)
