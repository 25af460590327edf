"""Near-duplicates that hashes miss: retrieve a few candidates, then align and verify.

Real leaks are crops, shifts, zooms, colour changes and added frames of the
same photograph.  Per image we cache three tiny descriptors computed from one
32 px colour square (signatures.py, one ``desc`` family):

- ``grey32``: 32x32 grey, the only input of verification;
- ``colour8``: 8x8x3 colour layout, for retrieval;
- ``hog``: 4x4 cells x 8 gradient orientations, for retrieval that survives
  colour changes.

Each query gets the union of its top-k neighbours under each descriptor (and
those of its mirror image).  Each candidate is verified by normalised
cross-correlation of lightly blurred grey images over mirror x zoom x shift,
first at 16 px, then at 32 px around the best coarse alignment.  Low-texture
images (a plane on plain sky) correlate with everything, so a score is taken
relative to the query's own crowd of candidates.

The threshold is calibrated without labels: each query's upside-down self
cannot be its duplicate, so the scores those impostors reach set the cut-off
for the false-alarm rate the policy asks for.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

S = 32  # side of the descriptor square
SCALES = (0.8, 0.86, 0.93, 1.0, 1.07, 1.16, 1.25)  # ~7 % steps: < 0.5 px error at the crop edge
T = 24  # template: the reference's central T x T crop, so added frames and crops do not count
BLUR = 0.7  # JPEG noise and sub-pixel misalignment otherwise sink textured copies
# Candidates correlating below this at 16 px are never near a calibrated
# threshold (about 0.93 on CIFAR; every listed CIFAR near-duplicate scores
# above 0.85 at 16 px, against 11 % of retrieved candidates); only the rest,
# at most REFINE_TOP per query, pay for the 32 px recheck.
REFINE_GATE = 0.85
REFINE_TOP = 4
# Fine scores in this band are rechecked at half steps: below it no half-pixel
# realignment reaches a threshold, above it every threshold is passed already.
SUBPIXEL_BAND = (0.91, 0.97)
# A tiny dataset gives too few impostors to know its tail; never go below
# this.  Distinct photographs reach 0.9 (synthetic test photos, CIFAR
# impostors) and copies score 0.94 and up; calibrated CIFAR levels are 0.95-0.97.
MIN_THRESHOLD = 0.92
CALIBRATION_QUERIES = 2000
# Tail fit: the top TAIL share of impostor maxima, at least TAIL_MIN of them.
TAIL, TAIL_MIN = 0.1, 10
# Retrieval: PCA of the gradient descriptor to PCA_DIMS, fitted on PCA_SAMPLE rows;
# columns grouped by GROUP for the top-k bound; a query block's scores hold
# about QUERY_BLOCK_VALUES floats (64 MB), whatever the dataset size.
PCA_DIMS, PCA_SAMPLE, GROUP = 32, 4000, 64
QUERY_BLOCK_VALUES = 1 << 24
_CHUNK = 128  # queries per verification block
MIN_STD = 2.0  # grey levels
_COLS = 32  # candidates per product in a block


# --------------------------------------------------------------------------
# Descriptors (computed in the signature workers, once per content)


def _pool(x: np.ndarray, f: int) -> np.ndarray:
    n, h, w = x.shape[:3]
    return x.reshape(n, h // f, f, w // f, f, *x.shape[3:]).mean((2, 4))


def hog(g: np.ndarray, cells: int = 4, bins: int = 8) -> np.ndarray:
    """Unsigned, soft-binned gradient orientations per cell, square-rooted and unit-norm.

    Unsigned, so a contrast inversion keeps the descriptor; the square root
    damps a few strong edges dominating the rest.
    """
    gx, gy = np.zeros_like(g), np.zeros_like(g)
    gy[:, 1:-1] = g[:, 2:] - g[:, :-2]
    gx[:, :, 1:-1] = g[:, :, 2:] - g[:, :, :-2]
    mag = np.hypot(gx, gy)
    ang = (np.arctan2(gy, gx) % np.pi) / np.pi * bins
    b0 = np.floor(ang).astype(np.int64) % bins
    w1 = ang - np.floor(ang)
    n = len(g)
    h = np.zeros((n, S, S, bins), np.float32)
    ii, yy, xx = np.ogrid[:n, :S, :S]
    h[ii, yy, xx, b0] += mag * (1 - w1)
    h[ii, yy, xx, (b0 + 1) % bins] += mag * w1
    h = np.sqrt(_pool(h, S // cells).reshape(n, cells * cells * bins))
    return h / (np.linalg.norm(h, axis=1, keepdims=True) + 1e-6)


def _hog_permutation(transform: str, cells: int = 4, bins: int = 8) -> np.ndarray:
    """Index map taking the descriptor of an image to that of its mirror or upside-down self.

    Mirroring moves cell column x to cells-1-x and an unsigned gradient angle
    t to pi - t (bin b to -b); turning upside down moves both cell
    coordinates and keeps the angle.  Exact, so neither needs a recompute.
    """
    cy, cx, b = np.meshgrid(np.arange(cells), np.arange(cells), np.arange(bins), indexing="ij")
    if transform == "hflip":
        cx, b = cells - 1 - cx, (-b) % bins
    else:
        cy, cx = cells - 1 - cy, cells - 1 - cx
    return ((cy * cells + cx) * bins + b).ravel().argsort()


HOG_HFLIP, HOG_ROT180 = _hog_permutation("hflip"), _hog_permutation("rot180")


def describe(rgb: np.ndarray) -> dict[str, np.ndarray]:
    """One (32, 32, 3) uint8 colour square -> the cached descriptors."""
    rgb = rgb.astype(np.float32)
    g = rgb @ np.array([0.299, 0.587, 0.114], np.float32)
    return {
        "grey32": np.clip(np.rint(g), 0, 255).astype(np.uint8),
        "colour8": np.clip(np.rint(_pool(rgb[None], 4)[0]), 0, 255).astype(np.uint8),
        "hog": hog(g[None])[0].astype(np.float16),
    }


# --------------------------------------------------------------------------
# Retrieval: gradient descriptors, reduced by a PCA fitted on the data, top-k by blocked products


@dataclass(frozen=True)
class Index:
    """A linear projection of the 128-d gradient descriptor to ``len(basis.T)`` dimensions."""

    mean: np.ndarray  # (128,)
    basis: np.ndarray  # (128, d)

    def project(self, hog_rows: np.ndarray) -> np.ndarray:
        """Unit vectors (N, d) float32: cosine retrieval in the reduced space."""
        x = (np.asarray(hog_rows, np.float32) - self.mean) @ self.basis
        return x / (np.linalg.norm(x, axis=1, keepdims=True) + 1e-6)


def fit_index(hog_rows: np.ndarray) -> Index:
    """PCA of the gradient descriptors of (an evenly spaced sample of) the rows given.

    Measured on the visible CIFAR half, a 32-d projection keeps the listed
    partners' ranks (98 % in the top 16, as the full 128-d descriptor) at a
    quarter of the product's cost.  The sample is spaced by row, not by
    split, so relabelling splits leaves the index unchanged.  Too few rows for
    a stable fit: no reduction, only centring.
    """
    x = np.asarray(hog_rows, np.float32)
    step = max(1, len(x) // PCA_SAMPLE)
    sample = x[::step][:PCA_SAMPLE]
    mean = sample.mean(0) if len(sample) else np.zeros(x.shape[1], np.float32)
    if len(sample) < 8 * PCA_DIMS:
        return Index(mean.astype(np.float32), np.eye(x.shape[1], dtype=np.float32))
    # Eigenvectors of the 128 x 128 covariance: the SVD of the sample itself costs seconds.
    centred = (sample - mean).astype(np.float64)
    _, vec = np.linalg.eigh(centred.T @ centred)
    return Index(mean.astype(np.float32), np.ascontiguousarray(vec[:, ::-1][:, :PCA_DIMS], np.float32))


def _top(s: np.ndarray, k: int) -> np.ndarray:
    """Column indices of each row's k largest entries, in no particular order.

    A full argpartition of every row costs more than the product itself;
    instead the k-th largest of the maxima of groups of columns is a lower
    bound on each row's k-th largest entry, so only entries above it are sorted.
    """
    n, m = s.shape
    if m < 4 * GROUP * k:
        return np.argpartition(-s, k - 1, axis=1)[:, :k]
    cut = m // GROUP * GROUP
    gmax = s[:, :cut].reshape(n, -1, GROUP).max(2)
    bound = -np.partition(-gmax, k - 1, axis=1)[:, k - 1]
    r, c = np.nonzero(s >= bound[:, None])
    order = np.lexsort((-s[r, c], r))
    r, c = r[order], c[order]
    rank = np.arange(len(r)) - np.searchsorted(r, r)
    keep = rank < k
    out = np.zeros((n, k), np.int64)
    out[r[keep], rank[keep]] = c[keep]
    return out


def topk(queries: list[np.ndarray], ref: np.ndarray, k: int,
         exclude: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(N, k) indices into ``ref`` of each query's best cosines over its views, -1 padded, and which view won.

    ``queries`` are the views of the same N queries (identity, mirror): a
    reference's similarity is its best over the views, and the winning view
    is the only one verification looks at.  ``exclude`` (N,) is a reference
    index each query must not retrieve (itself, within a split), or -1.
    Blocks of queries keep memory linear in the reference count.
    """
    n, m = len(queries[0]), len(ref)
    k_eff = min(k, m - (0 if exclude is None else int((exclude >= 0).any())))
    out = np.full((n, k), -1, np.int64)
    view = np.zeros((n, k), bool)
    if k_eff <= 0 or not n:
        return out, view
    step = max(1, QUERY_BLOCK_VALUES // max(1, m))
    for a in range(0, n, step):
        b = min(n, a + step)
        s = queries[0][a:b] @ ref.T
        second = queries[1][a:b] @ ref.T if len(queries) > 1 else None
        if second is not None:
            np.maximum(s, second, out=s)
        if exclude is not None:
            e = exclude[a:b]
            hit = np.flatnonzero(e >= 0)
            s[hit, e[hit]] = -np.inf
        idx = _top(s, k_eff)
        out[a:b, :k_eff] = idx
        if second is not None:
            view[a:b, :k_eff] = np.take_along_axis(second, idx, 1) >= np.take_along_axis(s, idx, 1)
    if exclude is not None:
        out[out == exclude[:, None]] = -1
    return out, view & (out >= 0)


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


_FINE, _BLUR = _resample()
_HALF = np.kron(np.eye(S // 2, dtype=np.float32), np.full((1, 2), 0.5, np.float32))
_COARSE = np.einsum("ij,sjk->sik", _HALF, _FINE)  # (scales, 16, 32)
#: Coarse windows per query: zooms x shifts of the T/2 template in the 16 px image.
PER_VIEW = len(SCALES) * (S // 2 - T // 2 + 1) ** 2


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
    s1 = w.sum(-1)
    norm = np.sqrt(np.maximum(np.einsum("nwf,nwf->nw", w, w) - s1 * s1 / (t * t), 0))
    # A window flatter than MIN_STD grey levels carries no evidence (and its
    # variance is mostly rounding): it scores 0 whatever the template.
    return w, np.where(norm > MIN_STD * t, 1 / np.maximum(norm, 1e-6), 0).astype(np.float32)


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
            # einsum, not matmul: thousands of tiny BLAS calls thrash when the cores are shared.
            s = np.einsum("nwf,ncf->nwc", wl, tmpl[np.maximum(cl, 0)]) * il[:, :, None]
            raw[a + live, c0:c0 + cc.shape[1]] = np.where(cl >= 0, s.max(1), np.nan)
            best[a + live, c0:c0 + cc.shape[1]] = s.argmax(1)
    return raw, best


def fine(qgrey: np.ndarray, rgrey: np.ndarray, flipped: np.ndarray, zoom: np.ndarray
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """32 px correlation of query/reference pairs near their coarse alignment (its mirror, 3 zooms).

    Textured copies (frogs, grass) lose correlation at 16 px; the full
    resolution search recovers them.  Returns the scores, and each pair's
    best zoom (index into SCALES) and shift (index into the 9 x 9 shifts).
    """
    out = np.zeros(len(qgrey), np.float32)
    best_zoom = np.zeros(len(qgrey), np.int64)
    best_shift = np.zeros(len(qgrey), np.int64)
    shifts = (S - T + 1) ** 2
    for a in range(0, len(qgrey), 128):
        g = _mirror(qgrey[a:a + 128], flipped[a:a + 128])[:, None]
        z0 = np.clip(zoom[a:a + 128] - 1, 0, len(SCALES) - 3)
        w, inv = _windows(g, _FINE[z0[:, None] + np.arange(3)], T)
        t = templates(rgrey[a:a + 128], coarse=False)
        s = np.einsum("nwf,nf->nw", w, t) * inv
        out[a:a + 128] = s.max(1)
        idx = s.argmax(1)
        best_zoom[a:a + 128], best_shift[a:a + 128] = z0 + idx // shifts, idx % shifts
    return out, best_zoom, best_shift


def _mirror(g: np.ndarray, flipped: np.ndarray) -> np.ndarray:
    return np.where(flipped[:, None, None], g[:, :, ::-1], g)


def _zoom_mats(scale: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """Blur then bilinear zoom by ``scale`` about the centre, moved by ``offset`` px: (..., S, S)."""
    c = (S - 1) / 2
    x = np.clip(c + (np.arange(S) - c) / scale[..., None] + offset[..., None], 0, S - 1)
    x0 = np.minimum(np.floor(x).astype(np.int64), S - 2)
    frac = (x - x0).astype(np.float32)
    m = np.zeros((*x.shape, S), np.float32)
    np.put_along_axis(m, x0[..., None], (1 - frac)[..., None], -1)
    np.put_along_axis(m, x0[..., None] + 1, frac[..., None], -1)
    return m @ _BLUR


def subpixel(qgrey: np.ndarray, rgrey: np.ndarray, flipped: np.ndarray, zoom: np.ndarray,
             shift: np.ndarray) -> np.ndarray:
    """32 px correlation around a fine alignment, at half steps of zoom and half pixels of shift.

    The fine search moves whole pixels and 7 % zooms; a copy off by half a
    pixel loses a few hundredths of correlation, which near a threshold is
    the difference between found and missed.  Impostors, with no true
    alignment, gain less.  Measured on the visible CIFAR half: listed pairs
    above the 10-per-10k impostor level rise from 91.5 % to 94 %.
    """
    n = len(qgrey)
    half = np.array([-0.5, 0.0, 0.5])
    scale = np.interp(zoom[:, None] + half[None], np.arange(len(SCALES)), SCALES)  # (n, 3)
    sc = np.repeat(scale[:, :, None], 3, 2)  # (n, zoom, offset)
    off = np.broadcast_to(half[None, None], sc.shape)
    my = _zoom_mats(sc, off)  # (n, 3, 3, S, S)
    g = _mirror(qgrey, flipped)
    # (n, zoom, dy, dx, S, S): rows moved by dy, columns by dx, same zoom.
    z = np.einsum("nzyij,njk,nzxlk->nzyxil", my, g, my, optimize=True)
    z -= z.mean((-1, -2), keepdims=True)
    side = S - T + 1
    sy, sx = shift // side, shift % side
    out = np.full(n, -np.inf, np.float32)
    t = templates(rgrey, coarse=False)
    for e in (-1, 0, 1):
        for f in (-1, 0, 1):
            y0, x0 = np.clip(sy + e, 0, side - 1), np.clip(sx + f, 0, side - 1)
            rows = (y0[:, None] + np.arange(T))[:, None, None, None, :, None]
            cols = (x0[:, None] + np.arange(T))[:, None, None, None, None, :]
            w = z[np.arange(n)[:, None, None, None, None, None], np.arange(3)[None, :, None, None, None, None],
                  np.arange(3)[None, None, :, None, None, None], np.arange(3)[None, None, None, :, None, None],
                  rows, cols].reshape(n, 27, T * T)
            w = _norm(w)
            out = np.maximum(out, np.einsum("nwf,nf->nw", w, t).max(1))
    return out


def mirrored_templates(tmpl: np.ndarray) -> np.ndarray:
    """Templates of the mirror images: (N, t*t) -> (2N, t*t), mirrors after the originals."""
    t = T // 2
    return np.concatenate([tmpl, tmpl.reshape(len(tmpl), t, t)[:, :, ::-1].reshape(len(tmpl), t * t)])


def verify(qgrey: np.ndarray, cand: np.ndarray, flipped: np.ndarray, grey: np.ndarray,
           tmpl2: np.ndarray, precise: np.ndarray | None = None) -> np.ndarray:
    """Scores (N, C) of each query against its candidates (NaN: none), the best few rechecked at 32 px.

    ``flipped`` (N, C): the candidate is compared with the mirrored query.
    ``grey`` (M, 32, 32) and ``tmpl2`` (2M, t*t, from
    :func:`mirrored_templates`) are indexed by ``cand``.  ``precise`` (N, C):
    where the half-pixel recheck may run (default everywhere); a pair that
    can only ever be a warning (within a split) does not need it.
    """
    m = len(grey)
    raw, best = coarse(qgrey, np.where(cand >= 0, cand + m * flipped, -1), tmpl2)
    zoom = best // (PER_VIEW // len(SCALES))
    top = np.argsort(-np.nan_to_num(raw, nan=-np.inf), 1)[:, :REFINE_TOP]
    qi = np.repeat(np.arange(len(cand)), top.shape[1])
    kk = top.ravel()
    keep = np.nan_to_num(raw[qi, kk], nan=-np.inf) >= REFINE_GATE
    qi, kk = qi[keep], kk[keep]
    if len(qi):
        rg = grey[cand[qi, kk]]
        score, zf, shift = fine(qgrey[qi], rg, flipped[qi, kk], zoom[qi, kk])
        near = (score >= SUBPIXEL_BAND[0]) & (score < SUBPIXEL_BAND[1])
        near = np.flatnonzero(near if precise is None else near & precise[qi, kk])
        for a in range(0, len(near), 64):
            b = near[a:a + 64]
            score[b] = np.maximum(score[b], subpixel(qgrey[qi[b]], rg[b], flipped[qi[b], kk[b]], zf[b], shift[b]))
        raw[qi, kk] = score
    return raw


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
