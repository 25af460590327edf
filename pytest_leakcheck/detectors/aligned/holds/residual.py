"""Where two aligned pictures differ, at HI px: the largest block residual of a pair (``documents``).

Two documents of one printed template (specimen ID cards of one country,
invoices of one shop) share their layout, so every global signature, and the
32 px and 96 px verdicts, score them like copies; what differs is a few lines
of text or a portrait.  At 96 px that text is a grey bar, so both files are
decoded again at HI px (:func:`squares`), the pair is aligned as ``aligned``'s
fine verdict aligns it (``hires.align32``, then the best 96 px window), and the
HI px band-passed picture is cut in blocks, each correlated at its own best
shift within LOCAL px: :func:`rmax` is the largest block residual (energy times
one minus the squared correlation) over the median block energy.  A copy
agrees everywhere; a sibling document does not where its text differs.

Measured with ``benchmarks/template_residual.py`` (which calls these functions):
on ``prado`` (``benchmarks/field.py``), 0.44-0.45 for the two pairs with one
MRZ, 1.67-29 for all 38 sampled pairs of other documents.  Costs two decodes and
0.6-1.4 s a pair, so only document pairs are asked (``documents.held``).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from PIL import Image

from ....signals import imagedepth
from ....signals.decode import COLOUR, DETAIL_FROM, content_box, decode, detail_grey, open_image
from .. import alignment, hires
from ..descriptors import describe

#: The re-decoded square is M times the fine one.
M = 3
HI = M * hires.F
#: Block side at HI px (12 px: a line of small print is 6-10 px tall on a 600 px card).
BLOCK = 12
#: Each block's own best shift, px at HI: a slight rotation or warp is a local shift.
LOCAL = 2
#: A block is inked where its energy is over this share of the 90th percentile block's.
INKED = 0.1


def squares(data: bytes, max_pixels: int) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """The 32 px grey square, the 96 px fine square high-passed as the fine verdict passes it (None
    for a small image) and the HI px one band-passed (:func:`band`), of one file.

    The HI square is the content box of the shared decode, scaled to the full decode and squashed
    to HI x HI, as the fine square is squashed to 96: the two share their geometry.
    """
    d = decode(data, max_pixels, COLOUR)
    g32 = describe(np.asarray(d.colour))["grey32"].reshape(alignment.S, alignment.S)
    fine = hires.square(hires.row(d, None))  # type: ignore[arg-type]
    passed = None if fine is None else hires.high_pass(fine[None].astype(np.float32))[0]
    box = content_box(d.upright, own_colour=max(d.size) < DETAIL_FROM)
    img = open_image(data, max_pixels)
    rgb = imagedepth.upright_rgb(img, imagedepth.orientation(img))
    if box is not None:
        sx, sy = rgb.width / d.upright.width, rgb.height / d.upright.height
        rgb = rgb.crop((round(box[0] * sx), round(box[1] * sy), round(box[2] * sx), round(box[3] * sy)))
    hi = rgb.convert("L").resize((HI, HI), Image.Resampling.LANCZOS, reducing_gap=3.0)
    return g32, passed, band(np.asarray(hi, np.float32))


@lru_cache(maxsize=1)
def _band_matrices() -> tuple[np.ndarray, np.ndarray]:
    return hires._gauss(0.8, HI), hires._gauss(3.0, HI)


def band(hi: np.ndarray) -> np.ndarray:
    """The HI px square's band of DoG(0.8, 3) px: small print and strokes, without shading.  The
    kernels are symmetric, so the band of a turned or mirrored square is the turned band."""
    b0, b1 = _band_matrices()
    return (b0 @ hi @ b0.T) - (b1 @ hi @ b1.T)


def _corr(w: np.ndarray, t: np.ndarray) -> float:
    w, t = w - w.mean(), t - t.mean()
    return float((w * t).sum() / max(np.sqrt((w * w).sum() * (t * t).sum()), 1e-6))


def window96(hq: np.ndarray, hr: np.ndarray, flipped: bool, zoom: int, shift: int) -> tuple[float, tuple[float, int, int]]:
    """Best fine correlation around the 32 px alignment, and its geometry (zoom factor, row, column at 96 px)."""
    side, span, off = alignment.S - alignment.T + 1, hires.TF + 2 * hires.REACH, (hires.F - hires.TF) // 2
    y0 = int(np.clip(hires.K * (shift // side) - hires.REACH, 0, hires.F - span))
    x0 = int(np.clip(hires.K * (shift % side) - hires.REACH, 0, hires.F - span))
    tf = hires.TF
    t, g = hr[off:off + tf, off:off + tf], (hq[:, ::-1] if flipped else hq)
    best: tuple[float, tuple[float, int, int]] = (-np.inf, (1.0, 0, 0))
    zooms = hires._zooms()
    for k in range(len(hires.SUBZOOMS)):
        reg = zooms[zoom, k, y0:y0 + span] @ g @ zooms[zoom, k, x0:x0 + span].T
        for dy in range(span - tf + 1):
            for dx in range(span - tf + 1):
                c = _corr(reg[dy:dy + tf, dx:dx + tf], t)
                if c > best[0]:
                    best = (c, (alignment.SCALES[zoom] * hires.SUBZOOMS[k], y0 + dy, x0 + dx))
    return best


def zoom_rows(n: int, s: float, first: int, count: int) -> np.ndarray:
    """Rows ``first`` .. ``first + count`` of a linear resampling of ``n`` samples zoomed by ``s`` about the centre."""
    c = (n - 1) / 2
    x = np.clip(c + (np.arange(first, first + count) - c) / s, 0, n - 1)
    x0 = np.minimum(np.floor(x).astype(int), n - 2)
    m = np.zeros((count, n), np.float32)
    m[np.arange(count), x0] += 1 - (x - x0)
    m[np.arange(count), x0 + 1] += x - x0
    return m


def blocks_hi(q: np.ndarray, r: np.ndarray, flipped: bool, geom: tuple[float, int, int], block: int = BLOCK,
              local: int = LOCAL) -> dict[str, float]:
    """Local block correlations of the band-passed HI px squares around the 96 px window scaled up M times.

    ``rmax``: the largest block residual after its own gain, energy x (1 - corr+^2), over the
    median block energy of the reference; ``smin``: the lowest correlation of a block whose energy
    is over that median (text, a face), ``min``: of any textured block.
    """
    s, y, x = geom
    t3, pad = M * hires.TF, M * hires.REACH // 2 + 1 + local
    g = q[:, ::-1] if flipped else q
    reg = zoom_rows(HI, s, M * y - pad, t3 + 2 * pad) @ g @ zoom_rows(HI, s, M * x - pad, t3 + 2 * pad).T
    off = (HI - t3) // 2
    t = r[off:off + t3, off:off + t3]
    reach = pad - local
    _, gy, gx = max((_corr(reg[pad + dy:pad + dy + t3, pad + dx:pad + dx + t3], t), dy, dx)
                    for dy in range(-reach, reach + 1) for dx in range(-reach, reach + 1))
    n = t3 // block
    tb = _blocks(t, n, block)
    et = tb.var(axis=1)
    corr, ew = np.full(n * n, -np.inf), np.zeros(n * n)
    for dy in range(-local, local + 1):  # each block's own best shift, all blocks at once
        for dx in range(-local, local + 1):
            oy, ox = pad + gy + dy, pad + gx + dx
            wb = _blocks(reg[oy:oy + t3, ox:ox + t3], n, block)
            c = _block_corr(wb, tb)
            better = c > corr
            corr[better], ew[better] = c[better], wb[better].var(axis=1)
    e, med = np.minimum(et, ew), np.median(et)
    textured, strong = np.sqrt(e) > 0.25 * np.median(np.sqrt(e)), e > med
    res = e * (1 - np.clip(corr, 0, 1) ** 2)
    # Over the textured blocks' median too: on a page mostly blank the median block is blank paper,
    # and any residual is many times its energy (a paw print on white card, ``tracks``).
    inked = et > INKED * np.percentile(et, 90)
    return {"min": float(corr[textured].min()), "smin": float(corr[strong].min()) if strong.any() else 1.0,
            "rmax": float(res.max() / max(med, 1e-9)),
            "rtex": float(res.max() / max(np.median(et[inked]) if inked.any() else med, 1e-9))}


def _blocks(a: np.ndarray, n: int, block: int) -> np.ndarray:
    """The n x n blocks of side ``block`` of ``a``, one row each."""
    return a[:n * block, :n * block].reshape(n, block, n, block).transpose(0, 2, 1, 3).reshape(n * n, -1)


def _block_corr(w: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Correlation of each row of ``w`` with the same row of ``t``."""
    w, t = w - w.mean(1, keepdims=True), t - t.mean(1, keepdims=True)
    return (w * t).sum(1) / np.maximum(np.sqrt((w * w).sum(1) * (t * t).sum(1)), 1e-6)


