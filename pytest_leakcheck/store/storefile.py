"""The store's file: where it may live, and proof that a file there is leakcheck's own.

A policy can come from a pull request, and its ``cache`` key names a path
leakcheck writes to and, when the store there is damaged, renames.  So
:func:`is_ours` is the one test every rename and unlink in the package goes
through: only a regular file that proves itself a leakcheck store is ever
moved aside; anything else at the cache path is an error and stays as it is.
"""

from __future__ import annotations

import errno
import os
import secrets
import sqlite3
import stat
import time
from collections.abc import Callable, Sequence
from contextlib import closing, suppress
from pathlib import Path

from ..errors import StoreError

#: "LEAK" in ASCII: SQLite's `PRAGMA application_id` of every leakcheck store.
APPLICATION_ID = 0x4C45414B
#: Keeps the store at this path whatever the policy's `cache` says: the
#: explicit opt-out of the rule that `cache` stays inside the policy's folders.
CACHE_ENV = "LEAKCHECK_CACHE"
#: Files SQLite keeps beside a store in WAL mode.
SIDECARS = ("-wal", "-shm")


def user_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/leakcheck`` (default ``~/.cache/leakcheck``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "leakcheck").resolve()


def locate(cache: Path, folders: Sequence[Path]) -> Path:
    """Where the store lives: ``$LEAKCHECK_CACHE`` when set, else the policy's ``cache``.

    A policy may come from a pull request, so its ``cache`` must resolve
    (links followed) inside one of ``folders`` (the policy's folder, the
    dataset root) or :func:`user_cache_dir`.  A store anywhere else takes the
    environment variable, which a pull request cannot set.
    """
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override).expanduser().resolve()
    path = Path(cache).resolve()
    bases = list(dict.fromkeys([*(Path(f).resolve() for f in folders), user_cache_dir()]))
    if any(path == base or base in path.parents for base in bases):
        return path
    raise StoreError(
        f"the signature store must be inside {bases[0]}"
        + "".join(f", {b}" for b in bases[1:-1]) + f" or {bases[-1]}",
        path=str(path),
        key="cache",
        fix=f"use a path relative to the policy, e.g. `cache: .leakcheck/cache.sqlite`, or set {CACHE_ENV}=PATH "
            "to keep the store elsewhere on purpose",
    )


_MAGIC = b"SQLite format 3\x00"


def is_ours(path: Path, *, made: os.stat_result | None = None) -> bool:
    """Whether ``path`` is provably a leakcheck store: asked before any rename or unlink.

    Only a regular file qualifies (never a folder, a link or a device): one
    whose SQLite header carries :data:`APPLICATION_ID`, a store made before
    the stamp (recognised by its tables), or the very file ``made`` that this
    process has just created.
    """
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode):
        return False
    if made is not None and (st.st_dev, st.st_ino) == (made.st_dev, made.st_ino):
        return True
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
        with os.fdopen(fd, "rb") as fh:
            header = fh.read(100)
    except OSError:
        return False
    if len(header) < 100 or not header.startswith(_MAGIC):
        return False
    app = int.from_bytes(header[68:72], "big")
    return app == APPLICATION_ID or (app == 0 and _unstamped_store(path))


def _unstamped_store(path: Path) -> bool:
    """A store made before the stamp: SQLite with our meta, files and signatures tables."""
    # immutable: no lock, no -wal or -shm created beside a file that may be someone else's.
    uri = Path(path).absolute().as_uri() + "?mode=ro&immutable=1"
    try:
        with closing(sqlite3.connect(uri, uri=True)) as conn:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if not {"meta", "files", "signatures"} <= tables:
                return False
            return conn.execute("SELECT 1 FROM meta WHERE key = 'schema_version'").fetchone() is not None
    except sqlite3.Error:
        return False


def not_ours(path: Path) -> StoreError:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        mode = 0
    what = ("a folder" if stat.S_ISDIR(mode) else "a symbolic link" if stat.S_ISLNK(mode)
            else "not a regular file" if not stat.S_ISREG(mode) else "a file")
    return StoreError(
        f"is {what}, not a signature store made by leakcheck; it is left as it is",
        path=str(path),
        key="cache",
        fix=f"point `cache` in the policy (or {CACHE_ENV}) at a file of its own, e.g. `.leakcheck/cache.sqlite`; "
            "if this is a damaged leakcheck store, delete it",
    )


