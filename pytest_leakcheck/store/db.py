"""The signature store: one SQLite file, so unchanged images are never decoded twice.

Signatures are keyed by content digest, not path, so a renamed or copied file
costs one read of its bytes and no decode.  Each signal family is keyed by its
own parameter fingerprint, so changing the thumbnail size recomputes the
thumbnails and keeps the perceptual hashes.  No pixels are stored: only
hashes, digests, image sizes and a tiny normalised thumbnail.
"""

from __future__ import annotations

import io
import os
import sqlite3
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from . import blobs, consistent, keys, trust

from ..errors import StoreDamaged, StoreError
from ..files.atomic import own_folder
from ..files.names import from_bytes, is_unicode, to_bytes
from .storefile import APPLICATION_ID, cannot_write, check_sidecars, create, is_ours, not_ours, remove_new, set_aside

# Schema history:
#   1: meta, files, signatures (digest, family, params) -> data.
#   2: snapshots: the assembled signature arrays of the last full check, so a
#      warm check of a large dataset reads one row instead of one per file.
#      A version 1 store is upgraded in place (the new table is only added).
#   2, stamped: every store is created with `PRAGMA application_id` = APPLICATION_ID, so
#      leakcheck proves a file is its own from the header alone (bytes 68-71).  An older
#      store is recognised by its meta table and stamped when next opened (same tables).
SCHEMA_VERSION = 2
_UPGRADABLE = {"1"}

SCHEMA = """
-- Key/value facts about this store; `schema_version` guards upgrades.
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT
);

-- Where a path's content is: if size and mtime_ns still match the file on
-- disk, `digest` is trusted and the file is not even read again.
CREATE TABLE IF NOT EXISTS files (
    path     TEXT PRIMARY KEY,   -- relative to the policy root, POSIX separators;
                                 -- a name that is not UTF-8: its bytes, as a BLOB
    size     INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    digest   BLOB NOT NULL       -- sha256 of the file's bytes
);

-- One row per content digest and signal family, keyed by the family's name
-- and parameter fingerprint (signals.Family): e.g. 'hash:rot90' with
-- 'phash;64;<decode path>', 'thumb', 'desc' (aligned), 'dhash:identity', plus
-- 'dims', 'pixels' (identical-pixels) and 'error'.  `data` is the packed signal
-- in the family's byte layout (uint64 values as raw little-endian bytes), or
-- the error text when `ok` is 0 so an unreadable file is not decoded again.
CREATE TABLE IF NOT EXISTS signatures (
    digest BLOB NOT NULL,
    family TEXT NOT NULL,
    params TEXT NOT NULL,
    ok     INTEGER NOT NULL,
    data   BLOB NOT NULL,
    PRIMARY KEY (digest, family, params)
) WITHOUT ROWID;

-- What the last full check assembled, as an uncompressed .npz without
-- pickles: `signatures:<fingerprint>` holds the arrays (paths, sizes, mtimes,
-- digests, and every family's arrays as `sig:<name>`), `matches:<fingerprint>` the search results
-- between files that have not changed since.  Derived entirely from the
-- tables above and the files: a row that fails to load is ignored and rewritten.
CREATE TABLE IF NOT EXISTS snapshots (
    key  TEXT PRIMARY KEY,
    data BLOB NOT NULL
);
"""

# SQLite's default limit on host parameters is 999 on old builds.
_BATCH = 900
# Above this many digests, get_families reads the table in one pass.
_SCAN_OVER = 20 * _BATCH


