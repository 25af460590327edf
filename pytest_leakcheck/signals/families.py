"""Signal families and the arrays they fill: the shared vocabulary of detectors.

A *family* is one cached signal, computed in a worker from the one decode
(``decode.py``) and stored by content digest plus its parameter fingerprint.
A detector names the families it needs; the signature stage computes each
family once however many detectors ask for it, and hands every detector the
same :class:`Signatures`: arrays row-aligned to the inventory, keyed by name.

The two families several parts share live here: the perceptual hash of each
orientation (the phash, dhash and identical-pixels detectors) and the grey
thumbnail (the thumbnail detector, and the texture test every perceptual
detector applies).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
from PIL import Image

from .. import orientation as _orientation
from .decode import DECODE_PATH, FAMILIES, FRAMES, TRANSPOSE, Decoded

#: How one family's bytes become arrays: (array name, numpy dtype, values per row).
Layout = tuple[tuple[str, str, int], ...]


@dataclass(frozen=True)
class Family:
    """One cached signal.  ``name`` is unique (``hash:rot90``); ``params`` is its fingerprint."""

    name: str
    params: str
    layout: Layout
    #: ``compute(decoded, family) -> bytes``, run in a worker; a module-level function.
    compute: Callable[[Decoded, Family], bytes] = field(compare=False, repr=False)
    #: Arguments of ``compute`` (orientation, hash kind, sizes...).
    args: tuple[Any, ...] = ()
    #: Whether ``compute`` reads the colour square of the decode.
    colour: bool = False
    #: Rows longer than ``layout`` (a variable-length list after a fixed head): only the
    #: head is loaded with the signatures; the detector reads the rest from the store.
    variable: bool = False
    #: ``from_dims(width, height) -> bytes | None``: the row when the file's size alone decides it
    #: (a family only large images carry), so a content already in the store is not decoded
    #: again for it; None: decode.  A module-level function, like ``compute``.
    from_dims: Callable[[int, int], bytes | None] | None = field(default=None, compare=False, repr=False)
    #: Computed from the file's bytes alone, never its pixels (a DICOM attribute, an EXIF field):
    #: also computed when the decode fails, so a patient's file whose pixels no decoder reads
    #: still has its group (``decode.sign``), and a stored content lacking only such a family
    #: is read again without a decode.
    header: bool = False

    def unpack(self, column: np.ndarray) -> dict[str, np.ndarray]:
        """(N, bytes) uint8 rows -> the family's arrays, by name."""
        out, at = {}, 0
        for name, dtype, width in self.layout:
            size = np.dtype(dtype).itemsize * width
            out[name] = np.ascontiguousarray(column[:, at:at + size]).view(dtype).reshape(len(column), width)
            at += size
        return out

    @property
    def row_bytes(self) -> int:
        return sum(np.dtype(dtype).itemsize * width for _, dtype, width in self.layout)


@dataclass(frozen=True)
class Signatures:
    """Arrays row-aligned to the inventory's records."""

    digests: tuple[bytes, ...]
    valid: np.ndarray  # (N,) bool: decoded fine
    errors: dict[int, str]  # row -> why it could not be decoded
    dims: np.ndarray  # (N, 2) int64 width, height after EXIF orientation
    #: Every family's arrays by name (see :attr:`Family.layout`), zero where not valid.
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    stats: dict[str, float] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.digests)

    def has(self, *names: str) -> bool:
        return all(n in self.arrays for n in names)


def unique(families: Iterable[Family]) -> tuple[Family, ...]:
    """Each family once, in first-asked order; two askers must agree on its parameters."""
    out: dict[str, Family] = {}
    for f in families:
        if f.name in out and out[f.name].params != f.params:
            raise ValueError(f"family {f.name} asked for with two parameter sets: {out[f.name].params} / {f.params}")
        out.setdefault(f.name, f)
    return tuple(out.values())


# --------------------------------------------------------------------------
# Perceptual hashes, one family per orientation


def search_orientations(orientations: Iterable[str]) -> tuple[str, ...]:
    """Orientations to hash: the policy's, closed under inverse (``orientation.closed``)."""
    return _orientation.closed(orientations)


