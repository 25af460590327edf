"""The signature stage: every family the enabled detectors need, computed once per content.

Files whose size and mtime match the store's snapshot of the last full check
are filled in from it with a few array gathers.  The rest are hashed (on
threads), looked up by content digest in the store, and only contents that
lack a family are decoded, once, in worker processes (``decode.sign``), each
computing just the families it lacks.  Only this process writes the store.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .. import detectors
from ..dataset import metagroups
from ..store import keys, pseudonyms, snapshot
from ..files import remote as sources
from ..signals.decode import DECODE_PATH, ERROR_PATH, PIXELS_PARAMS, Failed, SignTask, Unreadable, check_pixels, sign
from ..dataset.inventory import FileRecord
from ..policy.load import Policy
from ..signals.pool import run_map
from ..progress import Progress
from ..signals.families import Family, Signatures
from ..store.db import Store
from .decoded_rows import FreshRows
from .digests import digests_but, file_digests, first_signing

if TYPE_CHECKING:
    from .options import RunOptions

#: Cached results per content: family name -> {digest: (ok, bytes)}.
Cached = dict[str, dict[bytes, tuple[bool, bytes]]]
#: Decode results written per store transaction, as they arrive: a run that
#: dies (driver or worker) keeps what was written, and a rerun resumes there.
#: About 160 photos of 13 rows: fewer rows per transaction make more commits, and
#: each commit rewrites the leaf pages it touched into the WAL again (a cold
#: check's time is measured by ``benchmarks/speed.py``).
FLUSH = 2048


def fingerprint(policy: Policy) -> str:
    """A short hash of every signature parameter: a cache key for the store.

    Two policies with the same fingerprint compute the same signatures, so a
    CI cache saved under one is valid for the other.
    """
    return keys.fingerprint(detectors.families(policy), DECODE_PATH, PIXELS_PARAMS)


def compute(
    records: Sequence[FileRecord],
    policy: Policy,
    store: Store,
    opts: RunOptions,
    *,
    update_snapshot: bool = True,
) -> Signatures:
    """Signatures for ``records``, decoding only files whose content is new.

    ``opts`` says how many workers, on which executor (connected: :func:`run.run`
    connects an address), and who hears of progress.  ``update_snapshot=False``
    (focus checks: a commit hook, a pull request) reads the snapshot but leaves
    it as it is.
    """
    t0 = time.perf_counter()
    fams = detectors.families(policy)
    if metagroups.rules(policy):  # read in the same decode, kept by content like any signal
        fams += metagroups.families(policy, pseudonyms.key(store.path))
    key = keys.signatures(fams, policy.files.max_pixels)
    snap = store.load_snapshot(key)
    hits = np.full(len(records), -1, dtype=np.int64)
    index: dict[str, int] = {}
    if snap is not None:
        index = {p: k for k, p in enumerate(snapshot.paths(snap))}
        size, mtime = snap["size"], snap["mtime_ns"]
        for i, rec in enumerate(records):
            k = index.get(rec.path, -1)
            if k >= 0 and size[k] == rec.size and mtime[k] == rec.mtime_ns:
                hits[i] = k
    rehashed = retimed = 0
    if snap is not None and not sources.is_url(policy.root):
        retimed, rehashed = _same_content(records, hits, _Last(snap, index), store, policy.root, opts.progress)
    rest = np.flatnonzero(hits < 0)
    sub = _compute_rows([records[i] for i in rest], fams, policy, store, opts)
    sub.stats["hashed"] += rehashed
    sigs = sub if snap is None or len(rest) == len(records) else snapshot.merge(sub, rest, snap, hits)
    sigs.stats["files"] = len(records)
    sigs.stats["reused"] += int((hits >= 0).sum())
    sigs.stats["seconds_hash"] = round(sigs.stats["seconds_hash"] + (time.perf_counter() - t0)
                                       - sub.stats["seconds_total"], 3)
    del sigs.stats["seconds_total"]
    changed = snap is None or len(rest) > 0 or retimed > 0 or len(snap["size"]) != len(records)
    if update_snapshot and changed:
        store.save_snapshot(key, snapshot.arrays([r.path for r in records], [r.size for r in records],
                                                 [r.mtime_ns for r in records], sigs))
    return sigs


@dataclass(frozen=True)
class _Last:
    """The snapshot of the last full check, and the snapshot row of each of its paths."""

    snap: dict[str, np.ndarray]
    index: dict[str, int]


def _same_content(records: Sequence[FileRecord], hits: np.ndarray, last: _Last, store: Store, root: Path,
                  progress: Progress) -> tuple[int, int]:
    """Rows the snapshot holds under the same path and size but another mtime, whose content
    is unchanged: taken from the snapshot too (``hits`` updated in place); returns how many
    rows were taken so, and how many files were hashed.

    After ``actions/checkout`` with a store restored from the cache every file
    has a new mtime: without this each would be hashed *and* its families read
    from the store one content at a time (about half of a pull request's check
    at 50,000 images, measured by ``benchmarks/pr_speed.py``).  Hashing is unavoidable (only the content says it is
    unchanged); the rows then come from the snapshot in a few gathers.  The
    new mtimes go to the file table, so the next run does not hash them again.
    """
    snap, index = last.snap, last.index
    size = snap["size"]
    rows = [i for i in np.flatnonzero(hits < 0).tolist()
            if (k := index.get(records[i].path, -1)) >= 0 and size[k] == records[i].size]
    if not rows:
        return 0, 0
    digests, hashed = file_digests([records[i] for i in rows], root, store, progress)
    snap_digest, taken = snap["digest"], 0
    for i, d in zip(rows, digests):
        k = index[records[i].path]
        if d is not None and snap_digest[k].tobytes() == d:
            hits[i], taken = k, taken + 1
    store.put_files([(records[rows[j]].path, records[rows[j]].size, records[rows[j]].mtime_ns, digests[j])
                     for j in hashed if digests[j] is not None])
    return taken, len(hashed)


def _compute_rows(
    records: Sequence[FileRecord],
    fams: tuple[Family, ...],
    policy: Policy,
    store: Store,
    opts: RunOptions,
) -> Signatures:
    """Signatures from the per-file tables, decoding only contents they lack."""
    t0 = time.perf_counter()
    unread: dict[int, str] = {}
    deferred = first_signing(records, policy.root, store)
    if deferred:
        digests, to_hash = digests_but(records, deferred, policy.root, store, opts.progress)
    else:
        digests, to_hash = file_digests(records, policy.root, store, opts.progress, unread)
    hashed = {i for i in to_hash if digests[i] is not None}  # the rest digested by the workers' decode
    t_hash = time.perf_counter()
    # Whether a file is a "bomb" depends on files.max_pixels, so cached
    # errors are only valid for the limit they were found under.
    error_params = keys.error_params(ERROR_PATH, policy.files.max_pixels)
    wanted = [(f.name, f.params) for f in fams] + [keys.DIMS, ("error", error_params)]
    cached: Cached = store.get_families([d for d in digests if d], wanted)
    fresh_rows = FreshRows(len(records), {f.name: f.row_bytes for f in fams} | {keys.DIMS[0]: 16},
                           {f.name for f in fams if f.variable})
    decoding = _Decoding(records, digests, cached, fams, policy, store, opts, error_params, fresh_rows, deferred)
    decoding.run()
    new_files = [(rec.path, rec.size, rec.mtime_ns, digests[i])
                 for i, rec in enumerate(records) if i in hashed and digests[i] is not None]
    if new_files:
        store.put_files(new_files)
    t_decode = time.perf_counter()
    sigs = _assemble(digests, cached, fams, policy.files.max_pixels, fresh_rows)
    sigs.errors.update(decoding.gone)
    sigs.errors.update(unread)
    sigs.stats.update({
        "files": len(records),
        "hashed": len(to_hash),
        "decoded": len(decoding.decoded),
        # Files whose signatures all came from the store, renamed copies included.
        "reused": sum(1 for d in digests if d is not None and d not in decoding.decoded),
        "seconds_hash": round(t_hash - t0, 3),
        "seconds_decode": round(t_decode - t_hash, 3),
        "seconds_total": time.perf_counter() - t0,
    })
    return sigs


@dataclass
class _Decoding:
    """The decode of each content that lacks a family, once, computing only what it lacks.

    Fills ``fresh_rows`` (errors: ``cached``) and the store; ``decoded`` ends as the digests
    decoded, ``gone`` as the rows whose file vanished between hashing and decoding (row -> why).
    Copies share one decode; when the copy chosen for it vanished or changed, another copy of
    that content is decoded in a further round.
    """

    records: Sequence[FileRecord]
    digests: list[bytes | None]
    cached: Cached
    fams: tuple[Family, ...]
    policy: Policy
    store: Store
    opts: RunOptions
    error_params: str
    fresh_rows: FreshRows
    #: Rows digested by the decode, not before it (``digests.first_signing``; in object storage, all).
    deferred: set[int] = field(default_factory=set)
    decoded: set[bytes] = field(default_factory=set)
    gone: dict[int, str] = field(default_factory=dict)
    #: Rows already given to a decode: a further round tries another copy, never the same file.
    tried: set[int] = field(default_factory=set)
    #: Written at the next flush(): signatures, and the files whose content a decode found.
    new_sigs: list[tuple[bytes, str, str, bool, bytes]] = field(default_factory=list)
    new_files: list[tuple[str, int, int, bytes]] = field(default_factory=list)

    def run(self) -> None:
        """Every round, until no content lacks a family (or every copy of it was tried)."""
        _from_dims(self.cached, self.fams, self.store)
        while True:
            rows, tasks = self.tasks()
            if not tasks:
                return
            self.tried.update(rows)
            self.round(rows, tasks)

    def tasks(self) -> tuple[list[int], list[SignTask]]:
        """The rows to decode in the next round, one per content, and what each lacks."""
        cached, fams, policy = self.cached, self.fams, self.policy
        names = [f.name for f in fams] + [keys.DIMS[0]]
        remote = sources.is_url(policy.root)  # unknown digests come back from the decode
        complete = set(cached[names[0]]).intersection(*(cached[n] for n in names[1:]))
        header = tuple(f for f in fams if f.header)
        # Readable contents no family is stored for (all of a cold check's) lack every family: one
        # tuple for them all, not one built per content by testing each family, and pickled once
        # per chunk of tasks.
        some = set().union(*(cached[f.name] for f in fams))
        tasks: list[SignTask] = []
        rows: list[int] = []
        seen: set[bytes] = set()
        for i, d in enumerate(self.digests):
            unreadable = d in cached["error"]
            if (i in self.tried or (d is None and not remote and i not in self.deferred) or d in complete or d in seen
                    or (unreadable and all(d in cached[f.name] for f in header)) or d in self.fresh_rows.row):
                continue
            if d is not None:
                seen.add(d)
            # A new thumbnail size must not recompute (and rewrite) the perceptual hashes; an
            # unreadable content is only read for its header (a patient id stored before v2 read it).
            missing = fams if not unreadable and d not in some else tuple(
                f for f in (header if unreadable else fams) if d not in cached[f.name])
            rows.append(i)
            tasks.append(SignTask(str(policy.root / self.records[i].path), policy.files.max_pixels, missing))
        return rows, tasks

    def round(self, rows: list[int], tasks: list[SignTask]) -> None:
        """Decode ``tasks`` (one per row of ``rows``) in the workers, writing results as they arrive."""
        records, digests, cached, progress = self.records, self.digests, self.cached, self.opts.progress
        params = {f.name: f.params for f in self.fams} | {keys.DIMS[0]: keys.DIMS[1]}
        progress.start("decoding", len(tasks))
        # Results first in zip: the last next() on them lets run_map's own pool shut down.
        for (digest, ok, result), i in zip(run_map(sign, tasks, self.opts.pool, self.opts.jobs), rows):
            progress.advance()
            if not digest:
                # Listed (and hashed, or left to this read), gone before its decode: unreadable
                # now, and nothing about it is cached, so the next run sees it afresh.
                if digests[i] is not None or i in self.deferred:
                    self.gone[i] = result.why  # type: ignore[union-attr]
                    digests[i] = None
                continue
            self.decoded.add(digest)
            changed = digest != digests[i]
            if changed:
                # The file changed between hashing and decoding (or, in object
                # storage, was not hashed here); trust the bytes decoded.
                digests[i] = digest
                self.new_files.append((records[i].path, records[i].size, records[i].mtime_ns, digest))
            if ok:
                assert isinstance(result, dict)
                for name, data in result.items():
                    self.new_sigs.append((digest, name, params[name], True, data))
                self.fresh_rows.put(i, digest, result)  # into the row buffers, not a dict of bytes (decoded_rows.py)
                if changed and not all(digest in cached[n] or n in result for n in params):
                    # Only the families the old content lacked were computed: judge
                    # the new bytes next time, call the file unreadable for now.
                    self.gone[i] = "file changed while being checked; run the check again"
                    digests[i] = None
            else:
                assert isinstance(result, Failed)
                cached["error"][digest] = (False, result.why.encode("utf-8", "surrogateescape"))
                self.new_sigs.append((digest, "error", self.error_params, False, cached["error"][digest][1]))
                for name, data in result.header.items():  # its patient id all the same (Family.header)
                    cached[name][digest] = (True, data)
                    self.new_sigs.append((digest, name, params[name], True, data))
            if len(self.new_sigs) >= FLUSH:
                self.flush()
        progress.done()
        self.flush()

    def flush(self) -> None:
        """Write what has arrived to the store, and forget it."""
        _flush(self.store, self.new_sigs, self.new_files)


def _from_dims(cached: Cached, fams: tuple[Family, ...], store: Store) -> None:
    """Rows of families that a stored content's size decides (``Family.from_dims``), without a decode.

    A family added in an upgrade (aligned's fine square) would otherwise decode every cached
    file again, though for small images (CIFAR's 32 px) its row is an empty marker.
    """
    new_sigs: list[tuple[bytes, str, str, bool, bytes]] = []
    for f in fams:
        if f.from_dims is None:
            continue
        for d, (ok, dims) in cached[keys.DIMS[0]].items():  # read from the store: nothing is decoded yet
            if ok and d not in cached[f.name] and len(dims) == 16:
                row = f.from_dims(*struct.unpack("<qq", dims))
                if row is not None:
                    cached[f.name][d] = (True, row)
                    new_sigs.append((d, f.name, f.params, True, row))
    _flush(store, new_sigs, [])


def _flush(store: Store, sigs: list[tuple[bytes, str, str, bool, bytes]],
           files: list[tuple[str, int, int, bytes]]) -> None:
    """Write what has arrived (signatures before the files that point at them) and forget it."""
    if sigs:
        store.put_signatures(sigs)
        sigs.clear()
    if files:
        store.put_files(files)
        files.clear()


def _assemble(digests: list[bytes | None], cached: Cached, fams: tuple[Family, ...], max_pixels: int,
              decoded: FreshRows) -> Signatures:
    """Row-aligned arrays from the rows decoded now and the per-content cache: a gather and a join per family.

    Consumes both: each family's buffer and entries are dropped once assembled."""
    n = len(digests)
    valid = np.zeros(n, dtype=bool)
    dims = np.zeros((n, 2), dtype=np.int64)
    arrays = {name: np.zeros((n, width), dtype=dtype) for f in fams for name, dtype, width in f.layout}
    errors: dict[int, str] = {}
    ok_rows: list[int] = []
    for i, d in enumerate(digests):
        if d is None:
            errors[i] = "cannot read file"
        elif d in cached["error"]:
            errors[i] = cached["error"][d][1].decode("utf-8", "surrogateescape")
        else:
            ok_rows.append(i)
    _headers_of_unreadable([i for i in errors if digests[i] is not None], digests, cached, fams, decoded, arrays)
    if ok_rows:
        ix = np.array(ok_rows)
        src = decoded.sources(digests, ok_rows)

        def column(name: str, width: int, head: bool = False) -> np.ndarray:
            out = decoded.column(name, src, ix, cached[name], digests, head)
            decoded.drop(name)
            cached.pop(name, None)
            return out

        dims[ix] = np.ascontiguousarray(column("dims", 16)).view("<i8").reshape(-1, 2)
        # Smallest rows first: a family's bytes cost more in per-entry overhead than in
        # payload when its rows are small (eight 8-byte hashes: 1.6 million entries at
        # 200,000 images), and they are gone before the widest family is joined and copied.
        for f in sorted(fams, key=lambda f: f.row_bytes):
            for name, arr in f.unpack(column(f.name, f.row_bytes, f.variable)).items():
                arrays[name][ix] = arr
        valid[ix] = True
        header = {name for f in fams if f.header for name, _, _ in f.layout}
        # Signatures cached under a higher limit must not let a bomb through.
        for i in ix[dims[ix, 0] * dims[ix, 1] > max_pixels]:
            try:
                check_pixels(int(dims[i, 0]), int(dims[i, 1]), max_pixels)
            except Unreadable as exc:
                errors[int(i)] = str(exc)
                valid[i] = False
                for name, arr in arrays.items():
                    if name not in header:  # what its header says holds for a bomb too
                        arr[i] = 0
    return Signatures(tuple(d or b"" for d in digests), valid, errors, dims, arrays, {})


def _headers_of_unreadable(rows: list[int], digests: list[bytes | None], cached: Cached, fams: tuple[Family, ...],
                           decoded: FreshRows, arrays: dict[str, np.ndarray]) -> None:
    """The header families (``Family.header``) of ``rows``, files whose pixels failed, into ``arrays``:
    a patient's file that no decoder reads keeps its group, so its group-split finding holds."""
    for f in fams:
        if not f.header:
            continue
        have = [i for i in rows if decoded.holds(f.name, digests[i]) or digests[i] in cached[f.name]]
        if not have:
            continue
        ix = np.array(have)
        column = decoded.column(f.name, decoded.sources(digests, have), ix, cached[f.name], digests, False)
        for name, arr in f.unpack(column).items():
            arrays[name][ix] = arr
