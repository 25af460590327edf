"""Compute image signatures once, and reuse them from the store ever after.

Every signal comes from one decode path: JPEG draft mode to a small RGB
image, EXIF orientation applied, squashed to a ``BASE`` x ``BASE`` grey
square.  Draft and full decodes give perceptual hashes a few bits apart, so
the path is part of every parameter fingerprint; only the identical-pixels
check needs a full decode, and only for candidate files.  High-depth
and huge images, and the memory bound, are decode.py's.
"""

from __future__ import annotations

import hashlib
import os
import struct
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
from PIL import Image

from . import decode
from .decode import Unreadable, open_image
from .decode import check_pixels as _check_pixels
from .inventory import FileRecord
from .policy import ORIENTATIONS, Policy
from .store import Store

#: Side of the grey square every signal is computed from.
BASE = 64
# JPEG draft target: libjpeg decodes at 1/8 scale while both sides stay >= 32,
# which is four times cheaper than a full decode and plenty for 64-bit hashes
# and 16 px thumbnails.
DRAFT = 32
#: Changes whenever the decode path changes, invalidating cached signals.
DECODE_PATH = f"draft{DRAFT}-{decode.PATH}-rgb-exif-lanczos{BASE}-v2"
# v2: high-depth images digest their original values, not Pillow's clipped 8 bits.
PIXELS_PARAMS = "rgba-exif-v2"

TRANSPOSE = {
    "identity": None,
    "hflip": Image.Transpose.FLIP_LEFT_RIGHT,
    "vflip": Image.Transpose.FLIP_TOP_BOTTOM,
    "rot90": Image.Transpose.ROTATE_90,
    "rot180": Image.Transpose.ROTATE_180,
    "rot270": Image.Transpose.ROTATE_270,
    "transpose": Image.Transpose.TRANSPOSE,
    "transverse": Image.Transpose.TRANSVERSE,
}


@dataclass(frozen=True)
class Spec:
    """What a worker needs to sign one file: small and cheap to pickle."""

    kind: str
    bits: int
    thumb_size: int
    max_pixels: int
    #: (family, params) pairs to compute, e.g. ("hash:hflip", "phash;64;...").
    wanted: tuple[tuple[str, str], ...] = ()

    @property
    def hash_size(self) -> int:
        return round(self.bits**0.5)


@dataclass(frozen=True)
class Family:
    """One cached signal.  ``name`` is ``compute[:argument]``, e.g. ``hash:rot90``."""

    name: str
    params: str


def _hash_input(img: Image.Image, spec: Spec) -> Image.Image:
    # phash works on a 4 x hash_size square; resizing once here serves every
    # orientation.
    if spec.kind == "phash":
        side = spec.hash_size * 4
        return img.resize((side, side), Image.Resampling.LANCZOS)
    return img


@lru_cache(maxsize=4)
def _dct_matrix(n: int) -> np.ndarray:
    """scipy's unnormalised DCT-II as a matrix: y = C @ x."""
    k = np.arange(n)
    return 2.0 * np.cos(np.pi * k[:, None] * (2 * k[None, :] + 1) / (2 * n))


def phash_bits(img: Image.Image, hash_size: int) -> np.ndarray:
    """``imagehash.phash(img, hash_size).hash``, bit for bit, without scipy.

    The same arithmetic as imagehash (grey, LANCZOS to 4 x hash_size, DCT-II
    over rows then columns, low block against its median) as two small
    matmuls.  Importing scipy.fftpack costs about 0.3 s, more than a commit
    hook can spend on one image; a test pins equality with imagehash.
    """
    side = hash_size * 4
    grey = img.convert("L")
    if grey.size != (side, side):
        grey = grey.resize((side, side), Image.Resampling.LANCZOS)
    c = _dct_matrix(side)
    dct = c @ np.asarray(grey, dtype=np.float64) @ c.T
    low = dct[:hash_size, :hash_size]
    return low > np.median(low)


def _hash(img: Image.Image, spec: Spec, orientation: str) -> bytes:
    op = TRANSPOSE[orientation]
    oriented = img if op is None else img.transpose(op)
    if spec.kind == "phash":
        bits = phash_bits(oriented, spec.hash_size)
    else:
        import imagehash  # whash pulls in PyWavelets; only workers need it

        fn = {"dhash": imagehash.dhash, "ahash": imagehash.average_hash, "whash": imagehash.whash}[spec.kind]
        bits = np.asarray(fn(oriented, hash_size=spec.hash_size).hash, dtype=bool)
    return np.packbits(bits.ravel()).tobytes()


