"""Decode any image to the 8-bit, upright RGB every signal starts from, in bounded memory.

Two things make an image more than "8 bits per channel, a few megapixels":

- **Depth.**  16-bit (``I;16*``), 32-bit integer (``I``) and float (``F``)
  images hold values Pillow's 8-bit conversions clip to 0 or 255: seven
  distinct 12-bit scans became one white square.  These are mapped to 8 bits
  by the image's own value range (finite minimum to maximum), so a
  brightened or rescaled copy (x 1.2, or 0..4095 saved as 0.0..1.0 floats)
  maps to the same 8-bit image.  Pixel digests keep the original values.
- **Size.**  Converting a decoded 144 Mpx image to RGB, then grey, then
  resizing it whole holds several copies of it.  Images above ``LARGE`` pixels are converted and
  box-reduced in strips of rows; images whose decoded pixels alone would
  exceed ``MAX_DECODE_BYTES`` are refused before decoding (JPEG draft mode
  shrinks JPEGs first), as an ``unreadable-image`` finding that says why.

Which path a file takes depends only on its header (mode and size), so the
same file is always decoded the same way; ordinary 8-bit images keep
exactly the path they always had (pinned in tests/signals/test_image_modes.py).
"""

from __future__ import annotations

import hashlib
import io
import struct
import warnings
from collections.abc import Iterator

import numpy as np
from PIL import Image, ImageOps

from . import dicom, floattiff, heif

#: Pixel buffer (bytes) Pillow may allocate to decode one image.  Pillow
#: decodes most formats (PNG, TIFF, WebP...) only whole, so this bounds the
#: peak memory of a worker, with the strips below (``benchmarks/hostile_bounds.py``).
MAX_DECODE_BYTES = 256 * 2**20
#: Images with more pixels are converted and reduced in strips rather than whole.
LARGE = 4096 * 4096
#: Each side of a large image is box-reduced by an integer factor to about this
#: many pixels, several times what the 64 px hashes and 32 px squares need.
REDUCED = 512
#: Rows per strip are chosen so a strip holds about this many bytes.
STRIP_BYTES = 8 * 2**20
#: Modes whose values do not fit in 8 bits.  Pillow yields no multi-channel
#: high-depth mode: it reads 16-bit RGB(A) PNGs and TIFFs as 8-bit RGB(A) by
#: the top byte, which is a mapping by bit depth, not a clip.
HIGH_DEPTH = frozenset({"I;16", "I;16B", "I;16L", "I;16N", "I", "F"})
#: Bytes per pixel of Pillow's in-memory image, by mode (4 for the rest).
_STORAGE = {"1": 1, "L": 1, "P": 1, "I;16": 2, "I;16B": 2, "I;16L": 2, "I;16N": 2}
#: Part of every signature fingerprint: changing any constant above changes it.
PATH = f"range8-mem{MAX_DECODE_BYTES >> 20}M-strips{LARGE}to{REDUCED}-alphawhite"

#: EXIF orientation -> the transpose that makes the image upright (as ImageOps.exif_transpose).
_UPRIGHT = {
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_270,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_90,
}
#: Transposes whose output row y comes from source column y (or W - 1 - y).
_COLUMNS = {Image.Transpose.ROTATE_270, Image.Transpose.TRANSPOSE}
_COLUMNS_REVERSED = {Image.Transpose.ROTATE_90, Image.Transpose.TRANSVERSE}
_ROWS_REVERSED = {Image.Transpose.FLIP_TOP_BOTTOM, Image.Transpose.ROTATE_180}


class Unreadable(Exception):
    """The file cannot be decoded as an image; the message says why."""