def check_sidecars(path: Path) -> None:
    """Refuse to let SQLite open files beside the store that are not its own.

    SQLite writes ``<store>-wal`` and ``<store>-shm`` beside the store,
    following links.  One that is a link or a folder, or one beside no store
    at all, was not left there by leakcheck's SQLite: a store error.
    """
    sides = [f"{path}{suffix}" for suffix in SIDECARS if os.path.lexists(f"{path}{suffix}")]
    # After the sidecars: a run creating the store links it before SQLite opens any.
    alone = not os.path.lexists(path)
    for side in sides:
        if alone or not stat.S_ISREG(os.lstat(side).st_mode):
            raise StoreError(
                "is in the place of SQLite's own file beside the signature store"
                + (" (there is no store)" if alone else ", and is not a regular file") + "; it is left as it is",
                path=side,
                key="cache",
                fix="delete it if it is a leftover of a deleted store, or point `cache` at another file",
            )


def _discard(path: Path, made: os.stat_result) -> None:
    """Unlink the temporary file this process made, and SQLite's files beside it; anything else there stays."""
    if not is_ours(path, made=made):
        return
    # SQLite's -journal, -wal and -shm of our own temporary file: on a full
    # disk they are what would keep it full for every later run.
    for suffix in ("-journal", *SIDECARS):
        side = f"{path}{suffix}"
        with suppress(OSError):
            if stat.S_ISREG(os.lstat(side).st_mode):
                os.unlink(side)
    with suppress(OSError):  # a stray temporary file costs nothing but space
        os.unlink(path)


def remove_new(path: Path) -> None:
    """Remove the store this run made at ``path``, with SQLite's files beside it, when it proves ours."""
    if is_ours(path):
        _discard(path, os.lstat(path))


def cannot_write(path: Path, exc: BaseException, doing: str = "create") -> StoreError:
    """A store that cannot be made or written for a reason of the disk's: a full disk, a read-only folder."""
    text = getattr(exc, "strerror", None) or str(exc)
    lowered = text.lower()
    if "full" in lowered or getattr(exc, "errno", None) == errno.ENOSPC:
        problem, fix = "the disk is full", "free space there"
    elif "read-only" in lowered or "readonly" in lowered or getattr(exc, "errno", None) in (errno.EROFS, errno.EACCES,
                                                                                          errno.EPERM):
        problem, fix = f"its folder is not writable ({text})", "make the folder writable"
    else:
        problem, fix = text, "check the disk"
    return StoreError(
        f"cannot {doing} the signature store: {problem}" + ("; nothing was left behind" if doing == "create" else ""),
        path=str(path),
        key="cache",
        fix=f"{fix}, point `cache` in the policy (or {CACHE_ENV}) at another folder, or pass --no-cache",
    )


def create(path: Path, init: Callable[[Path], None]) -> None:
    """A new, empty store at ``path``, never replacing anything that is there.

    ``init`` makes the store in a file.  Built under a temporary name and hard-linked into place: ``path`` never
    holds a half-made store that could not be proved ours, and a store
    another run created meanwhile is kept.  A full disk or a read-only folder
    is a :class:`StoreError` naming the path, with every file made on the way removed.
    """
    tmp = path.with_name(f".{path.name}.new-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        raise cannot_write(path, exc) from None
    made = os.fstat(fd)
    os.close(fd)
    try:
        init(tmp)
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another run made it first; the caller checks it like any other
        except OSError:
            if not os.path.lexists(path):  # no hard links on this file system
                os.rename(tmp, path)
    except (OSError, sqlite3.OperationalError) as exc:
        raise cannot_write(path, exc) from None
    finally:
        _discard(tmp, made)


def set_aside(path: Path) -> Path:
    """Rename our damaged store, with SQLite's -wal and -shm beside it, to ``<name>.corrupt-<time>``."""
    if not is_ours(path):
        raise not_ours(path)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside, n = path.with_name(f"{path.name}.corrupt-{stamp}"), 0
    while any(os.path.lexists(f"{aside}{s}") for s in ("", *SIDECARS)):
        n += 1
        aside = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    try:
        # SQLite's files first: interrupted half-way, the store stays ours
        # and in place, never sidecars without their store (check_sidecars).
        for suffix in SIDECARS:
            side = f"{path}{suffix}"
            if os.path.lexists(side) and stat.S_ISREG(os.lstat(side).st_mode):
                os.replace(side, f"{aside}{suffix}")
        os.replace(path, aside)
    except OSError as exc:
        raise StoreError(
            f"cannot move the damaged signature store aside: {exc.strerror or exc}",
            path=str(path),
            key="cache",
            fix="delete the file; it is a cache and will be rebuilt",
        ) from None
    return aside