def _thumb(img: Image.Image, spec: Spec, _: str) -> bytes:
    side = spec.thumb_size
    return np.asarray(img.resize((side, side), Image.Resampling.BOX), dtype=np.uint8).tobytes()


def _desc(img: Image.Image, spec: Spec, _: str) -> bytes:
    from .aligned import describe  # only checks with the aligned detector on need it

    out = describe(np.asarray(img))
    return b"".join(out[d].tobytes() for d in DESCRIPTORS)


#: How each family is computed from the decoded base square (``desc``: from
#: the small colour square); new detectors register their descriptors here.
COMPUTE: dict[str, Callable[[Image.Image, Spec, str], bytes]] = {"hash": _hash, "thumb": _thumb, "desc": _desc}
#: Side of the colour square the ``desc`` families are computed from.
COLOUR = 32
#: Descriptors of the aligned detector, stored together as one ``desc`` family,
#: with their dtype and values per image.
DESCRIPTORS = {"grey32": (np.uint8, 1024), "colour8": (np.uint8, 192), "hog": (np.float16, 128)}


def families(policy: Policy) -> tuple[Family, ...]:
    """The signal families this policy needs, each with its parameter fingerprint.

    Hashes are stored per orientation, so adding an augmentation computes only
    the new orientation and keeps everything else.
    """
    ph = policy.detectors.phash
    hashes = tuple(
        Family(f"hash:{o}", f"{ph.kind};{ph.bits};{DECODE_PATH}") for o in search_orientations(policy)
    )
    out = (*hashes, Family("thumb", f"{policy.detectors.thumbnail.size};{DECODE_PATH}"))
    if policy.detectors.aligned.severity != "off":
        out += (Family("desc", f"{'+'.join(DESCRIPTORS)};rgb{COLOUR}-box;{DECODE_PATH};v1"),)
    return out


_INVERSE = {"rot90": "rot270", "rot270": "rot90"}


def search_orientations(policy: Policy) -> tuple[str, ...]:
    """Orientations to hash: the policy's, closed under inverse.

    Only one side of each pair is queried in each orientation, so an
    orientation must come with its inverse for "test = rot90(train)" and the
    reverse to match alike.
    """
    names = set(policy.orientations)
    names |= {_INVERSE[n] for n in names if n in _INVERSE}
    return tuple(o for o in ORIENTATIONS if o in names)


def spec(policy: Policy, wanted: tuple[tuple[str, str], ...] = ()) -> Spec:
    ph = policy.detectors.phash
    return Spec(ph.kind, ph.bits, policy.detectors.thumbnail.size, policy.files.max_pixels, wanted)


def fingerprint(policy: Policy) -> str:
    """A short hash of every signature parameter: a cache key for the store.

    Two policies with the same fingerprint compute the same signatures, so a
    CI cache saved under one is valid for the other.
    """
    parts = [f"{f.name}={f.params}" for f in families(policy)]
    parts += ["dims=v1", f"error={DECODE_PATH}", f"pixels={PIXELS_PARAMS}"]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Signatures:
    """Arrays row-aligned to the inventory's records."""

    digests: tuple[bytes, ...]
    valid: np.ndarray  # (N,) bool: decoded fine
    errors: dict[int, str]  # row -> why it could not be decoded
    dims: np.ndarray  # (N, 2) int64 width, height after EXIF orientation
    phash: np.ndarray  # (N, 8, W) uint64 in ORIENTATIONS order; unsearched orientations are 0
    thumb: np.ndarray  # (N, S*S) uint8 grey thumbnail
    stats: dict[str, float] = field(default_factory=dict)
    #: Aligned-detector descriptors by name (see DESCRIPTORS), when it is enabled.
    desc: dict[str, np.ndarray] = field(default_factory=dict)


# --------------------------------------------------------------------------
# Decoding (runs in worker processes)