def open_image(data: bytes, max_pixels: int) -> Image.Image:
    """Open lazily, refusing decompression bombs; raises :class:`Unreadable`.

    A DICOM file (or frame) is decoded at once, to its windowed 8 bits (dicom.py).
    """
    if dicom.is_dicom(data):
        try:
            return dicom.image(data, max_pixels, MAX_DECODE_BYTES)
        except (ValueError, dicom.NoPydicom) as exc:
            raise Unreadable(str(exc)) from None
    if heif.is_heif(data) and not heif.ensure():
        raise Unreadable(heif.NEEDS)
    with warnings.catch_warnings():
        # Pillow warns above 89 Mpx and raises above 179 Mpx; our own limit
        # below is the one the policy controls.
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        try:
            img = Image.open(io.BytesIO(data))
        except Image.DecompressionBombError as exc:
            raise Unreadable(f"decompression bomb: {exc}") from None
        except Image.UnidentifiedImageError:
            img = _float64_tiff(data)
    w, h = img.size
    check_pixels(w, h, max_pixels)
    if w == 0 or h == 0:
        raise Unreadable("image has no pixels")
    return img


def _float64_tiff(data: bytes) -> Image.Image:
    """A float64 TIFF Pillow cannot open, as mode F (floattiff.py); Pillow's own error for anything else."""
    try:
        img = floattiff.image(data, MAX_DECODE_BYTES)
    except ValueError as exc:
        raise Unreadable(str(exc)) from None
    if img is None:
        raise Image.UnidentifiedImageError("cannot identify image file")
    return img


def check_pixels(w: int, h: int, max_pixels: int) -> None:
    if w * h > max_pixels:
        raise Unreadable(
            f"decompression bomb: {w}x{h} = {w * h:,} pixels exceeds files.max_pixels ({max_pixels:,})"
        )


def check_memory(img: Image.Image) -> None:
    """Refuse, before decoding, an image whose pixels alone exceed ``MAX_DECODE_BYTES``."""
    w, h = img.size
    need = w * h * _STORAGE.get(img.mode, 4)
    if need > MAX_DECODE_BYTES:
        raise Unreadable(
            f"too large to decode in bounded memory: {w}x{h} {img.mode} {img.format or 'image'} needs "
            f"{need / 2**20:,.0f} MiB of pixels, over leakcheck's bound of {MAX_DECODE_BYTES >> 20} MiB; "
            "only JPEG can be decoded reduced: save it as JPEG, downscale it, or exclude it with `ignore`"
        )


def orientation(img: Image.Image) -> int:
    """The EXIF orientation (1 to 8; 1 when absent or invalid)."""
    value = img.getexif().get(0x0112, 1)
    # A damaged tag can hold any type; only the eight defined integers count.
    return value if isinstance(value, int) and value in _UPRIGHT else 1


def upright_rgb(img: Image.Image, orient: int) -> Image.Image:
    """The 8-bit upright RGB image signals are computed from (the caller ran :func:`check_memory`).

    Ordinary 8-bit images take the path they always took; high-depth and
    large images are mapped and reduced strip by strip, then turned upright.
    """
    if img.mode not in HIGH_DEPTH and img.width * img.height <= LARGE:
        return _on_white(ImageOps.exif_transpose(img))
    img.load()
    fx, fy = _factors(img.width, img.height)
    if img.mode in HIGH_DEPTH:
        out = _mapped(img, fx, fy).convert("RGB")
    else:
        parts = [_reduce(_on_white(img.crop(box)), fx, fy) for box in _strips(img, fy, 4)]
        out = Image.fromarray(np.concatenate([np.asarray(p) for p in parts]))
    op = _UPRIGHT.get(orient)
    return out if op is None else out.transpose(op)


def upright_grey(img: Image.Image) -> Image.Image | None:
    """``upright_rgb(img, …).convert("L")`` without the RGB between, for a plain 8-bit grey image
    (a JPEG drafted to luma); None for any other, which takes that path.

    Pillow's grey -> RGB copies the value into each channel and its RGB -> grey weights sum to
    exactly one (19595 + 38470 + 7471 = 65536 / 65536), so the round trip gives every pixel back
    unchanged (pinned in tests/signals/test_fast_paths.py).  Skipping it takes about a tenth of
    same-scene's keypoint row off (its ``scene`` line in ``benchmarks/decode_shares.py``).
    """
    if img.mode != "L" or "transparency" in img.info or img.width * img.height > LARGE:
        return None
    return ImageOps.exif_transpose(img)