class Store:
    """A connection to the store; use :func:`open_store` to get one."""

    def __init__(self, conn: sqlite3.Connection, path: Path | None) -> None:
        self.conn = conn
        self.path = path
        self.warnings: list[str] = []
        #: This run made the file: a run that fails to write it (a full disk) removes it again.
        self.created = False
        self.slot = ""  #: the slot of the search state this run saves ("": the check's): keys.slotted

    # -- files --------------------------------------------------------------
    def lookup_files(self, paths: list[str]) -> dict[str, tuple[int, int, bytes]]:
        out: dict[str, tuple[int, int, bytes]] = {}
        for chunk in _chunks([_path_key(p) for p in paths], _BATCH):
            marks = ",".join("?" * len(chunk))
            rows = self.conn.execute(
                f"SELECT path, size, mtime_ns, digest FROM files WHERE path IN ({marks})", chunk
            )
            for path, size, mtime, digest in rows:
                out[_path_of(path)] = (size, mtime, bytes(digest))
        return out

    def put_files(self, rows: Iterable[tuple[str, int, int, bytes]]) -> None:
        with self._transaction():
            self.conn.executemany("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?)",
                                  ((_path_key(p), *rest) for p, *rest in rows))

    # -- signatures -----------------------------------------------------------
    def has_signatures(self) -> bool:
        """Whether any content is signed yet (a first check has nothing to look up by digest)."""
        return self.conn.execute("SELECT 1 FROM signatures LIMIT 1").fetchone() is not None

    def get_signatures(
        self, digests: list[bytes], family: str, params: str
    ) -> dict[bytes, tuple[bool, bytes]]:
        out: dict[bytes, tuple[bool, bytes]] = {}
        unique = list(dict.fromkeys(digests))
        for chunk in _chunks(unique, _BATCH):
            marks = ",".join("?" * len(chunk))
            rows = self.conn.execute(
                "SELECT digest, ok, data FROM signatures "
                f"WHERE family = ? AND params = ? AND digest IN ({marks})",
                [family, params, *chunk],
            )
            for digest, ok, data in rows:
                out[bytes(digest)] = (bool(ok), bytes(data))
        return out

    def get_families(
        self, digests: list[bytes], families: list[tuple[str, str]]
    ) -> dict[str, dict[bytes, tuple[bool, bytes]]]:
        """:meth:`get_signatures` for several ``(family, params)`` at once."""
        unique = list(dict.fromkeys(digests))
        if len(unique) <= _SCAN_OVER:
            return {name: self.get_signatures(unique, name, params) for name, params in families}
        # A whole dataset is wanted: one pass over the table beats a few
        # hundred IN (...) lookups per family (about 4x at 50,000 files).
        out: dict[str, dict[bytes, tuple[bool, bytes]]] = {name: {} for name, _ in families}
        params_of = dict(families)
        wanted = set(unique)
        marks = ",".join("?" * len(params_of))
        rows = self.conn.execute(
            f"SELECT digest, family, params, ok, data FROM signatures WHERE family IN ({marks})",
            list(params_of),
        )
        for digest, family, params, ok, data in rows:
            if params == params_of[family] and digest in wanted:
                out[family][digest] = (bool(ok), data)
        return out

    # -- snapshots ------------------------------------------------------------
    def load_snapshot(self, key: str) -> dict[str, np.ndarray] | None:
        """The arrays saved under ``key``, or None when absent.

        Read from the row in place where SQLite allows it (Python 3.11+), an
        array at a time: a snapshot of a million images is never held twice,
        once as the stored bytes and once as the arrays.
        """
        arrays = self._read_snapshot(keys.slotted(self.slot, key))
        wrong = None if arrays is None else consistent.problem(key, arrays)
        if wrong is not None:  # valid checksums, contents no run writes: damage like any other
            raise StoreDamaged(f"a stored snapshot is inconsistent: {wrong}", path=str(self.path) if self.path else None)
        return arrays

    def _read_snapshot(self, key: str) -> dict[str, np.ndarray] | None:
        row = self.conn.execute("SELECT rowid FROM snapshots WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            if hasattr(self.conn, "blobopen"):
                with self.conn.blobopen("snapshots", "data", row[0], readonly=True) as blob:
                    if blob.read(len(blobs.MAGIC)) == blobs.MAGIC:
                        return blobs.read(blob)
                    blob.seek(0)  # written by an earlier version: a zip archive (np.savez)
                    return blobs.npz(blobs.BlobFile(blob))
            (data,) = self.conn.execute("SELECT data FROM snapshots WHERE rowid = ?", (row[0],)).fetchone()
            if bytes(data[:len(blobs.MAGIC)]) == blobs.MAGIC:
                source = io.BytesIO(data)
                source.seek(len(blobs.MAGIC))
                return blobs.read(source)
            return blobs.npz(io.BytesIO(data))
        except (OSError, ValueError, EOFError, KeyError, TypeError, zipfile.BadZipFile) as exc:
            # Only damage makes a row we wrote unreadable (its checksums catch
            # garbage SQLite cannot see), and it is rarely alone in the file.
            raise StoreDamaged(f"a stored snapshot cannot be read: {exc}",
                               path=str(self.path) if self.path else None) from None

    def save_snapshot(self, key: str, arrays: dict[str, np.ndarray], *, kind: str = "signatures") -> None:
        """Save ``arrays`` under ``key``, replacing every older snapshot of the same ``kind``.

        Keys are ``kind:...`` strings, so the signature arrays and the search
        results each keep one current snapshot.  Written into the row in place,
        array by array (``blobs.layout``): binding the value would have SQLite
        copy it whole, and nothing here holds the arrays twice.
        """
        header, blocks = blobs.layout(arrays)
        size = len(header) + sum(b.nbytes for b in blocks)
        key, kind = keys.slotted(self.slot, key), keys.slotted(self.slot, kind + ":")[:-1]
        with self._transaction():
            self._drop_snapshots(kind)
            if not hasattr(self.conn, "blobopen"):  # SQLite before Python 3.11: the value is bound whole
                buf = io.BytesIO()
                blobs.write(buf, header, blocks)
                self.conn.execute("INSERT OR REPLACE INTO snapshots VALUES (?, ?)", (key, buf.getvalue()))
                return
            cur = self.conn.execute("INSERT OR REPLACE INTO snapshots VALUES (?, zeroblob(?))", (key, size))
            with self.conn.blobopen("snapshots", "data", cur.lastrowid) as blob:
                blobs.write(blob, header, blocks)

    def _drop_snapshots(self, kind: str) -> None:
        self.conn.execute("DELETE FROM snapshots WHERE substr(key, 1, ?) = ?", (len(kind) + 1, kind + ":"))

    # -- meta: small facts such as a calibrated threshold ---------------------
    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def put_meta(self, values: dict[str, str]) -> None:
        with self._transaction():
            self.conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", list(values.items()))

    def put_signatures(self, rows: Iterable[tuple[bytes, str, str, bool, bytes]]) -> None:
        with self._transaction():
            self.conn.executemany(
                "INSERT OR REPLACE INTO signatures VALUES (?, ?, ?, ?, ?)",
                ((d, f, p, int(ok), data) for d, f, p, ok, data in rows),
            )

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def rebuild(self, reason: str) -> None:
        """Set this damaged store aside and go on with a new, empty one, with a warning."""
        self.conn.close()
        if self.path is None:
            self.conn = _connect(None)  # a damaged temporary store: nothing to set aside
            return
        self.conn = _rebuilt(self.path, reason, self.warnings)

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        try:
            with self.conn:
                yield
        except sqlite3.Error as exc:
            reason = _damage(exc)
            if reason is not None:
                raise StoreDamaged(reason, path=str(self.path) if self.path else None) from None
            raise cannot_write(self.path, exc, "write") if self.path else StoreError(
                f"cannot write the signature store: {exc}") from None


def _path_key(path: str) -> str | bytes:
    """How ``files.path`` holds a name: TEXT when it is UTF-8, else its bytes as a BLOB.

    SQLite refuses a str with the lone surrogates os.fsdecode makes of other
    bytes.  A BLOB never equals a TEXT, so the two forms cannot collide, and
    every store written before keeps its rows.
    """
    return path if is_unicode(path) else to_bytes(path)


def _path_of(key: str | bytes) -> str:
    return key if isinstance(key, str) else from_bytes(bytes(key))


def _chunks(items: list, size: int) -> Iterator[list]:
    return (items[i : i + size] for i in range(0, len(items), size))


def _connect(path: Path | None) -> sqlite3.Connection:
    # No path (``--no-cache``): SQLite's private temporary file (""), deleted when the connection
    # closes, not ":memory:".  Both keep nothing after the run, but in memory every row lived in
    # the driver, about 47 KB an image (the keypoint and 96 px rows): 600 MB of a cold check's
    # peak at the 12,887 MRI slices of ``tumor`` (benchmarks/field.py) checked with --no-cache,
    # and in every worker forked after it.  Of the file only SQLite's page cache (2 MB) is held.
    conn = sqlite3.connect("" if path is None else str(path), timeout=30.0)
    try:
        return _prepare(conn, path)
    except BaseException:
        conn.close()
        raise


def _prepare(conn: sqlite3.Connection, path: Path | None) -> sqlite3.Connection:
    # WAL lets a second run read while the first writes; the busy timeout
    # makes concurrent writers wait instead of failing.
    conn.execute("PRAGMA busy_timeout = 30000")
    if path is not None:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    conn.executescript(SCHEMA)
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is None:
        with conn:
            conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
    elif row[0] in _UPGRADABLE:
        with conn:
            conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
    elif row[0] != str(SCHEMA_VERSION):
        raise _SchemaMismatch(row[0])
    if conn.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
        # A new store, or one made before stores were stamped (is_ours proved
        # it by its meta table): from now on its header alone proves it.
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    # A quick read of every table proves the file is a usable store.  One row each, not
    # count(*): counting walks the whole table, a large share of a commit hook at scale
    # (``benchmarks/hook_speed.py``); damage further in is met where it is read, under ``recovering``.
    conn.execute("SELECT 1 FROM files LIMIT 1").fetchone()
    conn.execute("SELECT 1 FROM signatures LIMIT 1").fetchone()
    return conn


_OPEN_ATTEMPTS = 50


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _is_disk(exc: BaseException) -> bool:
    """A full disk or a read-only file system: the disk's problem, not the store's."""
    text = str(exc).lower()
    return "full" in text or "readonly" in text or "read-only" in text


class _SchemaMismatch(Exception):
    pass


# Errors that say nothing about the store's contents: setting the store aside
# would not help (a full disk stays full) or would be wrong (a busy store).
_NOT_DAMAGE = ("SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_FULL", "SQLITE_READONLY", "SQLITE_IOERR",
               "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_NOMEM", "SQLITE_INTERRUPT", "SQLITE_AUTH")
_NOT_DAMAGE_TEXT = ("locked", "busy", "disk is full", "readonly", "disk i/o error", "unable to open",
                    "out of memory", "interrupted", "permission")


def _damage(exc: BaseException) -> str | None:
    """Why ``exc`` shows the store itself damaged, or None when it does not.

    Not damage: a busy, full, read-only or unreachable store, and misuse of
    the sqlite3 API (a bug, which must surface as one).
    """
    if isinstance(exc, StoreDamaged):
        return exc.problem
    if not isinstance(exc, sqlite3.DatabaseError) or isinstance(
        exc, (sqlite3.ProgrammingError, sqlite3.NotSupportedError)
    ):
        return None
    name = getattr(exc, "sqlite_errorname", None)  # Python 3.11+
    if name is not None:
        return None if name.startswith(_NOT_DAMAGE) else str(exc)
    return None if any(w in str(exc).lower() for w in _NOT_DAMAGE_TEXT) else str(exc)


T = TypeVar("T")


def recovering(store: Store, run: Callable[[], T]) -> T:
    """``run()``; when it finds the store damaged, set it aside and run again on a new one.

    The one place a check meets a store damaged beyond what opening it can
    see (a snapshot's overflow pages, a page of signatures, a failed write):
    whatever call it surfaces in, the store is set aside and rebuilt with a
    warning, and the whole check runs again from scratch, so the findings
    never depend on the damage.
    """
    try:
        return run()
    except (sqlite3.DatabaseError, StoreDamaged) as exc:
        reason = _damage(exc)
        if reason is None:
            if isinstance(exc, (sqlite3.ProgrammingError, sqlite3.NotSupportedError)):
                raise  # a bug, not the store: it must surface as an internal error
            if store.path is not None and _is_disk(exc):
                raise cannot_write(store.path, exc, "write") from None
            raise StoreError(
                f"cannot use the signature store: {exc}",
                path=str(store.path) if store.path else None,
                fix="check free disk space and permissions, wait for other leakcheck runs, or pass --no-cache",
            ) from None
        store.rebuild(f"{reason}; found during the check, which ran again from scratch")
    try:
        return run()
    except (sqlite3.DatabaseError, StoreDamaged) as exc:
        raise StoreError(
            f"the signature store failed again after a rebuild: {exc}",
            path=str(store.path) if store.path else None,
            fix="check the disk, or pass --no-cache to check without the store",
        ) from None


def _open_file(path: Path) -> sqlite3.Connection:
    """Connect to our store at ``path``, creating it when nothing is there.

    Raises :class:`StoreError` for anything at ``path`` that is not provably
    ours, and :class:`StoreDamaged` when ours cannot be read.
    """
    check_sidecars(path)
    if not os.path.lexists(path):
        create(path, lambda tmp: _connect(tmp).close())
    if not is_ours(path):
        raise not_ours(path)
    for _ in range(_OPEN_ATTEMPTS):
        try:
            return _connect(path)
        except _SchemaMismatch as exc:
            raise StoreDamaged(f"schema version {exc}", path=str(path)) from None
        except sqlite3.Error as exc:
            # Two runs creating one store race for the switch to WAL, which
            # may fail at once as "locked": that store is busy, not broken.
            if isinstance(exc, sqlite3.OperationalError) and _is_busy(exc):
                time.sleep(0.2)
                continue
            reason = _damage(exc)
            if reason is None:
                raise StoreError(f"cannot open the signature store: {exc}", path=str(path), key="cache",
                                 fix="check the file's permissions and free disk space, or pass --no-cache") from None
            raise StoreDamaged(reason, path=str(path)) from None
    raise StoreError(
        "the signature store stayed locked by another run",
        path=str(path),
        fix="wait for the other leakcheck run to finish, or pass --no-cache",
    )


def _rebuilt(path: Path, reason: str, warnings: list[str]) -> sqlite3.Connection:
    aside = set_aside(path)
    warnings.append(f"{path}: unreadable signature store ({reason}); store set aside ({aside.name}) and rebuilt")
    try:
        return _open_file(path)
    except StoreDamaged as exc:
        raise StoreError(f"cannot create the signature store: {exc.problem}", path=str(path), key="cache") from None


def open_store(path: str | Path | None) -> Store:
    """Open (or create) the store at ``path``; ``None``: a private temporary store, gone when closed.

    Our own store that cannot be read (corrupt, truncated, another schema) is
    renamed to ``<name>.corrupt-<time>`` and rebuilt, with a warning: a cache
    must never be the reason a check fails.  Anything else at ``path`` (a
    folder, the policy, an image, a foreign file) is a :class:`StoreError`
    and stays exactly as it is.
    """
    if path is None:
        return Store(_connect(None), None)
    path = Path(path)
    if trust.committed(path):  # the pull request's, not a run's: never read (trust.py)
        store = Store(_connect(None), None)
        store.warnings.append(trust.warning(path))
        return store
    try:
        own_folder(path.parent)  # with a .gitignore: the first check leaves `git status` clean
    except OSError as exc:
        raise StoreError(
            f"cannot create the cache folder: {exc}",
            path=str(path.parent),
            key="cache",
            fix="point `cache` in the policy at a writable location",
        ) from None
    warnings: list[str] = []
    new = not os.path.lexists(path)
    try:
        conn = _open_file(path)
    except StoreDamaged as exc:
        conn = _rebuilt(path, exc.problem, warnings)
    except StoreError:
        if new:
            remove_new(path)  # made by this run and unusable (a full disk): nothing stays behind
        raise
    store = Store(conn, path)
    store.created = new
    store.warnings.extend(warnings)
    return store


def discard_if_new(store: Store) -> None:
    """Close ``store`` and, when this run made it, remove it: after a failed write (a full disk), nothing stays."""
    store.close()
    if store.created and store.path is not None:
        remove_new(store.path)