def _decode(
    data: bytes, max_pixels: int, colour: int = 0
) -> tuple[Image.Image, tuple[int, int], Image.Image | None]:
    """The one decode path for every cached signal: small, grey, upright.

    Returns the base square, the image's true size after EXIF orientation,
    and with ``colour`` a ``colour`` x ``colour`` RGB square from the same
    decode (descriptors that need colour; the grey path is unchanged).
    """
    img = open_image(data, max_pixels)
    w, h = img.size
    # Draft first: the memory bound applies to what is decoded, and reading
    # the EXIF of some formats (PNG) decodes the whole image.
    img.draft("RGB", (DRAFT, DRAFT))
    decode.check_memory(img)
    orient = decode.orientation(img)
    if orient in (5, 6, 7, 8):  # orientations that swap the axes
        w, h = h, w
    rgb = decode.upright_rgb(img, orient)
    small = rgb.resize((colour, colour), Image.Resampling.BOX) if colour else None
    return rgb.convert("L").resize((BASE, BASE), Image.Resampling.LANCZOS, reducing_gap=3.0), (w, h), small


def _sign(task: tuple[str, Spec]) -> tuple[bytes, bool, dict[str, bytes] | str]:
    """Read, digest and decode one file.  Never raises: errors become text."""
    path, sp = task
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        return b"", False, f"cannot read file: {exc.strerror or exc}"
    digest = hashlib.sha256(data).digest()
    if not data:
        return digest, False, "zero-byte file"
    try:
        # Pillow warns about damaged metadata (bad TIFF tags, corrupt EXIF);
        # those are noise on the user's terminal, never a finding.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            wants_colour = any(name == "desc" for name, _ in sp.wanted)
            base, size, small = _decode(data, sp.max_pixels, colour=COLOUR if wants_colour else 0)
        out = {"dims": struct.pack("<qq", *size)}
        hash_input = None
        for name, _ in sp.wanted:
            compute, _, arg = name.partition(":")
            if compute == "dims":
                continue
            img = base
            if compute == "desc":
                img = small
            elif compute == "hash":
                hash_input = hash_input or _hash_input(base, sp)
                img = hash_input
            out[name] = COMPUTE[compute](img, sp, arg)
        return digest, True, out
    except Unreadable as exc:
        return digest, False, str(exc)
    except Image.UnidentifiedImageError:
        return digest, False, "not an image Pillow can identify (wrong suffix, or corrupt header)"
    except Exception as exc:
        # Pillow's parsers raise almost any type on hostile bytes (a TIFF tag
        # of the wrong type gives TypeError): all of them mean a damaged file.
        return digest, False, f"corrupt or truncated image: {exc}"


def _pixel_digest(task: tuple[str, int]) -> tuple[bool, bytes]:
    path, max_pixels = task
    try:
        data = Path(path).read_bytes()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            img = open_image(data, max_pixels)
            decode.check_memory(img)
            return True, decode.pixel_digest(img, decode.orientation(img))
    except Exception as exc:  # any decode failure: the pair is simply not identical
        return False, str(exc).encode()


# --------------------------------------------------------------------------
# Orchestration (main process)


def _file_digest(path: str) -> bytes | None:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return None
    return h.digest()


def default_executor(jobs: int | None, tasks: int) -> Executor | None:
    """A process pool when the work is worth one; ``None`` means run inline."""
    jobs = jobs or os.cpu_count() or 1
    if jobs <= 1 or tasks < 4 * jobs:
        return None
    return ProcessPoolExecutor(max_workers=jobs)


