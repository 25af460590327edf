"""The pictures on a review card: thumbnails, the alignment a pair was found at, the difference heatmap.

A heatmap of two copies is only evidence when it compares the same points
of the scene.  So the first image is turned the way the detector found the
pair (a hash's orientation), and for ``aligned`` matches it is also zoomed
and shifted onto the second one, as that detector aligns them.  The report
does not carry the detector's zoom and shift (a match is a score), so the
page re-finds them the same way, by normalised cross-correlation of blurred
grey squares over zoom x shift; a pair whose ``signals`` hold ``zoom``,
``shift_x`` and ``shift_y`` (a detector that reports them) uses those.
Where the shifted image does not cover the second one the heatmap is blue:
not compared, rather than "different".
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageFilter, ImageOps

from ...detectors import registry
from ...files.remote import read_bytes
from ...policy.load import DEFAULT_MAX_PIXELS
from ...signals.decode import TRANSPOSE, open_image

#: Longest side of an embedded thumbnail, in pixels.
THUMB = 128
#: Side of the difference heatmap; it is smooth, so a small one scales up well.
HEAT = 64
#: A pixel this many standard deviations off shows at full heat.
HEAT_SCALE = 2.0
JPEG_QUALITY = 70
#: Zooms and shifts (heatmap pixels) the page tries for an ``aligned`` pair: the detector's
#: zoom steps, and shifts as far as its 32 px search reaches (4 px there, 8 here).
ZOOMS = (0.8, 0.86, 0.93, 1.0, 1.07, 1.16, 1.25)
REACH = 8
#: Centre square compared when aligning, so added frames and crops do not count.
TEMPLATE = 48
#: Colour of heatmap pixels the shifted image does not cover.
UNCOVERED = (40, 60, 110)
#: Detectors whose matches are aligned by zoom and shift, not only turned (``Detector.aligns``).
ALIGNING = tuple(d.name for d in registry() if d.aligns)

Loader = Callable[[str], "Image.Image | None"]


def thumbnail_loader(root: object, max_pixels: int = DEFAULT_MAX_PIXELS, size: int = THUMB) -> Loader:
    """Load ``root / path`` as an upright RGB thumbnail; None when it cannot be read."""

    # JPEG decodes at 1/2 .. 1/8 scale while both sides stay >= 3/4 of the
    # thumbnail: several times cheaper than a full decode, and still sharp.
    draft = (size * 3 // 4, size * 3 // 4)

    def load(path: str) -> Image.Image | None:
        try:
            img = open_image(read_bytes(str(root / path)), max_pixels)  # type: ignore[operator]
            img.draft("RGB", draft)
            if img.getexif().get(0x0112, 1) != 1:  # transposing copies, so only when needed
                img = ImageOps.exif_transpose(img)
            img = img.convert("RGB")
            img.thumbnail((size, size), Image.Resampling.LANCZOS)
            return img
        except Exception:  # any unreadable file: the card says so instead of failing the page
            return None

    return load


def oriented(img: Image.Image, orientation: str) -> Image.Image:
    op = TRANSPOSE.get(orientation)
    return img if op is None else img.transpose(op)


def data_uri(img: Image.Image) -> str:
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=JPEG_QUALITY, optimize=True)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


@dataclass(frozen=True)
class Alignment:
    """``a`` zoomed by ``zoom`` about its centre and moved by (``dx``, ``dy``) heatmap pixels lies on ``b``."""

    zoom: float = 1.0
    dx: int = 0
    dy: int = 0

    @property
    def moved(self) -> bool:
        return self.zoom != 1.0 or self.dx != 0 or self.dy != 0

    def text(self) -> str:
        return f"zoom {self.zoom:g}, shift {self.dx:+d},{self.dy:+d} px of {HEAT}"


def _grey(img: Image.Image, size: int = HEAT) -> Image.Image:
    return img.convert("L").resize((size, size), Image.Resampling.BILINEAR)


def _extent(grey: Image.Image, zoom: float, margin: int) -> tuple[np.ndarray, np.ndarray]:
    """``grey`` (a square) zoomed about its centre onto a (side + 2 margin) square, and where it has pixels."""
    size = grey.size[0]
    half = (size / 2 + margin) / zoom
    c = size / 2
    side = size + 2 * margin
    pix = grey.transform((side, side), Image.Transform.EXTENT, (c - half, c - half, c + half, c + half),
                         Image.Resampling.BILINEAR)
    # Where each output pixel's centre falls in the source: inside it, or in the fill.
    src = c - half + (np.arange(side) + 0.5) * (2 * half / side)
    inside = (src >= 0) & (src < size)
    return np.asarray(pix, dtype=np.float32), inside[:, None] & inside[None, :]


def _standard(x: np.ndarray) -> np.ndarray:
    x = x - x.mean(axis=(-1, -2), keepdims=True)
    return x / (np.sqrt((x * x).sum(axis=(-1, -2), keepdims=True)) + 1e-3)


def _box_sums(x: np.ndarray, side: int) -> np.ndarray:
    """Sum of every ``side`` x ``side`` window over the last two axes of ``x`` (an integral image)."""
    c = np.pad(x, [(0, 0)] * (x.ndim - 2) + [(1, 0), (1, 0)]).cumsum(-2).cumsum(-1)
    return c[..., side:, side:] - c[..., :-side, side:] - c[..., side:, :-side] + c[..., :-side, :-side]


def _scores(ga: Image.Image, gb: Image.Image, zooms: tuple[float, ...], template: int, reach: int) -> np.ndarray:
    """Normalised correlation of ``gb``'s centre ``template`` square with ``ga`` zoomed by each of
    ``zooms``, at every shift within ``reach`` pixels: (zooms, 2 reach + 1, 2 reach + 1), no shift
    in the middle.  All zooms in one batch: these arrays are small, numpy's calls are not."""
    size = ga.size[0]
    off, n, span_side = (size - template) // 2, template * template, template + 2 * reach
    tmpl = _standard(np.asarray(gb, dtype=np.float64)[off:off + template, off:off + template])
    span = np.stack([_extent(ga, z, reach)[0][off:off + span_side, off:off + span_side] for z in zooms])
    span = span.astype(np.float64)
    # Every shift at once, by FFT (the span is no wrap-around away from the template).  The
    # template has mean 0, so a window's mean drops out of the product; only its norm is needed.
    valid = 2 * reach + 1
    shape = span.shape[-2:]
    dot = np.fft.irfft2(np.fft.rfft2(span) * np.conj(np.fft.rfft2(tmpl, s=shape)), s=shape)
    s1, s2 = _box_sums(span, template), _box_sums(span * span, template)
    return dot[:, :valid, :valid] / (np.sqrt(np.maximum(s2 - s1 * s1 / n, 0.0)) + 1e-3)


