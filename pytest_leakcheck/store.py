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
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from .errors import StoreError
from .names import from_bytes, is_unicode, to_bytes

# Schema history:
#   1: meta, files, signatures (digest, family, params) -> data.
#   2: snapshots: the assembled signature arrays of the last full check, so a
#      warm check of a large dataset reads one row instead of one per file.
#      A version 1 store is upgraded in place (the new table is only added).
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

-- One row per content digest and signal family, e.g. family 'phash' with
-- params 'kind=phash;bits=64;base=64'.  `data` is the packed signal (uint64
-- values stored as raw little-endian bytes), or the error text when `ok` is 0
-- so an unreadable file is not decoded again either.
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
-- digests, hashes, thumbnails), `matches:<fingerprint>` the search results
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
        """The arrays saved under ``key``, or None when absent or unreadable."""
        row = self.conn.execute("SELECT data FROM snapshots WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            with np.load(io.BytesIO(row[0]), allow_pickle=False) as npz:
                return {name: npz[name] for name in npz.files}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile):
            return None  # a derived cache: the caller rebuilds it from the tables

    def save_snapshot(self, key: str, arrays: dict[str, np.ndarray], *, kind: str = "signatures") -> None:
        """Save ``arrays`` under ``key``, replacing every older snapshot of the same ``kind``.

        Keys are ``kind:...`` strings, so the signature arrays and the search
        results each keep one current snapshot.
        """
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        with self._transaction():
            self.conn.execute("DELETE FROM snapshots WHERE substr(key, 1, ?) = ?", (len(kind) + 1, kind + ":"))
            self.conn.execute("INSERT OR REPLACE INTO snapshots VALUES (?, ?)", (key, buf.getvalue()))

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

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        try:
            with self.conn:
                yield
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot write the signature store: {exc}",
                path=str(self.path) if self.path else None,
                fix="check free disk space and permissions, or delete the file to rebuild it",
            ) from None


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
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _connect(path: Path | None) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:" if path is None else str(path), timeout=30.0)
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
    # A quick read of every table proves the file is a usable store.
    conn.execute("SELECT count(*) FROM files").fetchone()
    conn.execute("SELECT count(*) FROM signatures").fetchone()
    return conn


_OPEN_ATTEMPTS = 50


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class _SchemaMismatch(Exception):
    pass


def open_store(path: str | Path | None) -> Store:
    """Open (or create) the store at ``path``; ``None`` keeps it in memory.

    A store that cannot be read (corrupt, truncated, another schema) is
    renamed to ``<name>.corrupt-<time>`` and rebuilt, with a warning: a cache
    must never be the reason a check fails.
    """
    if path is None:
        return Store(_connect(None), None)
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(
            f"cannot create the cache folder: {exc}",
            path=str(path.parent),
            key="cache",
            fix="point `cache` in the policy at a writable location",
        ) from None
    reason = ""
    for _ in range(_OPEN_ATTEMPTS):
        try:
            return Store(_connect(path), path)
        except sqlite3.OperationalError as exc:
            # Two runs creating one store race for the switch to WAL, which
            # may fail at once as "locked": that store is busy, not broken.
            if not _is_busy(exc):
                reason = str(exc)
                break
            time.sleep(0.2)
        except (sqlite3.DatabaseError, _SchemaMismatch) as exc:
            reason = f"schema version {exc}" if isinstance(exc, _SchemaMismatch) else str(exc)
            break
    else:
        raise StoreError(
            "the signature store stayed locked by another run",
            path=str(path),
            fix="wait for the other leakcheck run to finish, or pass --no-cache",
        )
    aside = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
    try:
        os.replace(path, aside)
        for suffix in ("-wal", "-shm"):
            side = Path(str(path) + suffix)
            if side.exists():
                os.replace(side, Path(str(aside) + suffix))
    except OSError as exc:
        raise StoreError(
            f"cannot read the signature store ({reason}) nor move it aside: {exc}",
            path=str(path),
            fix="delete the file; it is a cache and will be rebuilt",
        ) from None
    message = f"{path}: unreadable signature store ({reason}); moved to {aside.name} and rebuilt"
    try:
        store = Store(_connect(path), path)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot create the signature store: {exc}", path=str(path)) from None
    store.warnings.append(message)
    return store
