"""Each file's content digest (sha256): from the store where size and mtime match, else read.

The signature stage looks contents up by digest and decodes each new content once.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..dataset.inventory import FileRecord
from ..files import members
from ..files import remote as sources
from ..progress import SILENT, Progress
from ..store.db import Store

#: Files per hashing task: small enough for progress to move, large enough that
#: a task costs much more than its future.
HASH_BATCH = 512


def first_signing(records: Sequence[FileRecord], root: Path | sources.Url, store: Store) -> set[int]:
    """The rows the workers' decode digests, not this process: in a store that holds no signature
    yet, the files of a size no other file has (they cannot be copies).

    Nothing can be looked up by digest then, and reading and hashing such a file here before
    the decode, which reads and hashes it again, only delays the decode (a first check read
    every file twice; ``benchmarks/speed.py``).  Files of a shared size are still hashed first,
    so exact copies share one decode.  Images inside shards are read here, a shard at a time.
    """
    if (sources.is_url(root) or store.has_signatures()
            or any(members.SEP in r.path and members.is_member(r.path) for r in records)):
        return set()
    sizes = Counter(r.size for r in records)
    return {i for i, r in enumerate(records) if sizes[r.size] == 1}


def digests_but(records: Sequence[FileRecord], deferred: set[int], root: Path | sources.Url, store: Store,
                progress: Progress) -> tuple[list[bytes | None], list[int]]:
    """:func:`file_digests` of every row but ``deferred`` (left None, and counted as hashed: the decode digests them)."""
    rest = [i for i in range(len(records)) if i not in deferred]
    part, part_hashed = file_digests([records[i] for i in rest], root, store, progress)
    out: list[bytes | None] = [None] * len(records)
    for k, i in enumerate(rest):
        out[i] = part[k]
    return out, sorted(deferred.union(rest[k] for k in part_hashed))


def _file_digest(path: str) -> bytes | None:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return None
    return h.digest()


def file_digests(records: Sequence[FileRecord], root: Path | sources.Url, store: Store, progress: Progress = SILENT,
             unread: dict[int, str] | None = None) -> tuple[list[bytes | None], list[int]]:
    """Each file's content digest: from the store where size and mtime match, else hashed.

    ``unread`` receives why an image inside a shard could not be read (row -> text).
    """
    unread = {} if unread is None else unread
    paths = [r.path for r in records]
    known = store.lookup_files(paths)
    digests: list[bytes | None] = [None] * len(records)
    to_hash: list[int] = []
    for i, rec in enumerate(records):
        hit = known.get(rec.path)
        if hit and hit[0] == rec.size and hit[1] == rec.mtime_ns:
            digests[i] = hit[2]
        else:
            to_hash.append(i)
    # An object is read once, by the worker that decodes it and returns its
    # digest (decode.sign): hashing here too would download it twice.
    if sources.is_url(root):
        return digests, to_hash
    # hashlib releases the GIL on large buffers, so threads suffice here; one
    # task per batch of files, since after a fresh checkout every file of a
    # large dataset comes here and a future per file costs more than its hash.
    # A real file named `x.tar#a.jpg` is read as the file it is, as read_bytes reads it.
    inside = [i for i in to_hash if members.SEP in paths[i] and members.is_member(paths[i])
              and not os.path.lexists(root / paths[i])]
    if inside:  # images inside shards: each shard read once, not once per member
        unread.update(_member_digests(root, paths, inside, digests, progress))
        hashed = set(inside)
        to_hash_files = [i for i in to_hash if i not in hashed]
    else:
        to_hash_files = to_hash
    if to_hash_files:
        workers = min(8, (os.cpu_count() or 1) * 2)
        prefix = str(root) + os.sep
        # Batches of at most HASH_BATCH files, so that progress moves as they finish.
        size = max(1, min(HASH_BATCH, -(-len(to_hash_files) // workers)))
        batches = [to_hash_files[k:k + size] for k in range(0, len(to_hash_files), size)]
        progress.start("hashing", len(to_hash_files))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            done = pool.map(lambda rows: [_file_digest(prefix + paths[i]) for i in rows], batches)
            for rows, found in zip(batches, done):
                for i, digest in zip(rows, found):
                    digests[i] = digest
                progress.advance(len(rows))
        progress.done()
    return digests, to_hash


def _member_digests(root: Path, paths: list[str], rows: list[int], digests: list[bytes | None],
                    progress: Progress) -> dict[int, str]:
    """Digests of images inside shards, one pass over each shard (members.py); row -> why for unreadable ones."""
    why: dict[int, str] = {}
    by_shard: dict[str, list[int]] = {}
    for i in rows:
        shard, _ = members.split(paths[i])  # type: ignore[misc]
        by_shard.setdefault(shard, []).append(i)
    progress.start("hashing shards", len(rows))
    for shard, idx in by_shard.items():
        found = members.digests(str(root / shard), [members.split(paths[i])[1] for i in idx])  # type: ignore[index]
        for i in idx:
            got = found[members.split(paths[i])[1]]  # type: ignore[index]
            if isinstance(got, bytes):
                digests[i] = got
            else:  # named relative to root, as the finding names the member
                why[i] = got.replace(str(root) + os.sep, "")
        progress.advance(len(idx))
    progress.done()
    return why