@lru_cache(maxsize=4)
def dct_matrix(n: int) -> np.ndarray:
    """scipy's unnormalised DCT-II as a matrix: y = C @ x."""
    k = np.arange(n)
    return 2.0 * np.cos(np.pi * k[:, None] * (2 * k[None, :] + 1) / (2 * n))


def phash_bits(img: Image.Image, hash_size: int) -> np.ndarray:
    """``imagehash.phash(img, hash_size).hash``, bit for bit, without scipy.

    The same arithmetic as imagehash (grey, LANCZOS to 4 x hash_size, DCT-II
    over rows then columns, low block against its median) as two small
    matmuls.  Importing scipy.fftpack costs more than a commit hook can spend
    on one image (``benchmarks/hook_speed.py``); a test pins equality with imagehash.
    """
    side = hash_size * 4
    grey = img.convert("L")
    if grey.size != (side, side):
        grey = grey.resize((side, side), Image.Resampling.LANCZOS)
    return _phash_of(np.asarray(grey, dtype=np.float64), hash_size)


def _phash_of(square: np.ndarray, hash_size: int) -> np.ndarray:
    """The phash bits of a C-contiguous float64 grey square of side 4 x hash_size.

    The matmuls are the ones ``phash_bits`` always ran (same operands, same
    layout, so BLAS rounds the same way).  The median is the one ``np.median``
    takes, the middle value or the halved sum of the two middle ones, read off
    a sort: ``np.median``'s checks and dispatch cost more than the 8 x 8 DCT.
    """
    return _phash_stack(square[None], hash_size)[0]


def _phash_stack(squares: np.ndarray, hash_size: int) -> np.ndarray:
    """:func:`_phash_of` of each of a (K, side, side) C-contiguous float64 stack, as (K, hash_size, hash_size).

    A stacked matmul runs BLAS's own product on each square, the one a lone square gets, so every
    bit is the one hashing the squares one by one gave (tests/signals/test_fast_paths.py).
    """
    c = dct_matrix(squares.shape[-1])
    low = (c @ squares @ c.T)[:, :hash_size, :hash_size]
    ordered = np.sort(low.reshape(len(low), -1), axis=1)
    mid = ordered.shape[1] // 2
    median = ordered[:, mid] if ordered.shape[1] % 2 else (ordered[:, mid - 1] + ordered[:, mid]) / 2
    return low > median[:, None, None]


def _phashes(decoded: Decoded, hash_size: int, orientations: tuple[str, ...]) -> dict[str, bytes]:
    """The phash of each of ``orientations``, from one square turned into a stack and hashed at once.

    Every orientation hashes the same 4 x hash_size square, resized and made float once per
    decode; turning its array gives the values Pillow's transpose would (a permutation), without
    an image, a conversion and an array per orientation; one stacked step rather than eight
    (the hashes were a fifth of a hash-only check's signing: ``benchmarks/decode_shares.py``
    with same-scene and aligned off).
    """
    side = hash_size * 4
    square = np.asarray(decoded.grey.resize((side, side), Image.Resampling.LANCZOS), dtype=np.float64)
    # Filled in place, C-contiguous whatever the turns: np.stack keeps a lone transposed view's
    # layout, and BLAS rounds a flat square's near-zero coefficients otherwise (a tie at the median).
    stack = np.empty((len(orientations), side, side))
    for k, o in enumerate(orientations):
        stack[k] = _orientation.turn(square, o)
    packed = np.packbits(_phash_stack(stack, hash_size).reshape(len(orientations), -1), axis=1)
    return {o: packed[k].tobytes() for k, o in enumerate(orientations)}


def _hash(decoded: Decoded, family: Family) -> bytes:
    kind, bits, orientation = family.args
    hash_size = round(bits**0.5)
    if kind == "phash":
        # The first phash family of a decode hashes every orientation the decode serves (those of
        # the same bits; only this one when the caller did not say which).
        key = ("phash", hash_size)
        done = decoded.memo.setdefault(key, {})
        if orientation not in done:
            asked = tuple(dict.fromkeys([orientation, *(
                f.args[2] for f in decoded.memo.get(FAMILIES, ()) if f.compute is _hash and f.args[:2] == (kind, bits)
                and f.args[2] not in done)]))
            done.update(_phashes(decoded, hash_size, asked))
        return done[orientation]
    import imagehash  # whash pulls in PyWavelets; only workers that need it pay

    op = TRANSPOSE[orientation]
    oriented = decoded.grey if op is None else decoded.grey.transpose(op)
    fn = {"dhash": imagehash.dhash, "ahash": imagehash.average_hash, "whash": imagehash.whash}[kind]
    hashed = np.asarray(fn(oriented, hash_size=hash_size).hash, dtype=bool)
    return np.packbits(hashed.ravel()).tobytes()


