"""The one decode path every cached signal comes from, and the workers that run it.

JPEG draft mode to a small RGB image, EXIF orientation applied, squashed to a
``BASE`` x ``BASE`` grey square (plus, when a family asks, a small colour
square from the same decode).  Draft and full decodes give perceptual hashes a
few bits apart, so the path is part of every parameter fingerprint; only the
identical-pixels check needs a full decode, and only for candidate files.

The workers here run in other processes (or on a Dask cluster): they take
small picklable tasks and never raise; errors come back as text.
"""

from __future__ import annotations

import hashlib
import struct
import warnings
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from . import imagedepth

# Re-exported: the rest of the package opens images through this module.
from .imagedepth import Unreadable, check_pixels, open_image  # noqa: F401
from .sources import read_bytes

#: Side of the grey square every signal is computed from.
BASE = 64
# JPEG draft target: libjpeg decodes at 1/8 scale while both sides stay >= 32,
# which is four times cheaper than a full decode and plenty for 64-bit hashes
# and 16 px thumbnails.
DRAFT = 32
#: Side of the colour square that families with ``colour=True`` read.
COLOUR = 32
#: Changes whenever the decode path changes, invalidating cached signals.
DECODE_PATH = f"draft{DRAFT}-{imagedepth.PATH}-rgb-exif-lanczos{BASE}-v2"
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


@dataclass
class Decoded:
    """One decode of one file: what every family computes its signal from."""

    grey: Image.Image  # BASE x BASE, mode L
    size: tuple[int, int]  # width, height after EXIF orientation
    colour: Image.Image | None = None  # COLOUR x COLOUR RGB, when a family needs it
    #: Intermediate results families share (e.g. the hash input square).
    memo: dict[Any, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SignTask:
    """What a worker needs to sign one file: small and cheap to pickle."""

    path: str
    max_pixels: int
    #: Families to compute (``signals.Family``); their compute functions travel by reference.
    families: tuple[Any, ...]


def decode(data: bytes, max_pixels: int, colour: int = 0) -> Decoded:
    """The one decode path for every cached signal: small, grey, upright, 8-bit by value range.

    With ``colour`` also a ``colour`` x ``colour`` RGB square from the same
    decode (descriptors that need colour; the grey path is unchanged).
    """
    img = open_image(data, max_pixels)
    w, h = img.size
    # Draft first: the memory bound applies to what is decoded, and reading
    # the EXIF of some formats (PNG) decodes the whole image.
    img.draft("RGB", (DRAFT, DRAFT))
    imagedepth.check_memory(img)
    orient = imagedepth.orientation(img)
    if orient in (5, 6, 7, 8):  # orientations that swap the axes
        w, h = h, w
    rgb = imagedepth.upright_rgb(img, orient)
    small = rgb.resize((colour, colour), Image.Resampling.BOX) if colour else None
    grey = rgb.convert("L").resize((BASE, BASE), Image.Resampling.LANCZOS, reducing_gap=3.0)
    return Decoded(grey, (w, h), small)


def sign(task: SignTask) -> tuple[bytes, bool, dict[str, bytes] | str]:
    """Read, digest and decode one file, then compute each family.  Never raises."""
    try:
        data = read_bytes(task.path)  # a local file, or an object-storage URL (sources.py)
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
            wants_colour = any(f.colour for f in task.families)
            decoded = decode(data, task.max_pixels, colour=COLOUR if wants_colour else 0)
            out = {"dims": struct.pack("<qq", *decoded.size)}
            for f in task.families:
                out[f.name] = f.compute(decoded, f)
        return digest, True, out
    except Unreadable as exc:
        return digest, False, str(exc)
    except Image.UnidentifiedImageError:
        return digest, False, "not an image Pillow can identify (wrong suffix, or corrupt header)"
    except Exception as exc:
        # Pillow's parsers raise almost any type on hostile bytes (a TIFF tag
        # of the wrong type gives TypeError): all of them mean a damaged file.
        return digest, False, f"corrupt or truncated image: {exc}"


def pixel_digest(task: tuple[str, int, bytes]) -> tuple[bool, bytes] | None:
    """A digest of the fully decoded pixels (and size), for the identical-pixels detector.

    ``None`` when the file no longer holds the content it was hashed with
    (deleted or changed since): nothing can be said, or cached, about that content.
    """
    path, max_pixels, expected = task
    try:
        data = read_bytes(path)
    except OSError:
        return None
    if hashlib.sha256(data).digest() != expected:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            img = open_image(data, max_pixels)
            imagedepth.check_memory(img)
            return True, imagedepth.pixel_digest(img, imagedepth.orientation(img))
    except Exception as exc:  # any decode failure: the pair is simply not identical
        return False, str(exc).encode("utf-8", "surrogateescape")  # it may quote a file name
