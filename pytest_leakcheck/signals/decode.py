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

import functools
import hashlib
import logging
import struct
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image

from .. import orientation as _orientation
from . import dicom, imagedepth

# Re-exported: the rest of the package opens images through this module.
from .imagedepth import Unreadable, check_pixels, open_image  # noqa: F401
from ..files import lfs
from ..files.remote import read_bytes

# Pillow logs what it refuses in an exotic or hostile file (a 13-band TIFF: "More samples per pixel
# than can be decoded") to the terminal when nothing handles its records; the finding says it, once.
logging.getLogger("PIL").addHandler(logging.NullHandler())

#: Side of the grey square every signal is computed from.
BASE = 64
# JPEG draft target: libjpeg decodes at 1/8 scale while both sides stay >= 32,
# which is four times cheaper than a full decode and plenty for 64-bit hashes
# and 16 px thumbnails.
DRAFT = 32
#: Side of the colour square that families with ``colour=True`` read.
COLOUR = 32
#: Photos whose long side is at least DETAIL_FROM are drafted to DETAIL px on their long
#: side instead (a 640 x 480 JPEG at 1/4 rather than 1/8, a 4000 x 3000 one still at 1/8):
#: ``aligned``'s fine square and ``turned_copy``'s grey read that many pixels.  Same-scene's
#: 320 px luma is a second decode of a JPEG photo (:func:`detail_grey`): one decode at 320 px,
#: box-reduced for the other families, changed their bytes and moved field findings (CHANGELOG,
#: stop 62).  Below DETAIL_FROM (CIFAR's 32 px, thumbnails) nothing changes.
DETAIL = 160
DETAIL_FROM = 200
#: A border line's pixels may stray this far (0..255, any channel) from the
#: border's colour: JPEG ringing and scanner noise, not content.
BORDER_TOLERANCE = 16
#: Share of a line's pixels that must be that close for the line to be border.
BORDER_SHARE = 0.97
#: Thinner borders (share of the side) are left alone: an edge artefact, not padding.
MIN_BORDER = 0.02
#: Cropping keeps at least this share of each side, else that axis is left whole:
#: a small logo on a white page is the picture, not a sliver of it.
MIN_CONTENT = 0.25
#: Longest side the border search looks at; larger decodes are reduced first.
PROBE = 128
#: Changes whenever the decode path changes, invalidating cached signals.
DECODE_PATH = (f"draft{DRAFT}-detail{DETAIL}from{DETAIL_FROM}-{imagedepth.PATH}-rgb-exif-trim{BORDER_TOLERANCE}own"
               f"-lanczos{BASE}-v4")
PIXELS_PARAMS = "rgba-exif-v2"
#: Key of a cached decode error: a reader added for files Pillow cannot open (64-bit float TIFFs,
#: floattiff.py) changes it, so those files are decoded again while every stored signature stays.
ERROR_PATH = f"{DECODE_PATH};float64-tiff"
#: Formats whose files may be animations; ``Decoded.memo[FRAMES]`` is how many frames one holds.
ANIMATED_FORMATS = frozenset({"GIF", "PNG", "WEBP"})
FRAMES = "frames"
#: ``Decoded.memo[FAMILIES]``: every family this decode serves, so that one family can compute what
#: several share in one step (the perceptual hash of each orientation: ``families._hash``).
FAMILIES = "families"

#: Pillow's transpose for each orientation (None for identity), derived in orientation.py.
TRANSPOSE = {o: _orientation.pil_method(o) for o in _orientation.ORIENTATIONS}


