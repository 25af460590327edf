"""Moves in a folder tree, all or nothing (``leakcheck split --apply``).

A plan of moves is the user's dataset rearranged, so it is held to three rules:

- **Validated whole before the first move**: every source is there, every
  target is free (also on a case-insensitive file system: ``IMG.png`` and
  ``img.png`` are one name there), every target folder is inside the
  repository with no link on the way, every parent is a folder or can be made
  one, and every folder touched is writable.  One problem refuses the plan.
- **Journaled**: before each step (a folder made, a file moved, git's index
  updated) a line goes to a journal beside the policy, flushed to disk.  Any
  failure or interruption puts every file back; a run killed outright leaves
  the journal, and ``leakcheck split --rollback`` reads it and puts the files back.
- **Never overwrites**: a file moves by hard link then unlink, which fails
  rather than replace a target that appeared meanwhile (a plain rename where
  the file system has no hard links, after one more look).

Inside a git work tree the index follows in one ``git update-index`` after the
files moved (what ``git mv`` does, staged content kept), so that step is all
or nothing too.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from . import journal as journal_file

#: The journal, in ``.leakcheck/`` beside the policy.
JOURNAL = "split-apply.journal"
ROLLBACK = "leakcheck split --rollback"
_ZERO = "0" * 40


@dataclass(frozen=True)
class Move:
    """One file to move, paths relative to the policy root."""

    src: str
    dst: str
    git: bool = False


def journal_path(policy_path: Path) -> Path:
    return policy_path.parent / ".leakcheck" / JOURNAL


def fold(name: str) -> str:
    """A name as a case-insensitive file system compares it (NFC, case-folded)."""
    return unicodedata.normalize("NFC", name).casefold()


# --------------------------------------------------------------------------
# Validation


def _refuse(problem: str, fix: str) -> UsageError:
    return UsageError(f"{problem}; nothing was moved", fix=fix)


def validate(root: Path, moves: Sequence[Move]) -> None:
    """Raise :class:`UsageError` before any move if one move of the plan could fail or overwrite."""
    real_root = root.resolve()
    seen: dict[str, str] = {}
    listings: dict[Path, dict[str, str]] = {}
    for m in moves:
        src, dst = root / m.src, root / m.dst
        try:
            mode = os.lstat(src).st_mode
        except OSError:
            raise _refuse(f"{m.src} is gone", "run `leakcheck split` again to plan from the tree as it is") from None
        if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            raise _refuse(f"{m.src} is not a file", "move it yourself, then run again")
        _contained(root, real_root, m.src, src.parent)
        folder = _target_folder(root, real_root, m.dst)
        key = fold(m.dst)
        if key in seen:
            raise _refuse(f"{seen[key]} and {m.dst} would be one file on a case-insensitive file system",
                          "rename one of them, then run again")
        seen[key] = m.dst
        if os.path.lexists(dst):
            raise _refuse(f"{m.dst} exists already", "rename or remove that file yourself, then run again")
        if folder is not None:
            names = listings.setdefault(folder, {fold(n): n for n in os.listdir(folder)})
            other = names.get(fold(dst.name))
            if other is not None:
                raise _refuse(f"{m.dst} would overwrite {_rel(root, folder / other)} on a case-insensitive file system",
                              "rename one of them, then run again")
        for where in (src.parent, folder if folder is not None else _deepest(dst.parent)):
            if not os.access(where, os.W_OK | os.X_OK):
                raise _refuse(f"folder {_rel(root, where)} is not writable",
                              "make it writable (or check the file system is not read-only), then run again")


def _rel(root: Path, path: Path) -> str:
    try:
        return path.relative_to(root).as_posix() or "."
    except ValueError:
        return str(path)


def _contained(root: Path, real_root: Path, rel: str, folder: Path) -> None:
    real = folder.resolve()
    if real != real_root and real_root not in real.parents:
        raise _refuse(f"{rel} is reached through a link out of the repository ({real})",
                      "leakcheck moves files only inside the policy's root")


def _target_folder(root: Path, real_root: Path, dst: str) -> Path | None:
    """The target's folder if it exists (None: it will be made); refuses links and files on the way."""
    here = root
    for part in dst.split("/")[:-1]:
        here = here / part
        try:
            mode = os.lstat(here).st_mode
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise _refuse(f"cannot look at {_rel(root, here)}: {exc.strerror}", "fix its permissions") from None
        if stat.S_ISLNK(mode):
            raise _refuse(f"{_rel(root, here)} is a symbolic link; leakcheck does not move files through links "
                          f"(its target: {os.readlink(here)})", "make it a real folder, then run again")
        if not stat.S_ISDIR(mode):
            raise _refuse(f"{_rel(root, here)} is a file, so {dst} cannot be made",
                          "rename that file, then run again")
    _contained(root, real_root, dst, here)
    return here