def find_alignment(a: Image.Image, b: Image.Image) -> Alignment:
    """The zoom and shift of ``a`` whose centre correlates best with ``b``'s (blurred grey).

    As the detector does: every zoom at half size first, then the shift at full
    size within a pixel of the best one.
    """
    half = HEAT // 2
    small = [_grey(x, half).filter(ImageFilter.GaussianBlur(0.5)) for x in (a, b)]
    coarse = _scores(small[0], small[1], ZOOMS, TEMPLATE // 2, REACH // 2)
    # The first of equal maxima: the zoom tried first, then the smaller shift in scan order.
    k, y, x = np.unravel_index(int(coarse.argmax()), coarse.shape)
    zoom, cy, cx = ZOOMS[int(k)], REACH // 2 - int(y), REACH // 2 - int(x)
    full = [_grey(x_).filter(ImageFilter.GaussianBlur(1.0)) for x_ in (a, b)]
    score = _scores(full[0], full[1], (zoom,), TEMPLATE, REACH)[0]
    near = np.full(score.shape, -np.inf)
    ys = slice(max(0, REACH - 2 * cy - 1), REACH - 2 * cy + 2)
    xs = slice(max(0, REACH - 2 * cx - 1), REACH - 2 * cx + 2)
    near[ys, xs] = score[ys, xs]
    y, x = np.unravel_index(int(near.argmax()), near.shape)
    return Alignment(zoom, REACH - int(x), REACH - int(y))


def alignment_of(signals: dict[str, float]) -> Alignment | None:
    """The alignment a detector reported with the pair (``zoom``, ``shift_x``, ``shift_y``), if it did."""
    if not {"zoom", "shift_x", "shift_y"} <= set(signals):
        return None
    return Alignment(float(signals["zoom"]), int(round(signals["shift_x"])), int(round(signals["shift_y"])))


def heatmap(a: Image.Image, b: Image.Image, align: Alignment | None = None) -> Image.Image:
    """Where ``a`` (moved by ``align``) and ``b`` differ, both squashed to HEAT px and standardised.

    Standardising makes a brightness or contrast change read as cold: what
    lights up is structure that differs, which is what a reviewer judges.
    """
    align = align or Alignment()
    pix, cover = _extent(_grey(a), align.zoom, REACH)
    window = (slice(REACH - align.dy, REACH - align.dy + HEAT), slice(REACH - align.dx, REACH - align.dx + HEAT))
    x, seen = pix[window], cover[window]
    y = np.asarray(_grey(b), dtype=np.float32)
    if seen.sum() < 16:  # nothing overlaps: no comparison to show
        seen = np.ones_like(seen)

    def standard(v: np.ndarray) -> np.ndarray:
        return (v - v[seen].mean()) / max(float(v[seen].std()), 1e-3)

    t = np.clip(np.abs(standard(x) - standard(y)) / HEAT_SCALE, 0.0, 1.0)
    # black -> red -> yellow -> white
    rgb = np.stack([np.clip(3 * t, 0, 1), np.clip(3 * t - 1, 0, 1), np.clip(3 * t - 2, 0, 1)], axis=-1) * 255
    rgb[~seen] = UNCOVERED
    return Image.fromarray(rgb.astype(np.uint8), "RGB")


def letterbox(size: tuple[int, int], box: int = THUMB) -> tuple[float, float, float]:
    """Scale and offsets of an image of ``size`` shown with ``object-fit: contain`` in a ``box`` square."""
    w, h = size
    s = box / max(w, h, 1)
    return s, (box - w * s) / 2, (box - h * s) / 2