@dataclass
class Decoded:
    """One decode of one file: what every family computes its signal from."""

    grey: Image.Image  # BASE x BASE, mode L
    size: tuple[int, int]  # width, height after EXIF orientation
    colour: Image.Image | None = None  # COLOUR x COLOUR RGB, when a family needs it
    #: The file's bytes, for families that need more than the small decode (``detail_grey``).
    source: bytes = b""
    max_pixels: int = 0
    #: Intermediate results families share (e.g. the hash input square).
    memo: dict[Any, Any] = field(default_factory=dict)
    #: The upright 8-bit decode before borders are trimmed and before it is squashed
    #: (long side at least DETAIL for photos of DETAIL_FROM px and more), for ``detail_grey``.
    upright: Image.Image | None = None
    #: The upright decode after border trimming: what ``grey`` and ``colour`` are squashed from
    #: (``aligned``'s fine square is made from it too, and its size says how much detail it holds).
    content: Image.Image | None = None
    #: ``content`` in grey, converted once: ``grey``, the fine square and ``detail_grey`` all start from it.
    content_grey: Image.Image | None = None


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
    # the EXIF of some formats (PNG) decodes the whole image.  The draft depends
    # on the file alone, never on the policy: a file is always decoded the same way.
    img.draft("RGB", _draft_size(w, h))
    imagedepth.check_memory(img)
    orient = imagedepth.orientation(img)
    if orient in (5, 6, 7, 8):  # orientations that swap the axes
        w, h = h, w
    rgb = imagedepth.upright_rgb(img, orient)
    frames = _frames(img)  # after the decode: counting seeks, and the first frame is the one read
    # Signatures describe the content: padded photos look alike to a 16 px
    # thumbnail whatever they show, and a padded copy must match its original.
    upright = rgb
    box = content_box(rgb, own_colour=max(w, h) < DETAIL_FROM)
    if box is not None:
        rgb = rgb.crop(box)
    small = rgb.resize((colour, colour), Image.Resampling.BOX) if colour else None
    content_grey = rgb.convert("L")
    grey = content_grey.resize((BASE, BASE), Image.Resampling.LANCZOS, reducing_gap=3.0)
    # The bytes go with the decode: a family or a hold that needs more than it holds decodes them again
    # (``detail_grey``); without them the template hold's own decode of a receipt (a long page drafted
    # under the fine square's side) had no fine square, and held nothing (``sroie``, held-out probe 12).
    out = Decoded(grey, (w, h), small, source=data, max_pixels=max_pixels, upright=upright, content=rgb,
                  content_grey=content_grey)
    out.memo[FRAMES] = frames
    out.memo[dicom.VALUES] = img.info.get(dicom.VALUES)  # DICOM only: its raw values' digest
    out.memo[dicom.DATASET] = img.info.get(dicom.DATASET)  # and its parsed header
    return out


def _frames(img: Image.Image) -> int:
    """How many frames ``img`` holds when its format animates (GIF, APNG, WebP), else 1.

    Only the first is decoded: a sprite's later frames, or an animated emoji's, are not checked,
    and the report says so rather than pass them in silence (an MPO's depth map or a TIFF's
    reduced pages are not frames of the picture, so other formats are not counted).
    """
    if img.format not in ANIMATED_FORMATS:
        return 1
    try:
        return max(1, int(getattr(img, "n_frames", 1)))
    except Exception:  # noqa: BLE001 - a damaged later frame: the first one decoded already
        return 1