def _deepest(path: Path) -> Path:
    while not os.path.lexists(path):
        path = path.parent
    return path


# --------------------------------------------------------------------------
# The journal


class _Journal:
    """Append-only JSON lines, each flushed to disk before the step it announces."""

    def __init__(self, path: Path, root: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        # The header goes to a file of its own first, which is then linked into
        # place: a kill at any moment leaves no journal, or one that names its root.
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(json.dumps({"root": _encode(str(root))}, ensure_ascii=True) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)  # never replaces a journal another run left
        finally:
            os.unlink(tmp)
        self.fh = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()

    def write(self, **entry: object) -> None:
        self.fh.write(json.dumps(entry, ensure_ascii=True) + "\n")
        self.fh.flush()
        os.fsync(self.fh.fileno())

    def close(self) -> None:
        self.fh.close()


def _refuse_pending(journal: Path) -> None:
    if os.path.lexists(journal) and journal_file.tracked_by_git(journal):
        raise UsageError(f"{journal} is tracked by git: a commit added it, no `split --apply` run wrote it",
                         fix="delete it and `git rm` it, then run again")
    if os.path.lexists(journal):
        raise UsageError(f"an earlier `leakcheck split --apply` did not finish (its journal is {journal})",
                         fix=f"run `{ROLLBACK}` to put its files back, then plan again")


def _encode(name: str) -> str:
    return os.fsencode(name).decode("latin-1")  # any name, even one that is not UTF-8, as text


def _decode(text: str) -> str:
    return os.fsdecode(text.encode("latin-1"))


# --------------------------------------------------------------------------
# Applying and undoing


def apply(root: Path, moves: Sequence[Move], journal: Path, tracked: set[str]) -> list[Move]:
    """Perform ``moves`` under ``root``, all or none; returns them (``git`` set where git's index followed)."""
    _refuse_pending(journal)
    validate(root, moves)
    done = [Move(m.src, m.dst, m.src in tracked) for m in moves]
    try:
        log = _Journal(journal, root)
    except OSError as exc:
        raise UsageError(f"cannot write the journal of the moves: {exc.strerror or exc}; nothing was moved",
                         path=str(journal), fix="make the policy's folder writable, then run again") from None
    try:
        for m in done:
            _move(root, m, log)
        if any(m.git for m in done):
            _git_index(root, [m for m in done if m.git], log)
    except BaseException as exc:
        log.close()
        _undo_or_explain(journal, root, exc)
        raise
    log.close()
    os.unlink(journal)
    return done


def _move(root: Path, m: Move, log: _Journal) -> None:
    folder = root
    for part in m.dst.split("/")[:-1]:
        folder = folder / part
        if not os.path.lexists(folder):
            log.write(mkdir=_encode(_rel(root, folder)))
            os.mkdir(folder)
    log.write(src=_encode(m.src), dst=_encode(m.dst))
    src, dst = root / m.src, root / m.dst
    try:
        os.link(src, dst, follow_symlinks=False)
    except FileExistsError:
        raise OSError(17, "exists already", str(dst)) from None
    except OSError:
        if os.path.lexists(dst):  # no hard links here: one more look, then a rename
            raise OSError(17, "exists already", str(dst)) from None
        os.rename(src, dst)
        return
    os.unlink(src)


def _undo_or_explain(journal: Path, root: Path, exc: BaseException) -> None:
    """Put everything back after ``exc``; raise a :class:`UsageError` that says what happened."""
    try:
        rollback(journal, root)
    except (OSError, UsageError, subprocess.CalledProcessError) as undo:
        raise UsageError(f"`split --apply` failed ({_why(exc)}) and putting the files back failed too "
                         f"({_why(undo)}); the journal {journal} is kept",
                         fix=f"fix that, then run `{ROLLBACK}`") from None
    if isinstance(exc, OSError):
        where = f" at {exc.filename}" if exc.filename else ""
        raise UsageError(f"a move failed{where}: {exc.strerror or exc}; every file moved was put back",
                         fix="fix that (free space, permissions, a file in the way), then run again") from None
    if isinstance(exc, subprocess.CalledProcessError):
        err = (exc.stderr or b"").decode("utf-8", "replace").strip().splitlines()
        raise UsageError(f"git could not record the moves ({err[0] if err else exc}); every file was put back",
                         fix="finish the other git command (or delete a stale .git/index.lock), then run again",
                         ) from None


def _why(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def rollback(journal: Path, root: Path) -> int:
    """Undo what the journal records, newest step first; the number of files put back.

    The journal is the repository's, so a pull request can commit one: it is
    checked whole first (``journal.py``: written by this user, untracked, for
    this root, every entry inside it and undoable) or refused with nothing moved.
    """
    entries = journal_file.read(journal, root)
    prefix = None
    if any("index" in e for e in entries):
        try:
            prefix = os.fsdecode(_run_git(root, ["rev-parse", "--show-prefix"]).strip())
        except (OSError, subprocess.CalledProcessError):
            prefix = None
    back = 0
    for step in journal_file.steps(journal, root, entries, prefix):
        try:
            back += _undo(root, step)
        except (OSError, subprocess.CalledProcessError) as exc:
            raise UsageError(f"putting {step.dst or 'git index'} back failed: {_why(exc)}; "
                             f"{back} files were put back and the journal {journal} is kept",
                             fix=f"fix that, then run `{ROLLBACK}` again") from None
    os.unlink(journal)
    return back


def _undo(root: Path, step: journal_file.Step) -> int:
    if step.kind == "index":
        try:
            _run_git(root, ["update-index", "-z", "--index-info"], step.undo)
        except subprocess.CalledProcessError:
            if step.required:  # git recorded the moves: the index must be put back too
                raise
            # git failed before recording anything (the failure being undone): nothing to put back
    elif step.kind == "move":
        os.rename(root / step.dst, root / step.src)  # journal.steps saw the old name free
        return 1
    elif step.kind == "unlink":
        os.unlink(root / step.dst)  # killed between the hard link and the unlink: drop the new name
    elif step.kind == "rmdir":
        with contextlib.suppress(OSError):  # gone already, or something was put in it since: it stays
            os.rmdir(root / step.dst)
    return 0


def _run_git(root: Path, args: list[str], stdin: str | None = None) -> bytes:
    data = None if stdin is None else os.fsencode(stdin)
    return subprocess.run(["git", *args], cwd=root, input=data, capture_output=True, check=True).stdout


def _git_index(root: Path, moves: Iterable[Move], log: _Journal) -> None:
    """Move the index entries of ``moves`` (their staged content), in one command: what ``git mv`` does."""
    moves = list(moves)
    prefix = os.fsdecode(_run_git(root, ["rev-parse", "--show-prefix"]).strip())
    listed = _run_git(root, ["ls-files", "-s", "-z", "--full-name", "--", *[m.src for m in moves]])
    entries = {}
    for record in os.fsdecode(listed).split("\0"):
        if record:
            info, path = record.split("\t", 1)
            mode, sha, _stage = info.split()
            entries[path] = (mode, sha)
    do, undo = [], []
    for m in moves:
        mode, sha = entries[prefix + m.src]
        do += [f"{mode} {sha}\t{prefix}{m.dst}", f"0 {_ZERO}\t{prefix}{m.src}"]
        undo += [f"{mode} {sha}\t{prefix}{m.src}", f"0 {_ZERO}\t{prefix}{m.dst}"]
    undo_text = "".join(u + "\0" for u in undo)
    log.write(index=True, undo=_encode(undo_text))
    _run_git(root, ["update-index", "-z", "--index-info"], "".join(d + "\0" for d in do))
    log.write(indexed=True)


def tracked(root: Path) -> set[str]:
    """Files git tracks under ``root``, relative to it; empty outside a work tree or without git."""
    try:
        out = _run_git(root, ["ls-files", "-z", "--", "."])
    except (OSError, subprocess.CalledProcessError):
        return set()
    return {p for p in os.fsdecode(out).split("\0") if p}