Squares = tuple[np.ndarray, np.ndarray | None, np.ndarray]


def aligned(qa: Squares, qb: Squares, orientation: str) -> tuple[float, tuple[float, int, int], np.ndarray, np.ndarray,
                                                                  np.ndarray, np.ndarray] | None:
    """Both directions aligned as the fine verdict aligns them, the better one: (fine score, geometry,
    the two high-passed fine squares and the two HI squares, first one turned); None for a small image."""
    (qa32, hq, qah), (qb32, hr, qbh) = qa, qb
    if hq is None or hr is None:
        return None
    flipped = orientation == "hflip"
    turned = orientation if orientation not in ("identity", "hflip") else "identity"
    best = None
    for a32, ha, ah, b32, hb, bh, how in ((qa32, hq, qah, qb32, hr, qbh, turned),
                                         (qb32, hr, qbh, qa32, hq, qah, alignment.TURNS[turned][1])):
        if how != "identity":
            a32, ha, ah = (np.ascontiguousarray(alignment.turn(x[None], [how])[0]) for x in (a32, ha, ah))
        zoom, shift = hires.align32(a32[None].astype(np.float32), b32[None].astype(np.float32), np.array([flipped]))
        c, geom = window96(ha, hb, flipped, int(zoom[0]), int(shift[0]))
        if best is None or c > best[0]:
            best = (c, geom, ha, hb, ah, bh)
    return best


