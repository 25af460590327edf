"""``aligned``'s second look at large images: the detail verdict again, at 96 px.

At 32 px a 640 x 480 photograph carries no more evidence than a CIFAR image:
two different photos sharing their layout (one's 8 px blur plus another's
finer detail) correlate in detail as well as a cropped copy does (0.95-0.99).
The shared decode keeps 160 x 120 px of such a photo (``signals.decode.DETAIL``),
so a 96 px grey square of the same content box (K = 3 times the 32 px one)
holds detail the 32 px square cannot.  It is stored (``fine`` family, a
variable row: one flag byte, then the square) only for images whose decoded
content is at least FINE_FROM px on its short side; every other image's row
is the flag alone, so CIFAR's store and speed do not move.

A pair is scored here by its 32 px alignment (mirror, zoom, shift, found
again as ``alignment.verify`` finds it), scaled up K times and refined by a
third of a zoom step and REACH px, on the finest detail only: both squares
lightly blurred (FINE_BLUR) minus a Gaussian blur of FINE_SIGMA px, a band
above what the 32 px square holds.  Copies keep that band, lookalikes do
not.  Why 96 px and that band, not 64 px (``benchmarks/finelevel.py``): at
64 px the lookalikes' fine scores reached 0.65 and the copies' fell to 0.70
on synthetic photos (a 0.05 gap), at 96 px 0.35 against 0.67.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from PIL import Image

from ...signals.decode import DECODE_PATH, KEEP, Decoded
from ...signals.families import Family
from . import alignment

K = 3  # the fine square is K times the 32 px one
F = K * alignment.S  # side of the fine square
TF = K * alignment.T  # its template: the same central share of the reference as at 32 px
#: Decoded content (after border trimming) shorter than this on a side stores no fine square:
#: its square would hold little detail the 32 px one lacks.  Every photo of DETAIL_FROM px and
#: more up to 2:1 decodes to at least 160 x 80, and a smaller JPEG of at least KEEP px keeps
#: KEEP (the decode's draft stops there); CIFAR (32), Tiny ImageNet (64) stay below.
FINE_FROM = KEEP
#: Refinement around the 32 px alignment scaled up: px at F (the 32 px shift is within half a
#: pixel there, 1.5 px here), and zooms across the 32 px search's 7 % step (0.5 px at the
#: template's edge is left).
REACH = 2
SUBZOOMS = (0.974, 1.0, 1.026)
#: Blur before correlating (JPEG noise, sub-pixel misalignment) and the high pass's width, px at
#: F: wavelengths of about 2-4 px at 96 px (13-27 px of a 640 px photo), where the lookalikes'
#: shared 8 px blur leaves little.  A band about 1.4 times wider (0.525 / 0.75) gave the
#: photographs' copies a little more margin and the synthetic ones much less (lookalikes 0.50
#: at most against copies from 0.75; with this band 0.35 against 0.67).
FINE_BLUR = 0.375
FINE_SIGMA = 0.6
_CHUNK = 32  # pairs per block


# --------------------------------------------------------------------------
# The family: one flag byte, then the square for large images only


def row(decoded: Decoded, family: Family) -> bytes:
    """``\\x01`` and the F x F grey square of the content, packed (:func:`square` unpacks it), or
    ``\\x00`` alone for a small image.

    The square is squashed from the same trimmed decode as the 32 px colour
    square (``Decoded.content``), so the two share their geometry: pixel
    centres at 32 px fall at K x + (K - 1) / 2 here.  Packed because the store
    keeps rows in pages of 4 kB: the raw 9.2 kB took three overflow pages (13 kB
    a photo in all); each row's differences along x, deflated at level 1
    (lossless), take two, and cost less than a PNG would (``benchmarks/speed.py``).
    """
    content = decoded.content
    if content is None or min(content.size) < FINE_FROM:
        return b"\0"
    grey = decoded.content_grey if decoded.content_grey is not None else content.convert("L")
    grey = np.asarray(grey.resize((F, F), Image.Resampling.LANCZOS, reducing_gap=3.0), np.uint8)
    return b"\1" + zlib.compress(np.diff(grey, axis=1, prepend=np.uint8(0)).tobytes(), 1)


def square(row: bytes) -> np.ndarray | None:
    """The F x F square a ``fine`` row holds, or None (a small image's row, or a damaged one)."""
    if row[:1] != b"\1":
        return None
    try:
        diffs = np.frombuffer(zlib.decompress(row[1:]), np.uint8)
    except zlib.error:  # the store's bytes are not trusted
        return None
    if diffs.size != F * F:
        return None
    return np.cumsum(diffs.reshape(F, F), axis=1, dtype=np.uint8)  # differences wrap around mod 256


#: What the fine square depends on.  Stored with every row, so a digest: a small image's row is
#: one byte, and the fingerprint must not be ten times that.
FINE_PARAMS = "fine-" + hashlib.blake2b(f"grey{F}-dzip;from{FINE_FROM};{DECODE_PATH};v1".encode(),
                                        digest_size=8).hexdigest()


def small(width: int, height: int) -> bytes | None:
    """A file under FINE_FROM px on a side decodes to less (a decode never enlarges): its row, undecoded."""
    return b"\0" if min(width, height) < FINE_FROM else None




@lru_cache(maxsize=4)
def _gauss(sigma: float, n: int) -> np.ndarray:
    x = np.arange(n)
    g = np.exp(-0.5 * ((x[:, None] - x[None, :]) / sigma) ** 2)
    g[g < 1e-9] = 0  # far tails underflow to subnormal floats, which made every product 100x slower
    return (g / g.sum(1, keepdims=True)).astype(np.float32)


@lru_cache(maxsize=1)
def _zooms() -> np.ndarray:
    """Bilinear zoom about the centre at F px for every 32 px zoom x SUBZOOMS: (len(SCALES), Z, F, F).

    Only 7 x 3 scales ever occur, so the matrices are made once.
    """
    c = (F - 1) / 2
    out = np.zeros((len(alignment.SCALES), len(SUBZOOMS), F, F), np.float32)
    for i, base in enumerate(alignment.SCALES):
        for k, sub in enumerate(SUBZOOMS):
            x = np.clip(c + (np.arange(F) - c) / (base * sub), 0, F - 1)
            x0 = np.minimum(np.floor(x).astype(np.int64), F - 2)
            out[i, k, np.arange(F), x0] += 1 - (x - x0)
            out[i, k, np.arange(F), x0 + 1] += x - x0
    return out


def high_pass(grey: np.ndarray) -> np.ndarray:
    """(N, F, F) squares, lightly blurred (FINE_BLUR) minus their Gaussian blur of FINE_SIGMA px.

    Applied before the zoom, not after as at 32 px: zooms here are within
    4 % of the 32 px one, and one high pass per image costs a third of one
    per zoom.
    """
    b, w = _gauss(FINE_BLUR, F), _gauss(FINE_SIGMA, F) @ _gauss(FINE_BLUR, F)
    out = np.empty(np.shape(grey), np.float32)
    # HIGH_PASS_BLOCK squares at a time: each is filtered on its own, so the same values.
    for a in range(0, len(out), HIGH_PASS_BLOCK):
        g = np.asarray(grey[a:a + HIGH_PASS_BLOCK], np.float32)
        out[a:a + HIGH_PASS_BLOCK] = _sandwich(b, g) - _sandwich(w, g)
    return out


#: Squares :func:`high_pass` filters at once.  Every square of every judged pair is filtered
#: in one call (``hires_levels._judged``), and at once its float32 copies (four of 36 KB a
#: square) took a check of 12,887 MRI slices from 550 MB to 1.14 GB (``tumor`` of
#: benchmarks/field.py, checked with --no-cache).
HIGH_PASS_BLOCK = 256


def _sandwich(m: np.ndarray, g: np.ndarray) -> np.ndarray:
    """``m @ g @ m.T`` for a stack of squares, as two plain 2-d products (a broadcast ``m`` does not reach BLAS)."""
    n, s = len(g), g.shape[-1]
    x = (g.reshape(-1, s) @ m.T).reshape(n, s, s)  # g @ m.T
    # m @ (g @ m.T), contiguous: a strided operand sends numpy's matmul off BLAS, 100x slower
    return np.ascontiguousarray((x.swapaxes(1, 2).reshape(-1, s) @ m.T).reshape(n, s, s).swapaxes(1, 2))


def align32(qgrey: np.ndarray, rgrey: np.ndarray, flipped: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each query's best 32 px alignment on its own reference, as ``alignment.verify`` finds it:
    (zoom index into ``alignment.SCALES``, shift index into the (S - T + 1)^2 shifts)."""
    n = len(qgrey)
    tmpl2 = alignment.mirrored_templates(alignment.templates(rgrey, coarse=True))
    cand = (np.arange(n) + n * flipped.astype(np.int64))[:, None]
    _, best = alignment.coarse(qgrey, cand, tmpl2)
    b = best[:, 0]
    _, zoom, shift = alignment.fine(qgrey, rgrey, flipped, b // alignment.COARSE_SHIFTS * alignment.COARSE_STEP, b % alignment.COARSE_SHIFTS)
    return zoom, shift


def detail(hq: np.ndarray, hr: np.ndarray, flipped: np.ndarray, zoom: np.ndarray,
           shift: np.ndarray) -> np.ndarray:
    """Correlation of the finest detail of query/reference pairs around their 32 px alignment (NaN: no evidence).

    ``hq`` and ``hr``: the F px squares, high-passed (:func:`high_pass`; once
    per image, whichever direction it is scored in).  The query (mirrored as found) is
    zoomed at SUBZOOMS around its 32 px zoom, and the reference's central
    TF x TF crop is correlated with the query's windows within REACH px of K
    times the 32 px shift; the best window is the score.  A side flatter
    than ``alignment.DETAIL_STD`` grey levels in that band (a blurred copy, one
    upscaled from a thumbnail) carries no fine evidence: NaN, and the pair
    keeps its 32 px verdict.
    """
    n = len(hq)
    out = np.full(n, np.nan, np.float32)
    side, span = alignment.S - alignment.T + 1, TF + 2 * REACH
    off = (F - TF) // 2
    for a in range(0, n, _CHUNK):
        b = min(n, a + _CHUNK)
        y0 = np.clip(K * (shift[a:b] // side) - REACH, 0, F - span)
        x0 = np.clip(K * (shift[a:b] % side) - REACH, 0, F - span)
        # Only the rows and columns the windows cover: the zoom's matrices, cut to the span, gathered
        # straight from the table (not each pair's whole (Z, F, F) first).
        zs, ks = zoom[a:b, None, None], np.arange(len(SUBZOOMS))[None, :, None]
        my = _zooms()[zs, ks, (y0[:, None] + np.arange(span))[:, None, :]]  # (nb, Z, span, F)
        mx = _zooms()[zs, ks, (x0[:, None] + np.arange(span))[:, None, :]]
        g = np.where(np.asarray(flipped[a:b])[:, None, None], hq[a:b, :, ::-1], hq[a:b])
        nb = b - a
        # (nb, Z, span, span): every zoom's rows against one square in one product per pair, then
        # the columns; contiguous operands (a strided one sends numpy's matmul off BLAS)
        rows = (my.reshape(nb, -1, F) @ g).reshape(nb, len(SUBZOOMS), span, F)
        region = rows @ np.ascontiguousarray(mx.swapaxes(-1, -2))
        t = hr[a:b, off:off + TF, off:off + TF]
        t = t - t.mean((1, 2), keepdims=True)
        nt = np.sqrt(np.einsum("nuv,nuv->n", t, t))
        best = _best_window(region, t, nt)
        out[a:b] = np.where((nt > alignment.DETAIL_STD * TF) & np.isfinite(best), best, np.nan)
    return out


def _best_window(region: np.ndarray, t: np.ndarray, nt: np.ndarray) -> np.ndarray:
    """Best normalised correlation of each centred template (nb, TF, TF) with the TF x TF windows of its
    (nb, Z, span, span) region; -inf where every window is flat.  Window sums come from running sums,
    down the rows once and then along each row of TF-row sums (the windows' few offsets)."""
    nb, z, span = region.shape[:3]
    n = span - TF + 1
    sums = []
    for x in (region.astype(np.float64), region.astype(np.float64) ** 2):
        rows = np.zeros((nb, z, span + 1, span), np.float64)
        np.cumsum(x, axis=2, out=rows[:, :, 1:])
        band = rows[:, :, TF:TF + n] - rows[:, :, :n]  # (nb, z, n, span): sums of TF rows from each dy
        cols = np.zeros((nb, z, n, span + 1), np.float64)
        np.cumsum(band, axis=3, out=cols[:, :, :, 1:])
        sums.append(cols[:, :, :, TF:TF + n] - cols[:, :, :, :n])  # (nb, z, n, n)
    s1, s2 = sums
    nw = np.sqrt(np.maximum(s2 - s1 * s1 / (TF * TF), 0))
    best = np.full(nb, -np.inf)
    for dy in range(n):
        for dx in range(n):
            dot = np.einsum("nzuv,nuv->nz", region[:, :, dy:dy + TF, dx:dx + TF], t)
            w = nw[:, :, dy, dx]
            sc = np.where(w > alignment.DETAIL_STD * TF, dot / np.maximum(w * nt[:, None], 1e-6), -np.inf)
            best = np.maximum(best, sc.max(1))
    return best.astype(np.float32)


def both_ways(q32: np.ndarray, r32: np.ndarray, qf: np.ndarray, rf: np.ndarray, flipped: np.ndarray,
              turned: Sequence[str] | None = None) -> np.ndarray:
    """Fine score of pairs, the better of both directions (NaN: no fine evidence either way).

    Each direction is aligned at 32 px as ``alignment.verify`` aligns it, then
    scored at F px (:func:`detail`).  ``turned`` (one orientation per pair):
    the first image turned that way meets the second, and the second turned
    back meets the first, as ``pairs.pair_scores`` turns them.
    """
    return passed_both_ways(q32, r32, high_pass(qf), high_pass(rf), flipped, turned)


def passed_both_ways(q32: np.ndarray, r32: np.ndarray, hq: np.ndarray, hr: np.ndarray, flipped: np.ndarray,
                     turned: Sequence[str] | None = None) -> np.ndarray:
    """:func:`both_ways` of squares already high-passed (:func:`high_pass`, once per image)."""
    flipped = np.asarray(flipped, bool)
    back = None if turned is None else [alignment.TURNS[o][1] for o in turned]
    best = np.full(len(q32), np.nan, np.float32)
    # The high pass is symmetric, so it commutes with every turn: once per image.
    for a32, ha, b32, hb, how in ((q32, hq, r32, hr, turned), (r32, hr, q32, hq, back)):
        if how is not None:
            a32, ha = alignment.turn(a32, how), np.ascontiguousarray(alignment.turn(ha, how))
        zoom, shift = align32(np.asarray(a32, np.float32), np.asarray(b32, np.float32), flipped)
        best = np.fmax(best, detail(ha, hb, flipped, zoom, shift))
    return best