def hash_family(kind: str, bits: int, orientation: str, prefix: str = "hash") -> Family:
    """The ``kind`` hash of the image turned by ``orientation``: (N, bits/64) uint64."""
    return Family(f"{prefix}:{orientation}", f"{kind};{bits};{DECODE_PATH}",
                  ((f"{prefix}:{orientation}", "<u8", bits // 64),), _hash, (kind, bits, orientation))


def hash_stack(sigs: Signatures, orientations: Iterable[str], prefix: str = "hash") -> np.ndarray:
    """(N, K, W) uint64: the hashes of ``orientations`` side by side, for the kernels."""
    return np.stack([sigs.arrays[f"{prefix}:{o}"] for o in orientations], axis=1)


# --------------------------------------------------------------------------
# Grey thumbnail


def _thumb(decoded: Decoded, family: Family) -> bytes:
    (side,) = family.args
    return np.asarray(decoded.grey.resize((side, side), Image.Resampling.BOX), dtype=np.uint8).tobytes()


def thumb_family(size: int) -> Family:
    """A ``size`` x ``size`` grey thumbnail, (N, size²) uint8."""
    return Family("thumb", f"{size};{DECODE_PATH}", (("thumb", "u1", size * size),), _thumb, (size,))


# --------------------------------------------------------------------------
# Frames of an animation


def _frames(decoded: Decoded, family: Family) -> bytes:
    return np.array([min(int(decoded.memo.get(FRAMES, 1)), 2**32 - 1)], "<u4").tobytes()


def frames_family() -> Family:
    """How many frames each file holds, (N, 1) uint32: more than one for an animated GIF, PNG or
    WebP, of which only the first is checked (the report says how many such files there are)."""
    return Family("frames", f"frames-v1;{DECODE_PATH}", (("frames", "<u4", 1),), _frames)


# --------------------------------------------------------------------------
# Raw DICOM values


def _values(decoded: Decoded, family: Family) -> bytes:
    from .dicom import VALUES

    return (decoded.memo.get(VALUES) or bytes(16))[:16]


def _no_values(width: int, height: int) -> bytes:
    return bytes(16)


def values_family() -> Family:
    """The digest of a DICOM frame's raw stored values (zeros for other images), (N, 16) uint8.

    A copy whose window or LUT was changed in the header looks different to every
    perceptual hash but holds the same values: identical-pixels pairs it by this.
    Contents stored before DICOM was read are never DICOM: their row is zeros, no decode.
    """
    return Family("values", "dicom-raw-v1", (("values", "u1", 16),), _values, from_dims=_no_values)


# --------------------------------------------------------------------------
# The reduced decode's own digest (identical-pixels' cheap first test)

#: JPEG's first three bytes.
_JPEG = b"\xff\xd8\xff"


def _drafted(decoded: Decoded, family: Family) -> bytes:
    import hashlib

    if not decoded.source.startswith(_JPEG):
        return bytes(9)
    # The 64 px grey square (4 KB) rather than the whole reduced decode: as decisive, a
    # tenth of the hashing (0.1 ms a photo, ``benchmarks/speed.py``).
    return b"\x01" + hashlib.blake2b(decoded.grey.tobytes(), digest_size=8).digest()


def drafted_family() -> Family:
    """Whether a file is a JPEG and a digest of its reduced decode's grey square, (N, 9) uint8
    (zeros: not a JPEG).

    Two JPEGs holding the same coefficients decode to the same reduced image, so two whose
    reduced decodes differ do not hold identical pixels: identical-pixels leaves them
    without the full decode it otherwise pays for each candidate.  On a fixed camera most
    pairs are candidates (hashes within a few bits): ``chess`` and ``deeppcb`` of
    ``benchmarks/field.py`` spent 10-20 % of the check decoding them in full.
    """
    return Family("drafted", f"jpeg-blake2b8;{DECODE_PATH}", (("drafted", "u1", 9),), _drafted)