def _draft_size(w: int, h: int) -> tuple[int, int]:
    """The least size JPEG draft mode must keep: DETAIL on the long side for photos, else DRAFT."""
    long = max(w, h, 1)
    if long < DETAIL_FROM:
        return DRAFT, DRAFT
    return max(DRAFT, DETAIL * w // long), max(DRAFT, DETAIL * h // long)


def detail_grey(decoded: Decoded, side: int) -> np.ndarray:
    """A grey image of the file at about ``side`` pixels on its long side (less if smaller), upright.

    The decode every family shares keeps DETAIL px for photos (see ``_draft_size``);
    only a larger ``side`` than it holds decodes the file again (:func:`_grey_again`), once
    per draft scale however many families ask.
    """
    img = decoded.upright
    if img is not None and max(img.size) >= min(side, max(decoded.size)):
        grey = decoded.content_grey if img is decoded.content and decoded.content_grey is not None else img.convert("L")
    else:
        grey = _grey_again(decoded, side)
    if max(grey.size) > side:
        s = side / max(grey.size)
        grey = grey.resize((max(1, round(grey.width * s)), max(1, round(grey.height * s))),
                           Image.Resampling.BILINEAR)
    return np.asarray(grey)


#: ``Decoded.memo`` key of the greys :func:`_grey_again` decoded, by the scale their draft took.
AGAIN = "grey-again"


def _grey_again(decoded: Decoded, side: int) -> Image.Image:
    """The file decoded again in draft mode at the smallest scale keeping ``side``, luma only, upright.

    Kept in ``decoded.memo`` by the scale the draft took (the same scale gives the same bytes): a
    JPEG under DETAIL_FROM px is drafted small for the shared decode and then asked for its whole
    size by same-scene, ``turned_copy`` and ``aligned``'s fine square, each of which decoded it
    again (``signdigits``' 100 px photos: four decodes a file, now two; tests/signals/test_one_decode.py).
    """
    img = open_image(decoded.source, decoded.max_pixels)
    w, h = img.size
    long = max(w, h, 1)
    drafted = img.draft("L", (max(1, side * w // long), max(1, side * h // long)))
    key = round(w / drafted[1][2]) if drafted else 1
    done = decoded.memo.setdefault(AGAIN, {})
    if key not in done:
        imagedepth.check_memory(img)
        grey = imagedepth.upright_grey(img)
        done[key] = grey if grey is not None else imagedepth.upright_rgb(img, imagedepth.orientation(img)).convert("L")
    return done[key]


def _uniform(lines: np.ndarray, colour: np.ndarray) -> np.ndarray:
    """Which of ``lines`` (n, length, channels) are nearly all within tolerance of ``colour``."""
    far = np.abs(lines - colour)
    # The channels' maximum as elementwise maxima of whole planes: numpy's ``max(axis=2)`` over three
    # values a pixel was most of the border search, itself a third of signing 256 px microscope
    # fields (``cells`` of benchmarks/field.py, cProfile of `check -j 1`).  The same integers.
    near = functools.reduce(np.maximum, (far[..., c] for c in range(far.shape[2]))) <= BORDER_TOLERANCE
    return near.mean(axis=1) >= BORDER_SHARE


def _plain_edge(a: np.ndarray) -> bool:
    """Whether any of the four outermost lines of ``a`` (h, w, 3 uint8) is :func:`_uniform` in its own
    mean colour (truncated to an integer, as ``_border_depth`` takes the edge's colour).

    Most photos stop here, so the four lines are tested as one array in one pass, and only they are
    widened to int16, not the whole probe; rows and columns were tested apart before, with twice
    the numpy calls.  The same sums and quotients, so the same answer
    (``tests/signals/test_fast_paths.py`` holds it to the old test).
    """
    ph, pw = a.shape[:2]
    lines = np.concatenate((a[0], a[-1], a[:, 0], a[:, -1])).astype(np.int16)
    lengths = np.array((pw, pw, ph, ph))
    starts = np.array((0, pw, 2 * pw, 2 * pw + ph))
    colour = (np.add.reduceat(lines, starts, axis=0, dtype=np.float64) / lengths[:, None]).astype(np.int16)
    far = np.abs(lines - np.repeat(colour, lengths, axis=0))
    near = np.maximum(np.maximum(far[:, 0], far[:, 1]), far[:, 2]) <= BORDER_TOLERANCE
    return bool((np.add.reduceat(near, starts, dtype=np.float64) / lengths >= BORDER_SHARE).any())


#: Lines :func:`_border_depth` tests first; each next block is twice as many.
DEPTH_BLOCK = 8


def _border_depth(lines: np.ndarray) -> int:
    """How many of ``lines`` (n, length, 3), outermost first, are uniform in the outermost one's colour.

    Tested a block at a time from the edge, stopping at the first line that is not: a border is
    a few lines deep where one is found at all, so the rest of the image is not looked at (the same
    depth as testing every line)."""
    colour = np.median(lines[0], axis=0).astype(np.int16)  # robust to the few stray pixels allowed
    start, block = 0, DEPTH_BLOCK
    while start < len(lines):
        close = _uniform(lines[start:start + block], colour)
        if not close.all():
            return start + int(np.argmin(close))
        start, block = start + block, 2 * block
    return len(lines)


def _trimmed(near: int, far: int, side: int) -> tuple[int, int]:
    """Border depths at two opposite edges, dropped when thin or when they would leave a sliver."""
    near, far = (d if d >= MIN_BORDER * side else 0 for d in (near, far))
    return (near, far) if side - near - far >= MIN_CONTENT * side else (0, 0)


def _own_colour(a: np.ndarray, depths: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    """The border depths (top, bottom, left, right) without those in the picture's own colour.

    Padding differs from what it frames.  An edge whose colour is within BORDER_TOLERANCE of the
    mean of what is left is the picture itself: open water, a steel sheet, a grey road.  Trimming
    it made a texture a corner of itself, cut differently in a copy re-encoded (held out: EuroSAT's
    SeaLake patches of 64 px).  On CIFAR's listed near-duplicates no trim is undone (an object on
    a white studio background pulls the mean away from the white): 111/117 at error in one finding
    rather than 110, 366 test images flagged rather than 371 (``benchmarks/quality.py --only init``).
    Small pictures only: a receipt padded to a square with white is trimmed back to its text as
    its original is, and with this rule for all sizes that copy fell from an error to a same-scene
    warning (``tests/detectors/aligned/test_lookalikes.py``'s receipts lost their hash matches too).
    """
    top, bottom, left, right = depths
    h, w = a.shape[:2]
    kept = a[top:h - bottom, left:w - right].reshape(-1, a.shape[2]).mean(axis=0)
    edges = ((top, a[0]), (bottom, a[-1]), (left, a[:, 0]), (right, a[:, -1]))
    own = [d > 0 and float(np.abs(np.median(line, axis=0) - kept).max()) <= BORDER_TOLERANCE for d, line in edges]
    return tuple(0 if o else d for o, (d, _) in zip(own, edges))  # type: ignore[return-value]


def content_box(rgb: Image.Image, own_colour: bool = False) -> tuple[int, int, int, int] | None:
    """The box inside uniform borders at any of the four edges (any colour), or None.

    A line (row or column) is border when nearly all its pixels are within
    ``BORDER_TOLERANCE`` of the edge's colour; each edge has its own colour.
    An all-uniform image, or one that would keep less than ``MIN_CONTENT``
    of a side, is left as it is.  With ``own_colour`` (pictures under DETAIL_FROM px), an edge in
    the picture's own colour is kept (:func:`_own_colour`).
    """
    w, h = rgb.size
    scale = max(1, -(-max(w, h) // PROBE))
    probe = rgb.reduce(scale) if scale > 1 else rgb
    a = np.asarray(probe)
    ph, pw = a.shape[:2]
    if ph < 8 or pw < 8:
        return None
    # Most photos have no uniform edge: one look at the four outermost lines.
    if not _plain_edge(a):
        return None
    a = a.astype(np.int16)
    cols = a.transpose(1, 0, 2)
    top, bottom = _trimmed(_border_depth(a), _border_depth(a[::-1]), ph)
    left, right = _trimmed(_border_depth(cols), _border_depth(cols[::-1]), pw)
    if not (top or bottom or left or right):
        return None
    if own_colour:
        top, bottom, left, right = _own_colour(a, (top, bottom, left, right))
        if not (top or bottom or left or right):
            return None
    # Probe line k covers image lines k*scale .. (k+1)*scale - 1 (the last one fewer).
    return left * scale, top * scale, min(w, (pw - right) * scale), min(h, (ph - bottom) * scale)


@dataclass(frozen=True)
class Failed:
    """Why a file could not be signed, and what its bytes alone still said (``Family.header``)."""

    why: str
    #: The header families (a DICOM attribute, an EXIF field) read without the pixels: a patient's
    #: file that no decoder reads keeps its group, and stays an unreadable finding.
    header: dict[str, bytes] = field(default_factory=dict)


def sign(task: SignTask) -> tuple[bytes, bool, dict[str, bytes] | Failed]:
    """Read, digest and decode one file, then compute each family.  Never raises."""
    try:
        data = read_bytes(task.path)  # a local file, or an object-storage URL (sources.py)
    except OSError as exc:
        return b"", False, Failed(f"cannot read file: {exc.strerror or exc}")
    digest = hashlib.sha256(data).digest()
    if task.families and all(f.header for f in task.families):
        # A stored content lacks only what its header says (a new rule, an unreadable file): no decode.
        return digest, True, header_rows(data, task.families)
    result = _signed(data, task) if data else "zero-byte file"
    if isinstance(result, str):
        return digest, False, Failed(result, header_rows(data, task.families))
    return digest, True, result


def _signed(data: bytes, task: SignTask) -> dict[str, bytes] | str:
    """Every family of ``task`` from one decode of ``data``; why not, as text."""
    step = "decode"
    try:
        # Pillow warns about damaged metadata (bad TIFF tags, corrupt EXIF);
        # those are noise on the user's terminal, never a finding.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            wants_colour = any(f.colour for f in task.families)
            decoded = decode(data, task.max_pixels, colour=COLOUR if wants_colour else 0)
            decoded.memo[FAMILIES] = task.families
            out = {"dims": struct.pack("<qq", *decoded.size)}
            for f in task.families:
                step = f.name
                out[f.name] = f.compute(decoded, f)
        return out
    except Unreadable as exc:
        return str(exc)
    except Image.UnidentifiedImageError:
        bands = _tiff_bands(data)
        if bands is not None and bands > 4:
            return (f"a TIFF of {bands} bands per pixel (multispectral), which Pillow cannot read: "
                    "check an RGB export of it instead, or `ignore:` such files")
        if lfs.is_pointer(data):
            return lfs.why("image")
        return "not an image Pillow can identify (wrong suffix, or corrupt header)"
    except Exception as exc:
        # Pillow's parsers raise almost any type on hostile bytes (a TIFF tag
        # of the wrong type gives TypeError): all of them mean a damaged file.
        # An error of OpenCV's (a 2000x8 strip once broke ORB's pyramid) is ours, not the file's.
        if type(exc).__module__.startswith("cv2"):
            return f"the `{step}` signature failed on this image ({_first_line(exc)}); please report it"
        return f"corrupt or truncated image: {exc}"


def header_rows(data: bytes, families: tuple[Any, ...]) -> dict[str, bytes]:
    """The rows of the header families (``Family.header``) of ``data``, read without decoding a pixel.

    A family that fails on hostile bytes gets the all-zero row, "absent", so the content is
    not read again on every check for it.
    """
    # Header families read ``source`` (and ``memo``) only: a 1-pixel placeholder stands for the pixels.
    bare = Decoded(Image.new("L", (1, 1)), (0, 0), source=data)
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for f in families:
            if f.header:
                try:
                    out[f.name] = f.compute(bare, f)
                except Exception:  # noqa: BLE001 - hostile header bytes: nothing read from them
                    out[f.name] = bytes(f.row_bytes)
    return out


def _tiff_bands(data: bytes) -> int | None:
    """SamplesPerPixel of a TIFF's first image (tag 277), read from its header; None if not a TIFF."""
    order = {b"II*\0": "<", b"MM\0*": ">"}.get(data[:4])
    if order is None or len(data) < 8:
        return None
    try:
        (ifd,) = struct.unpack_from(order + "I", data, 4)
        (count,) = struct.unpack_from(order + "H", data, ifd)
        for k in range(min(count, 512)):
            tag, kind, _, value = struct.unpack_from(order + "HHI4s", data, ifd + 2 + 12 * k)
            if tag == 277:
                return struct.unpack_from(order + ("H" if kind == 3 else "I"), value)[0]
    except struct.error:  # a header cut short: nothing to say but that it is not read
        return None
    return None


def _first_line(exc: BaseException) -> str:
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)


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
            if dicom.is_dicom(data):  # the stored values, not the window the header applies to them
                return True, dicom.raw_digest(data, max_pixels, imagedepth.MAX_DECODE_BYTES)
            img = open_image(data, max_pixels)
            imagedepth.check_memory(img)
            return True, imagedepth.pixel_digest(img, imagedepth.orientation(img))
    except Exception as exc:  # any decode failure: the pair is simply not identical
        return False, str(exc).encode("utf-8", "surrogateescape")  # it may quote a file name