def rmax(a: bytes | Squares, b: bytes | Squares, orientation: str, max_pixels: int) -> dict[str, float] | None:
    """The pair's largest HI px block residual over its median block energy and over its inked
    blocks' (``rmax``, ``rtex`` of :func:`blocks_hi`), the first file turned as ``orientation``
    says; None where either image is small.  ``a`` and ``b``: the files (decoded within
    ``max_pixels``), or their :func:`squares`."""
    qa = squares(a, max_pixels) if isinstance(a, bytes) else a
    qb = squares(b, max_pixels) if isinstance(b, bytes) else b
    got = aligned(qa, qb, orientation)
    if got is None:
        return None
    _, geom, _, _, ah, bh = got
    got = blocks_hi(ah, bh, orientation == "hflip", geom)
    return {"rmax": got["rmax"], "rtex": got["rtex"]}


#: Long side of the grey each file of a turned pair is decoded to (``turned``): twice HI, so the squash to
#: HI averages rather than interpolates.
TURN_SIDE = 2 * HI


def turned(a: bytes, b: bytes, m: np.ndarray, sizes: tuple[tuple[int, int], tuple[int, int]],
           max_pixels: int) -> dict[str, float] | None:
    """:func:`rmax` of a pair lined up by a map no orientation names (``turned_copy``: a turn of a few
    degrees, a shear): ``m`` (2 x 3) takes pixels of ``b`` onto pixels of ``a`` in their greys of
    ``sizes`` (width, height each).  Both files are decoded again at TURN_SIDE, ``b`` is turned onto
    ``a``, both squashed to HI and band-passed as :func:`squares` does, and their blocks compared at
    identity (:func:`blocks_hi`); where ``b`` shows nothing, ``a``'s own pixels stand in, so a crop's
    missing margin says nothing.  None where a file's frame at TURN_SIDE is not the one ``m`` was
    found in (a trimmed border decoded again)."""
    from ....signals.opencv import opencv

    cv2 = opencv()

    greys = []
    for data, (w, h) in ((a, sizes[0]), (b, sizes[1])):
        d = decode(data, max_pixels, COLOUR)
        d.source, d.max_pixels = data, max_pixels  # as the check's decode leaves it: read again at TURN_SIDE
        g = detail_grey(d, TURN_SIDE).astype(np.float32)
        if abs(g.shape[1] / g.shape[0] - w / h) > 1.5 / min(w, h):  # not the frame m was found in
            return None
        greys.append((g, np.diag([g.shape[1] / w, g.shape[0] / h, 1.0])))
    (ga, sa), (gb, sb) = greys
    big = (sa @ np.vstack([m, (0.0, 0.0, 1.0)]) @ np.linalg.inv(sb))[:2]
    size = (ga.shape[1], ga.shape[0])
    onto = cv2.warpAffine(gb, big, size, flags=cv2.INTER_LINEAR)
    inside = cv2.warpAffine(np.ones(gb.shape, np.uint8), big, size, flags=cv2.INTER_NEAREST) > 0
    onto = np.where(inside, onto, ga)
    sq = [band(cv2.resize(x, (HI, HI), interpolation=cv2.INTER_AREA)) for x in (onto, ga)]
    off = (hires.F - hires.TF) // 2  # the 96 px window at identity: the central template, as at 32 px
    got = blocks_hi(sq[0], sq[1], False, (1.0, off, off))
    return {"rmax": got["rmax"], "rtex": got["rtex"]}