def _on_white(img: Image.Image) -> Image.Image:
    """RGB as the picture shows on a page: transparent pixels white, whatever colour they store.

    A logo's PNG may keep black under its transparent pixels and its JPEG copy sits on white;
    dropping the alpha channel made them two pictures (held out: a web-scraped logo set).
    """
    if img.mode in ("RGBA", "LA", "PA", "RGBa", "La") or "transparency" in img.info:
        rgba = img.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    return img.convert("RGB")


def _factors(w: int, h: int) -> tuple[int, int]:
    if w * h <= LARGE:
        return 1, 1
    return max(1, w // REDUCED), max(1, h // REDUCED)


def _reduce(img: Image.Image, fx: int, fy: int) -> Image.Image:
    return img if (fx, fy) == (1, 1) else img.reduce((fx, fy))


def _strips(img: Image.Image, multiple: int, bytes_per_pixel: int) -> Iterator[tuple[int, int, int, int]]:
    """Full-width boxes of rows, each a multiple of ``multiple`` rows (bar the last).

    Box reduction of aligned strips equals that of the whole image, so the
    result does not depend on the strip height.
    """
    w, h = img.size
    rows = multiple * max(1, STRIP_BYTES // (w * bytes_per_pixel * multiple))
    for y in range(0, h, rows):
        yield 0, y, w, min(h, y + rows)


def _mapped(img: Image.Image, fx: int, fy: int) -> Image.Image:
    """A high-depth image, box-reduced by (fx, fy), stretched to 8-bit grey by its value range.

    The range is the finite minimum and maximum of the original values;
    non-finite values (NaN "no data" masks, infinities) map to the minimum.
    """
    lo, hi = np.inf, -np.inf
    parts = []
    for box in _strips(img, fy, 4):
        values = np.array(img.crop(box), dtype=np.float32)  # a writable copy, whatever the mode
        finite = np.isfinite(values)
        if finite.any():
            lo, hi = min(lo, float(values[finite].min())), max(hi, float(values[finite].max()))
        values[~finite] = np.nan
        parts.append(np.asarray(_reduce(Image.fromarray(values), fx, fy)))
    values = np.concatenate(parts)
    if not hi > lo:  # constant or all non-finite: one flat grey level
        return Image.fromarray(np.zeros(values.shape, np.uint8))
    scaled = (np.nan_to_num(values, nan=lo) - lo) * (255.0 / (hi - lo))
    return Image.fromarray(np.clip(np.rint(scaled), 0, 255).astype(np.uint8))


def pixel_digest(img: Image.Image, orient: int) -> bytes:
    """sha256 of the upright image's size and pixels, hashed strip by strip.

    8-bit images hash their RGBA bytes, exactly as a whole-image digest
    would.  High-depth images hash their original values (integers as int32,
    floats as float32, little-endian) with a tag, never the 8-bit mapping: two
    scans differing only below the top byte are different pixels.
    """
    img.load()
    op = _UPRIGHT.get(orient)
    w, h = img.size
    up = (h, w) if op in _COLUMNS or op in _COLUMNS_REVERSED else (w, h)
    digest = hashlib.sha256(struct.pack("<qq", *up))
    deep = img.mode in HIGH_DEPTH
    dtype = "<f4" if img.mode == "F" else "<i4"
    if deep:
        digest.update(f"values:{dtype}".encode())
    rows = max(1, STRIP_BYTES // (up[0] * 4))
    for y0 in range(0, up[1], rows):
        y1 = min(up[1], y0 + rows)
        piece = img.crop(_source_box(op, w, h, y0, y1))
        piece = piece if op is None else piece.transpose(op)
        digest.update(np.asarray(piece).astype(dtype).tobytes() if deep else piece.convert("RGBA").tobytes())
    return digest.digest()


def _source_box(op: Image.Transpose | None, w: int, h: int, y0: int, y1: int) -> tuple[int, int, int, int]:
    """The box of the source image that rows ``y0:y1`` of its ``op`` transpose come from."""
    if op in _COLUMNS:
        return y0, 0, y1, h
    if op in _COLUMNS_REVERSED:
        return w - y1, 0, w - y0, h
    if op in _ROWS_REVERSED:
        return 0, h - y1, w, h - y0
    return 0, y0, w, y1