def _map(fn: Callable, items: Sequence, executor: Executor | None, jobs: int | None) -> Iterable:
    if executor is not None:
        return executor.map(fn, items, chunksize=max(1, min(64, len(items) // (4 * (jobs or 2)) or 1)))
    own = default_executor(jobs, len(items))
    if own is None:
        return map(fn, items)
    with own:
        return list(own.map(fn, items, chunksize=max(1, min(64, len(items) // (4 * (jobs or 2)) or 1))))


def compute(
    records: Sequence[FileRecord],
    policy: Policy,
    store: Store,
    *,
    jobs: int | None = None,
    executor: Executor | None = None,
    update_snapshot: bool = True,
) -> Signatures:
    """Signatures for ``records``, decoding only files whose content is new.

    Files whose size and mtime match the store's snapshot of the last full
    check are filled in from it with a few array gathers; only the rest go
    through the per-file tables.  ``update_snapshot=False`` (focus checks: a
    commit hook, a pull request) reads the snapshot but leaves it as it is.
    """
    from . import snapshot  # it builds on this module's Signatures

    t0 = time.perf_counter()
    key = snapshot.key(policy)
    snap = store.load_snapshot(key)
    hits = np.full(len(records), -1, dtype=np.int64)
    if snap is not None:
        index = {p: k for k, p in enumerate(snap["paths"].tobytes().decode().split("\0"))}
        size, mtime = snap["size"], snap["mtime_ns"]
        for i, rec in enumerate(records):
            k = index.get(rec.path, -1)
            if k >= 0 and size[k] == rec.size and mtime[k] == rec.mtime_ns:
                hits[i] = k
    rest = np.flatnonzero(hits < 0)
    sub = _compute_rows([records[i] for i in rest], policy, store, jobs=jobs, executor=executor)
    sigs = sub if snap is None or len(rest) == len(records) else snapshot.merge(sub, rest, snap, hits)
    sigs.stats["files"] = len(records)
    sigs.stats["reused"] += int((hits >= 0).sum())
    sigs.stats["seconds_hash"] = round(sigs.stats["seconds_hash"] + (time.perf_counter() - t0)
                                       - sub.stats["seconds_total"], 3)
    del sigs.stats["seconds_total"]
    changed = snap is None or len(rest) > 0 or len(snap["size"]) != len(records)
    if update_snapshot and changed:
        store.save_snapshot(key, snapshot.arrays(records, sigs))
    return sigs


def _compute_rows(
    records: Sequence[FileRecord],
    policy: Policy,
    store: Store,
    *,
    jobs: int | None = None,
    executor: Executor | None = None,
) -> Signatures:
    """Signatures from the per-file tables, decoding only contents they lack."""
    t0 = time.perf_counter()
    root = policy.root
    fams = families(policy)
    n = len(records)
    paths = [r.path for r in records]
    known = store.lookup_files(paths)
    digests: list[bytes | None] = [None] * n
    to_hash: list[int] = []
    for i, rec in enumerate(records):
        hit = known.get(rec.path)
        if hit and hit[0] == rec.size and hit[1] == rec.mtime_ns:
            digests[i] = hit[2]
        else:
            to_hash.append(i)
    # hashlib releases the GIL on large buffers, so threads suffice here; one
    # task per batch of files, since after a fresh checkout every file of a
    # large dataset comes here and a future per file costs more than its hash.
    if to_hash:
        workers = min(8, (os.cpu_count() or 1) * 2)
        prefix = str(root) + os.sep
        batches = [to_hash[k::workers] for k in range(workers)]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            done = pool.map(lambda rows: [_file_digest(prefix + paths[i]) for i in rows], batches)
            for rows, found in zip(batches, done):
                for i, digest in zip(rows, found):
                    digests[i] = digest
    t_hash = time.perf_counter()

    fams = (*fams, Family("dims", "v1"))
    present = [d for d in digests if d]
    # Whether a file is a "bomb" depends on files.max_pixels, so cached
    # errors are only valid for the limit they were found under.
    error_params = f"{DECODE_PATH};max_pixels={policy.files.max_pixels}"
    cached = store.get_families(present, [(f.name, f.params) for f in fams] + [("error", error_params)])
    # Contents with every family cached, found with set operations rather
    # than a per-family test per file: most of a warm check is this case.
    complete = set(cached[fams[0].name]).intersection(*(cached[f.name] for f in fams[1:]))

    # One task per distinct content, computing only the families it lacks.
    tasks: list[tuple[str, Spec]] = []
    rows: list[int] = []
    seen: set[bytes] = set()
    for i, d in enumerate(digests):
        if d is None or d in complete or d in seen or d in cached["error"]:
            continue
        seen.add(d)
        # Only the families missing for this content are computed: a new
        # thumbnail size must not recompute (and rewrite) the perceptual hashes.
        missing = tuple((f.name, f.params) for f in fams if d not in cached[f.name])
        if missing:
            rows.append(i)
            tasks.append((str(root / paths[i]), spec(policy, missing)))
    new_sigs: list[tuple[bytes, str, str, bool, bytes]] = []
    params = {f.name: f.params for f in fams}
    decoded = 0
    fresh: set[bytes] = set()
    for i, (digest, ok, result) in zip(rows, _map(_sign, tasks, executor, jobs)):
        decoded += 1
        fresh.add(digest)
        if digest and digest != digests[i]:
            # The file changed between hashing and decoding; trust the bytes decoded.
            digests[i] = digest
        if ok:
            assert isinstance(result, dict)
            for name, data in result.items():
                cached[name][digest] = (True, data)
                new_sigs.append((digest, name, params[name], True, data))
        elif digest:
            cached["error"][digest] = (False, str(result).encode())
            new_sigs.append((digest, "error", error_params, False, str(result).encode()))
    hashed = set(to_hash)
    new_files = [
        (rec.path, rec.size, rec.mtime_ns, digests[i])
        for i, rec in enumerate(records)
        if i in hashed and digests[i] is not None
    ]
    if new_sigs:
        store.put_signatures(new_sigs)
    if new_files:
        store.put_files(new_files)
    t_decode = time.perf_counter()

    words = policy.detectors.phash.bits // 64
    side = policy.detectors.thumbnail.size
    orients = [(k, f"hash:{o}") for k, o in enumerate(ORIENTATIONS) if f"hash:{o}" in cached]
    valid = np.zeros(n, dtype=bool)
    dims = np.zeros((n, 2), dtype=np.int64)
    phash = np.zeros((n, len(ORIENTATIONS), words), dtype=np.uint64)
    thumb = np.zeros((n, side * side), dtype=np.uint8)
    wanted_desc = DESCRIPTORS if any(f.name == "desc" for f in fams) else {}
    desc = {d: np.zeros((n, size), dtype=dtype) for d, (dtype, size) in wanted_desc.items()}
    errors: dict[int, str] = {}
    ok_rows: list[int] = []
    for i, d in enumerate(digests):
        if d is None:
            errors[i] = "cannot read file"
        elif d in cached["error"]:
            errors[i] = cached["error"][d][1].decode(errors="replace")
        else:
            ok_rows.append(i)
    if ok_rows:
        # One join and one frombuffer per signal, not one per row: at 50,000
        # cached files the per-row version dominated a warm check.
        def column(name: str) -> np.ndarray:
            sig = cached[name]
            return np.frombuffer(b"".join([sig[digests[i]][1] for i in ok_rows]), dtype=np.uint8)  # type: ignore[index]

        ix = np.array(ok_rows)
        dims[ix] = column("dims").view("<i8").reshape(-1, 2)
        thumb[ix] = column("thumb").reshape(-1, side * side)
        for k, name in orients:
            phash[ix, k] = column(name).view(np.uint64).reshape(-1, words)
        if desc:
            packed = column("desc").reshape(len(ix), -1)
            at = 0
            for arr in desc.values():
                width = arr.shape[1] * arr.itemsize
                arr[ix] = packed[:, at:at + width].copy().view(arr.dtype)
                at += width
        valid[ix] = True
        # Signatures cached under a higher limit must not let a bomb through.
        for i in ix[dims[ix, 0] * dims[ix, 1] > policy.files.max_pixels]:
            try:
                _check_pixels(int(dims[i, 0]), int(dims[i, 1]), policy.files.max_pixels)
            except Unreadable as exc:
                errors[int(i)] = str(exc)
                valid[i] = False
                phash[i] = 0
                thumb[i] = 0
                for arr in desc.values():
                    arr[i] = 0
    stats = {
        "files": n,
        "hashed": len(to_hash),
        "decoded": decoded,
        # Files whose signatures all came from the store, renamed copies included.
        "reused": sum(1 for d in digests if d is not None and d not in fresh),
        "seconds_hash": round(t_hash - t0, 3),
        "seconds_decode": round(t_decode - t_hash, 3),
        "seconds_total": time.perf_counter() - t0,
    }
    return Signatures(
        digests=tuple(d or b"" for d in digests),
        valid=valid,
        errors=errors,
        dims=dims,
        phash=phash,
        thumb=thumb,
        stats=stats,
        desc=desc,
    )


def pixel_digests(
    rows: Sequence[int],
    records: Sequence[FileRecord],
    sigs: Signatures,
    policy: Policy,
    store: Store,
    *,
    jobs: int | None = None,
) -> dict[int, bytes]:
    """Full-decode pixel digests for candidate rows only (cached by content digest)."""
    wanted = [sigs.digests[i] for i in rows]
    cached = store.get_signatures(wanted, "pixels", PIXELS_PARAMS)
    todo = {}
    for i in rows:
        if sigs.digests[i] not in cached:
            todo.setdefault(sigs.digests[i], i)
    tasks = [(str(policy.root / records[i].path), policy.files.max_pixels) for i in todo.values()]
    new = []
    for digest, (ok, data) in zip(todo, _map(_pixel_digest, tasks, None, jobs)):
        cached[digest] = (ok, data)
        new.append((digest, "pixels", PIXELS_PARAMS, ok, data))
    if new:
        store.put_signatures(new)
    return {i: cached[sigs.digests[i]][1] for i in rows if cached[sigs.digests[i]][0]}
