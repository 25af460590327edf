"""Near-duplicates that hashes miss: retrieve a few candidates, align them, judge the detail.

Real leaks are crops, shifts, zooms, colour changes and added frames of the
same photograph.  Per image we cache two tiny descriptors computed from one
32 px colour square (``descriptors.py``, one ``desc`` family): a 32x32 grey
square, the input of alignment and of the verdict, and a gradient descriptor
for retrieval.

Each query gets its top-k neighbours by the (PCA-reduced) gradient
descriptor, for itself and its mirror image (``multiview.py``).  Each candidate is aligned by
normalised cross-correlation of lightly blurred grey images over zoom x
shift, first at 16 px, then at 32 px around the best coarse alignment, and
judged by the correlation of detail (high-pass images) there: plain grey
correlation is as high for another photograph with the same layout.

The levels are calibrated without labels: each query's upside-down self
cannot be its duplicate, so the scores those impostors reach set the
cut-offs for the false-alarm rates the policy asks for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import orientation as _orientation
from .descriptors import S

SCALES = (0.8, 0.86, 0.93, 1.0, 1.07, 1.16, 1.25)  # ~7 % steps: < 0.5 px error at the crop edge
T = 24  # template: the reference's central T x T crop, so added frames and crops do not count
BLUR = 0.7  # JPEG noise and sub-pixel misalignment otherwise sink textured copies
# Candidates correlating below this at 16 px are never copies (every listed
# CIFAR near-duplicate scores above 0.85 at 16 px, against 11 % of retrieved
# candidates); only the rest pay for the 32 px alignment and the detail score.
REFINE_GATE = 0.85
# Impostors (calibration) have their best few scored whatever they correlate.
REFINE_TOP = 4
# The verdict is the correlation of *detail* at the best alignment: both
# images minus a Gaussian blur of DETAIL_SIGMA px.  Two photographs with the
# same layout (sea below sky, a truck on a road) correlate at 0.95 in plain
# grey, as copies do; their details do not line up.  Measured on the visible
# CIFAR half among pairs above 0.88 in grey: listed near-duplicates score
# 0.79 and up in detail (5th percentile), pairs of different classes 0.65 at
# their 99th percentile.  A side whose detail is flatter than DETAIL_STD grey
# levels carries no evidence: it scores 0.
DETAIL_SIGMA = 2.0
DETAIL_STD = 0.5
# The verdict is also capped by its worst tile: TILES x TILES tiles of the T x T window, each
# with detail of at least TILE_STD grey levels on both sides, the least correlated plus
# TILE_MARGIN.  Measured on the visible CIFAR half (benchmarks/quality.py --only init): among
# error-level links the human list does not hold, those whose worst tile is below 0.1 were half
# different photographs (35 of 70 judged by eye), against 1 in 104 listed near-duplicates; the
# listed pairs' worst tile has its 5th percentile at 0.43 (docs/detectors.md, aligned).
TILES = 3
TILE_STD = 1.0
TILE_MARGIN = 0.65
# A tiny dataset gives too few impostors to know its tail; never go below
# this.  Impostors' detail reaches 0.75 at a few per 10,000 on CIFAR; copies
# score 0.8 and up.
MIN_THRESHOLD = 0.7
# Upside-down images the levels are estimated on (a content-keyed sample).  The levels are
# extrapolated from the impostors' tail, so their standard error falls as 1 / sqrt(n): on
# CIFAR at 4,000 it is as wide as the whole span between too many test images flagged and
# too few copies found at error level; at 8,000 about half that (``benchmarks/growth.py
# --spread``).  The levels are estimated again only when 5 % of the data changed.
CALIBRATION_QUERIES = 8000
# Tail fit: the top TAIL share of impostor maxima, at least TAIL_MIN of them.
TAIL, TAIL_MIN = 0.1, 10
_CHUNK = 128  # queries per verification block
MIN_STD = 2.0  # grey levels
_COLS = 32  # candidates per product in a block
#: Gated pairs :func:`verify` aligns and scores at once, some 30 KB each meanwhile (the 32 px
#: windows, the high-passed squares): among 12,887 MRI slices, alike by nature, most candidates
#: pass the 16 px gate, and a search block of 1,024 queries held 9,000 such pairs, 280 MB, on each
#: of the search's two threads (``tumor`` of benchmarks/field.py, checked with --no-cache).
#: :func:`fine` holds each distinct query view's three zooms (12 KB) for the whole chunk.
VERIFY_PAIRS = 2048
FINE_REACH = 1  # px at 32 px around the coarse estimate: the coarse grid steps 2 px


# --------------------------------------------------------------------------
# Verification: normalised cross-correlation over mirror x zoom x shift


def _resample(scales: tuple[float, ...] = SCALES) -> tuple[np.ndarray, np.ndarray]:
    """Blur then bilinear zoom about the centre, as one (scales, S, S) matrix per axis; and the blur."""
    c = (S - 1) / 2
    m = np.zeros((len(scales), S, S), np.float32)
    for i, s in enumerate(scales):
        x = np.clip(c + (np.arange(S) - c) / s, 0, S - 1)
        x0 = np.minimum(np.floor(x).astype(int), S - 2)
        m[i, np.arange(S), x0] += 1 - (x - x0)
        m[i, np.arange(S), x0 + 1] += x - x0
    x = np.arange(S)
    blur = np.exp(-0.5 * ((x[:, None] - x[None, :]) / BLUR) ** 2)
    blur = (blur / blur.sum(1, keepdims=True)).astype(np.float32)
    return np.einsum("sij,jk->sik", m, blur), blur


#: Matrix entries below this are dropped (see _normal); squared, still a normal float32.
TAIL_CUT = 1e-17


def _gauss(sigma: float) -> np.ndarray:
    x = np.arange(S)
    g = np.exp(-0.5 * ((x[:, None] - x[None, :]) / sigma) ** 2)
    return (g / g.sum(1, keepdims=True)).astype(np.float32)


def _normal(m: np.ndarray) -> np.ndarray:
    """``m`` with its entries under TAIL_CUT set to 0.

    The Gaussians' far tails (e^-90 and less) fall below float32's smallest
    normal number, and products of two small entries do too; x86 computes with
    such numbers some 40 times slower, and every product with these matrices
    paid for it (three quarters of the calibration's time).  An entry under
    TAIL_CUT moves a value by under 255 x 1e-17 grey levels, far below float32's
    resolution, so the scores are unchanged (tests/detectors/aligned/test_alignment.py).
    """
    return np.where(np.abs(m) < TAIL_CUT, 0, m).astype(np.float32)


_FINE, _BLUR = (_normal(m) for m in _resample())
_WIDE = _normal(_gauss(DETAIL_SIGMA))
# The high pass's blur of each zoom's and of the reference's view, made once, not per pair
# (their tails would be subnormal again: _normal).
_WIDE_FINE, _WIDE_BLUR = _normal(_WIDE @ _FINE), _normal(_WIDE @ _BLUR)


def _high_pass(m: np.ndarray, wide: np.ndarray, grey: np.ndarray) -> np.ndarray:
    """``m @ g @ m.T`` minus its Gaussian blur ``wide @ g @ wide.T``, ``wide`` being ``_WIDE @ m``
    (the 2-d high pass, not a product of 1-d ones)."""
    return m @ grey @ m.swapaxes(-1, -2) - wide @ grey @ wide.swapaxes(-1, -2)
_HALF = np.kron(np.eye(S // 2, dtype=np.float32), np.full((1, 2), 0.5, np.float32))
# The 16 px search tries every COARSE_STEP-th zoom; the 32 px search then tries the
# zooms either side, so every zoom is reached.
COARSE_STEP = 2
_COARSE = _normal(np.einsum("ij,sjk->sik", _HALF, _FINE[::COARSE_STEP]))  # (coarse zooms, 16, 32)
#: Shifts of the T/2 template in the 16 px image, per coarse zoom.
COARSE_SHIFTS = (S // 2 - T // 2 + 1) ** 2
#: Coarse windows per query: zooms x shifts of the T/2 template in the 16 px image.
PER_VIEW = len(_COARSE) * COARSE_SHIFTS


def _norm(x: np.ndarray) -> np.ndarray:
    x = x - x.mean(-1, keepdims=True)
    return x / (np.linalg.norm(x, axis=-1, keepdims=True) + 1e-3)


def _windows(grey: np.ndarray, mats: np.ndarray, t: int) -> tuple[np.ndarray, np.ndarray]:
    """(N, V, S, S) grey views x (N or 1, Z, s, S) zooms -> raw (N, W, t*t) windows and 1 / their centred norms.

    Templates are centred, so a window's dot product with one is already
    that of the centred window; normalising by the norm afterwards avoids
    writing every window twice.
    """
    z = mats[:, None] @ grey[:, :, None] @ mats[:, None].swapaxes(-1, -2)
    z -= z.mean((-1, -2), keepdims=True)  # smaller values: less cancellation in the variance below
    w = np.lib.stride_tricks.sliding_window_view(z, (t, t), axis=(3, 4))
    w = w.reshape(len(grey), int(np.prod(w.shape[1:5])), t * t)
    return w, _inverse_norms(w, t)


def _inverse_norms(w: np.ndarray, t: int) -> np.ndarray:
    """1 / the centred norm of each (..., t*t) window, 0 for a flat one.

    A window flatter than MIN_STD grey levels carries no evidence (and its
    variance is mostly rounding): it scores 0 whatever the template.
    """
    s1 = w.sum(-1)
    norm = np.sqrt(np.maximum(np.einsum("...f,...f->...", w, w) - s1 * s1 / (t * t), 0))
    return np.where(norm > MIN_STD * t, 1 / np.maximum(norm, 1e-6), 0).astype(np.float32)


def templates(grey: np.ndarray, coarse: bool) -> np.ndarray:
    """Blurred central crops of reference images, unit norm: (N, t*t)."""
    m = _HALF @ _BLUR if coarse else _BLUR
    t, side = (T // 2, S // 2) if coarse else (T, S)
    g = m @ np.asarray(grey, np.float32) @ m.T
    off = (side - t) // 2
    return _norm(g[:, off:off + t, off:off + t].reshape(len(g), t * t)).astype(np.float32)


def coarse(qgrey: np.ndarray, cand: np.ndarray, tmpl: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """16 px correlation of each query with each candidate, over zoom x shift.

    ``cand`` (N, C) indexes ``tmpl``, -1 padded; a mirrored candidate
    indexes a mirrored template (correlating the query's windows with the
    mirrored template is correlating the mirrored query with the template).
    Windows are built once per query and shared by all its candidates,
    whatever split they are in.  Returns raw scores (NaN: no candidate) and
    each candidate's best window.
    """
    n, c = cand.shape
    raw = np.full((n, c), np.nan, np.float32)
    best = np.zeros((n, c), np.int64)
    for a in range(0, n, _CHUNK):
        w, inv = _windows(qgrey[a:a + _CHUNK][:, None], _COARSE[None], T // 2)
        for c0 in range(0, c, _COLS):
            cc = cand[a:a + _CHUNK, c0:c0 + _COLS]
            live = np.flatnonzero((cc >= 0).any(1))
            if not len(live):
                continue
            whole = len(live) == len(cc)
            wl, il, cl = (w, inv, cc) if whole else (w[live], inv[live], cc[live])
            # One small product per query; BLAS does it 3-4x faster than einsum, even on one thread.
            s = np.matmul(wl, tmpl[np.maximum(cl, 0)].swapaxes(1, 2)) * il[:, :, None]
            raw[a + live, c0:c0 + cc.shape[1]] = np.where(cl >= 0, s.max(1), np.nan)
            best[a + live, c0:c0 + cc.shape[1]] = s.argmax(1)
    return raw, best


@dataclass(frozen=True)
class Rows:
    """Each pair's grey square as a row of ``grey`` (``grey[idx]``).

    A query meets several candidates, and a reference several queries (the calibration scores
    every retrieved candidate of a row): :func:`fine` and :func:`detail` zoom, blur and high-pass
    each distinct square once and gather the pairs' windows from it. The products are the same
    per square (one BLAS product each, whatever the stack), so the same scores.
    """

    grey: np.ndarray  # (M, S, S)
    idx: np.ndarray  # (n,) into grey

    def __len__(self) -> int:
        return len(self.idx)


def _rows(x: np.ndarray | Rows) -> Rows:
    return x if isinstance(x, Rows) else Rows(np.asarray(x), np.arange(len(x)))


def _distinct(*keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first pair of each distinct key (a tuple of small non-negative ints per pair) and each pair's one."""
    key = np.zeros(len(keys[0]), np.int64)
    for k in keys:
        key = key * (int(k.max(initial=0)) + 1) + k
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return first, inverse.reshape(-1)


def fine(qgrey: np.ndarray | Rows, rgrey: np.ndarray | Rows, flipped: np.ndarray, zoom: np.ndarray,
         shift: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """32 px correlation of query/reference pairs near their coarse alignment.

    Around each pair's 16 px best (its mirror, ``zoom`` and ``shift``, an
    index into the coarse shifts): 3 zooms x shifts within FINE_REACH px of
    the coarse one.  Textured copies (frogs, grass) lose correlation at
    16 px; the full resolution search recovers them.  Returns the scores, and
    each pair's best zoom (index into SCALES) and shift (index into the
    (S - T + 1)^2 shifts at 32 px).  Each distinct (query, mirror, zooms) and
    reference is worked on once (:class:`Rows`).
    """
    q, r = _rows(qgrey), _rows(rgrey)
    n = len(q.idx)
    out = np.zeros(n, np.float32)
    best_zoom = np.zeros(n, np.int64)
    best_shift = np.zeros(n, np.int64)
    side, cside, reach = S - T + 1, S // 2 - T // 2 + 1, 2 * FINE_REACH + 1
    z0 = np.clip(zoom - 1, 0, len(SCALES) - 3)
    first, which = _distinct(q.idx, flipped.astype(np.int64), z0)
    zoomed = np.empty((len(first), 3, S, S), np.float32)
    for a in range(0, len(first), 128):
        u = first[a:a + 128]
        g = _mirror(q.grey[q.idx[u]], flipped[u])[:, None]
        mats = _FINE[z0[u][:, None] + np.arange(3)]
        z = mats @ g @ mats.swapaxes(-1, -2)
        z -= z.mean((-1, -2), keepdims=True)
        zoomed[a:a + len(u)] = z
    view = np.lib.stride_tricks.sliding_window_view(zoomed, (T, T), axis=(2, 3))
    refs, rwhich = np.unique(r.idx, return_inverse=True)
    tmpl = np.concatenate([templates(r.grey[refs[a:a + 128]], coarse=False) for a in range(0, len(refs), 128)]
                          or [np.zeros((0, T * T), np.float32)])
    for a in range(0, n, 128):
        b = min(n, a + 128)
        y0 = np.clip(2 * (shift[a:b] // cside) - FINE_REACH, 0, side - reach)
        x0 = np.clip(2 * (shift[a:b] % cside) - FINE_REACH, 0, side - reach)
        w = view[which[a:b][:, None, None, None], np.arange(3)[None, :, None, None],
                 (y0[:, None] + np.arange(reach))[:, None, :, None],
                 (x0[:, None] + np.arange(reach))[:, None, None, :]].reshape(b - a, 3 * reach * reach, T * T)
        inv = _inverse_norms(w, T)
        t = tmpl[rwhich[a:b]]
        sc = np.matmul(w, t[:, :, None])[..., 0] * inv
        idx = sc.argmax(1)
        out[a:b] = sc[np.arange(b - a), idx]
        local = idx % (reach * reach)
        best_zoom[a:b] = z0[a:b] + idx // (reach * reach)
        best_shift[a:b] = (y0 + local // reach) * side + x0 + local % reach
    return out, best_zoom, best_shift


def _mirror(g: np.ndarray, flipped: np.ndarray) -> np.ndarray:
    return np.where(flipped[:, None, None], g[:, :, ::-1], g)


#: Each of the eight orientations as an index map on (N, rows, columns), as Pillow's
#: ``Image.transpose`` turns an image (rot90 is counter-clockwise), and its inverse:
#: both derived from orientation.py.
TURNS = {name: ((lambda g, name=name: _orientation.turn(g, name)), _orientation.INVERSE[name])
         for name in _orientation.ORIENTATIONS}


def turn(grey: np.ndarray, orientations: Sequence[str]) -> np.ndarray:
    """(N, S, S) grey squares, row n turned by ``orientations[n]``."""
    out = np.array(grey, copy=True)
    names = np.asarray(orientations, dtype=object)
    for name in set(orientations) - {"identity"}:
        rows = np.flatnonzero(names == name)
        out[rows] = TURNS[name][0](grey[rows])
    return out


def detail(qgrey: np.ndarray | Rows, rgrey: np.ndarray | Rows, flipped: np.ndarray, zoom: np.ndarray,
           shift: np.ndarray, tiles: bool = True) -> np.ndarray:
    """Correlation of detail (high-pass images) at each pair's fine alignment: the verdict.

    The query is zoomed, mirrored and moved as :func:`fine` found best; both
    sides are high-passed (:func:`_high_pass`) and the reference's central
    T x T crop is correlated with the query's window there.  One window per
    pair, so this costs a fraction of the search that found the alignment;
    each distinct (query, mirror, zoom) and reference is high-passed once (:class:`Rows`).
    """
    qr, rr = _rows(qgrey), _rows(rgrey)
    n = len(qr.idx)
    side = S - T + 1
    sy, sx = shift // side, shift % side
    u, which = _distinct(qr.idx, flipped.astype(np.int64), zoom)
    q = _high_pass(_FINE[zoom[u]], _WIDE_FINE[zoom[u]], _mirror(qr.grey[qr.idx[u]], flipped[u]))
    rows = (sy[:, None] + np.arange(T))[:, :, None]
    cols = (sx[:, None] + np.arange(T))[:, None, :]
    w = q[which[:, None, None], rows, cols].reshape(n, T * T)
    off = (S - T) // 2
    refs, rwhich = np.unique(rr.idx, return_inverse=True)
    t = _high_pass(_BLUR, _WIDE_BLUR, np.asarray(rr.grey[refs], np.float32))[:, off:off + T, off:off + T]
    t = t.reshape(len(refs), T * T)[rwhich]
    score = tiled(w.reshape(n, T, T), t.reshape(n, T, T)) if tiles else np.full(n, np.inf, np.float32)
    w = w - w.mean(1, keepdims=True)
    t = t - t.mean(1, keepdims=True)
    nw, nt = np.linalg.norm(w, axis=1), np.linalg.norm(t, axis=1)
    score = np.minimum(np.einsum("nf,nf->n", w, t) / np.maximum(nw * nt, 1e-6), score)
    return np.where((nw > DETAIL_STD * T) & (nt > DETAIL_STD * T), score, 0.0).astype(np.float32)


def tiled(w: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The least detail correlation of the TILES x TILES tiles where both sides have detail, plus
    TILE_MARGIN (inf where no tile has any): a cap on the pair's verdict.

    A copy agrees everywhere; two photographs of one kind of subject on a plain ground (two B-2
    bombers, two ships on a horizon, two horses standing alike) agree where the outline is and
    disagree in a corner, which the whole window's correlation averages away.
    """
    n, side = len(w), T // TILES
    worst = np.full(n, np.inf, np.float32)
    for y in range(0, side * TILES, side):
        for x in range(0, side * TILES, side):
            a = w[:, y:y + side, x:x + side].reshape(n, -1)
            b = t[:, y:y + side, x:x + side].reshape(n, -1)
            a = a - a.mean(1, keepdims=True)
            b = b - b.mean(1, keepdims=True)
            na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
            live = np.minimum(na, nb) > TILE_STD * side
            worst = np.where(live, np.minimum(worst, np.einsum("nf,nf->n", a, b) / np.maximum(na * nb, 1e-6)), worst)
    return worst + TILE_MARGIN


def mirrored_templates(tmpl: np.ndarray) -> np.ndarray:
    """Templates of the mirror images: (N, t*t) -> (2N, t*t), mirrors after the originals."""
    t = T // 2
    return np.concatenate([tmpl, tmpl.reshape(len(tmpl), t, t)[:, :, ::-1].reshape(len(tmpl), t * t)])


@dataclass(frozen=True)
class References:
    """What candidates are indexed into: grey squares (M, 32, 32) and their coarse templates
    (2M, t*t, mirrors after the originals: :func:`mirrored_templates`, or anything indexed so)."""

    grey: np.ndarray
    tmpl2: Any


def verify(qgrey: np.ndarray, cand: np.ndarray, flipped: np.ndarray, refs: References,
           gate: float = REFINE_GATE, always: int = 0, tiles: bool = True) -> np.ndarray:
    """Detail scores (N, C) of each query against its candidates (NaN: not verified).

    ``flipped`` (N, C): the candidate is compared with the mirrored query.
    ``refs`` are indexed by ``cand``.  A 16 px search over
    zoom x shift gates the candidates: those at or above ``gate``, and each
    query's best ``always`` whatever their 16 px score, are aligned at 32 px
    and scored by :func:`detail`.  The calibration scores its impostors'
    best few that way, so its levels err towards fewer alarms; checking
    another detector's match scores it whatever it correlates.
    """
    grey = refs.grey
    m = len(grey)
    raw, best = coarse(qgrey, np.where(cand >= 0, cand + m * flipped, -1), refs.tmpl2)
    ranked = np.nan_to_num(raw, nan=-np.inf)
    pick = ranked >= gate
    if always:
        top = np.argsort(-ranked, 1)[:, :always]
        np.put_along_axis(pick, top, True, 1)
    qi, kk = np.nonzero(pick & (cand >= 0))
    out = np.full(cand.shape, np.nan, np.float32)
    # VERIFY_PAIRS at a time: each pair is aligned and scored on its own, so the same scores.
    for a in range(0, len(qi), VERIFY_PAIRS):
        q, k = qi[a:a + VERIFY_PAIRS], kk[a:a + VERIFY_PAIRS]
        qs, rs = Rows(qgrey, q), Rows(grey, cand[q, k])
        fl = flipped[q, k]
        b = best[q, k]
        _, zf, shift = fine(qs, rs, fl, b // COARSE_SHIFTS * COARSE_STEP, b % COARSE_SHIFTS)
        out[q, k] = detail(qs, rs, fl, zf, shift, tiles)
    return out


# --------------------------------------------------------------------------
# Calibration


def calibrate(impostors: np.ndarray, per_10k: float, floor: float = MIN_THRESHOLD) -> float:
    """The score that a fraction ``per_10k / 10000`` of impostor maxima reach.

    Where at least TAIL_MIN impostors lie above the asked level, their
    quantile; further out (a few per 10,000 from 2,000 impostors), an
    exponential tail fitted to the top TAIL share, on the distance to a
    perfect correlation in log scale (x = -log(1 - score)), so the
    extrapolation stays below 1.
    """
    s = np.sort(np.asarray(impostors, np.float64)[np.isfinite(impostors)])
    if not len(s):
        return floor
    p = per_10k / 1e4
    if p * len(s) >= TAIL_MIN or len(s) < 2 * TAIL_MIN:
        thr = float(np.quantile(s, 1 - p, method="higher")) + 1e-6
    else:
        x = -np.log1p(-np.minimum(s, 1 - 1e-6))
        n_tail = max(TAIL_MIN, int(TAIL * len(x)))
        u = x[-n_tail - 1]
        beta = max(1e-4, float((x[-n_tail:] - u).mean()))
        thr = -float(np.expm1(-(u + beta * np.log(n_tail / len(x) / p))))
    return max(floor, float(thr))
