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

from ..signals import Signatures

S = 32  # side of the descriptor square
SCALES = (0.8, 0.86, 0.93, 1.0, 1.07, 1.16, 1.25)  # ~7 % steps: < 0.5 px error at the crop edge
T = 24  # template: the reference's central T x T crop, so added frames and crops do not count
BLUR = 0.7  # JPEG noise and sub-pixel misalignment otherwise sink textured copies
CROWD = (5, 10)  # candidate ranks whose mean score measures how "generic" a query is
ALPHA = 0.5
# Queries scoring below this at 16 px are never near a calibrated threshold;
# only the rest pay for the 32 px recheck of their best candidates.
REFINE_GATE = 0.47
REFINE_TOP = 2
# A tiny dataset gives too few impostors for a quantile; never go below this.
MIN_THRESHOLD = 0.45
CALIBRATION_QUERIES = 2000
_CHUNK = 256


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
    h = np.sqrt(_pool(h, S // cells).reshape(n, -1))
    return h / (np.linalg.norm(h, axis=1, keepdims=True) + 1e-6)


def describe(rgb: np.ndarray) -> dict[str, np.ndarray]:
    """One (32, 32, 3) uint8 colour square -> the cached descriptors."""
    rgb = rgb.astype(np.float32)
    g = rgb @ np.array([0.299, 0.587, 0.114], np.float32)
    return {
        "grey32": np.clip(np.rint(g), 0, 255).astype(np.uint8),
        "colour8": np.clip(np.rint(_pool(rgb[None], 4)[0]), 0, 255).astype(np.uint8),
        "hog": hog(g[None])[0].astype(np.float16),
    }


@dataclass(frozen=True)
class Views:
    """Descriptors of some rows, possibly transformed (mirror, upside down)."""

    grey: np.ndarray  # (N, 32, 32) float32
    colour: np.ndarray  # (N, 8, 8, 3) float32
    hog: np.ndarray  # (N, 128) float32


def views(sigs: Signatures, rows: np.ndarray) -> Views:
    grey = sigs.arrays["desc:grey32"][rows].reshape(-1, S, S).astype(np.float32)
    colour = sigs.arrays["desc:colour8"][rows].reshape(-1, 8, 8, 3).astype(np.float32)
    return Views(grey, colour, sigs.arrays["desc:hog"][rows].astype(np.float32))


def oriented(v: Views, transform: str) -> Views:
    """``hflip`` or ``rot180`` of the images, descriptors derived from the cached ones."""
    cut = (slice(None), slice(None, None, -1) if transform == "rot180" else slice(None), slice(None, None, -1))
    grey, colour = np.ascontiguousarray(v.grey[cut]), np.ascontiguousarray(v.colour[cut])
    return Views(grey, colour, hog(grey))


# --------------------------------------------------------------------------
# Retrieval


def _unit(x: np.ndarray) -> np.ndarray:
    x = x.reshape(len(x), -1)
    x = x - x.mean(1, keepdims=True)
    return x / (np.linalg.norm(x, axis=1, keepdims=True) + 1e-3)


def vectors(v: Views) -> tuple[np.ndarray, ...]:
    """Unit vectors for cosine retrieval: gradients, centred colour layout, coarse grey layout."""
    colour = v.colour - v.colour.mean((1, 2), keepdims=True)
    return v.hog, _unit(colour), _unit(_pool(v.grey, 4))


def retrieve(queries: list[Views], ref: tuple[np.ndarray, ...], k: int,
             exclude: np.ndarray | None = None) -> np.ndarray:
    """(N, <= 6k) reference indices: top-k per descriptor and query view, -1 padded.

    ``exclude`` (N,) is a reference index each query must not retrieve (itself,
    within one split), or -1.
    """
    n = len(queries[0].grey)
    k = min(k, len(ref[0]))
    qvecs = [vectors(q) for q in queries]
    parts = []
    for qv in qvecs:
        for d in range(len(ref)):
            idx = np.empty((n, k), np.int64)
            for a in range(0, n, 1024):
                s = qv[d][a:a + 1024] @ ref[d].T
                if exclude is not None:
                    e = exclude[a:a + 1024]
                    s[np.flatnonzero(e >= 0), e[e >= 0]] = -np.inf
                idx[a:a + 1024] = np.argpartition(-s, k - 1, axis=1)[:, :k]
            parts.append(idx)
    out = np.sort(np.concatenate(parts, 1), 1)
    out[:, 1:][out[:, 1:] == out[:, :-1]] = -1
    if exclude is not None:
        out[out == exclude[:, None]] = -1
    return out


# --------------------------------------------------------------------------
# Verification


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


def _norm(x: np.ndarray) -> np.ndarray:
    x = x - x.mean(-1, keepdims=True)
    return x / (np.linalg.norm(x, axis=-1, keepdims=True) + 1e-3)


def _windows(grey: np.ndarray, mats: np.ndarray, t: int) -> np.ndarray:
    """(N, V, S, S) grey views x (N or 1, Z, s, S) zooms -> (N, V*Z*shifts, t*t) unit windows."""
    z = mats[:, None] @ grey[:, :, None] @ mats[:, None].swapaxes(-1, -2)
    w = np.lib.stride_tricks.sliding_window_view(z, (t, t), axis=(3, 4))
    return _norm(w.reshape(len(grey), -1, t * t))


def templates(grey: np.ndarray, coarse: bool) -> np.ndarray:
    """Blurred central crops of reference images, unit norm: (N, t*t)."""
    m = _HALF @ _BLUR if coarse else _BLUR
    t, side = (T // 2, S // 2) if coarse else (T, S)
    g = m @ grey @ m.T
    off = (side - t) // 2
    return _norm(g[:, off:off + t, off:off + t].reshape(len(g), -1))


def _crowd(raw: np.ndarray) -> np.ndarray:
    """Mean of each row's CROWD-ranked scores (NaN = no candidate).

    A query with fewer candidates (a small reference split) uses its lower
    half instead, so a tiny dataset is not judged on raw correlation.
    """
    srt = -np.sort(-np.nan_to_num(raw, nan=-np.inf), 1)[:, :CROWD[1]]
    count = np.isfinite(srt).sum(1, keepdims=True)
    rank = np.arange(srt.shape[1])[None]
    use = (rank >= np.minimum(CROWD[0], np.maximum(1, count // 2))) & (rank < count)
    total = np.where(use, srt, 0).sum(1)
    return np.where(use.any(1), total / np.maximum(1, use.sum(1)), 0.0)


def verify(q: Views, cand: np.ndarray, ref_grey: np.ndarray, ref_tmpl: np.ndarray,
           mirror: bool) -> tuple[np.ndarray, np.ndarray]:
    """Scores (N, K) (NaN where no candidate) and whether the best alignment is mirrored."""
    n, k = cand.shape
    views_n = 2 if mirror else 1
    per_view = len(SCALES) * (S // 2 - T // 2 + 1) ** 2
    raw = np.full((n, k), np.nan, np.float32)
    best = np.zeros((n, k), np.int64)
    for a in range(0, n, _CHUNK):
        g = q.grey[a:a + _CHUNK]
        g = np.stack([g, g[:, :, ::-1]], 1)[:, :views_n]
        w = _windows(g, _COARSE[None], T // 2)
        c = cand[a:a + _CHUNK]
        s = np.matmul(w, ref_tmpl[np.maximum(c, 0)].transpose(0, 2, 1))
        raw[a:a + _CHUNK] = np.where(c >= 0, s.max(1), np.nan)
        best[a:a + _CHUNK] = s.argmax(1)
    score = raw - ALPHA * _crowd(raw)[:, None]
    flipped = best // per_view == 1
    _refine(q, cand, ref_grey, raw, score, best % per_view // (per_view // len(SCALES)), flipped)
    return score, flipped


def _refine(q: Views, cand: np.ndarray, ref_grey: np.ndarray, raw: np.ndarray, score: np.ndarray,
            zoom: np.ndarray, flipped: np.ndarray) -> None:
    """Recheck the best candidates of promising queries at 32 px, near their coarse alignment.

    Textured copies (frogs, grass) lose correlation at 16 px; the full
    resolution search over the best mirror and three neighbouring zooms
    recovers them.  Updates ``score`` in place, keeping the crowd term.
    """
    top = np.argsort(-np.nan_to_num(score, nan=-np.inf), 1)[:, :REFINE_TOP]
    gate = np.nanmax(np.where(np.isnan(score), -np.inf, score), 1) >= REFINE_GATE
    qi, kk = np.repeat(np.flatnonzero(gate), top.shape[1]), top[gate].ravel()
    keep = cand[qi, kk] >= 0
    qi, kk = qi[keep], kk[keep]
    for a in range(0, len(qi), 128):
        i, j = qi[a:a + 128], kk[a:a + 128]
        g = q.grey[i]
        g = np.where(flipped[i, j][:, None, None], g[:, :, ::-1], g)[:, None]
        z0 = np.clip(zoom[i, j] - 1, 0, len(SCALES) - 3)
        mats = _FINE[z0[:, None] + np.arange(3)]
        w = _windows(g, mats, T)
        t = templates(ref_grey[cand[i, j]], coarse=False)
        fine = np.einsum("nwf,nf->nw", w, t).max(1)
        score[i, j] = fine - (raw[i, j] - score[i, j])


# --------------------------------------------------------------------------
# Search and calibration


def calibrate(impostors: np.ndarray, per_10k: float) -> float:
    """The score that a fraction ``per_10k / 10000`` of impostor maxima reach."""
    s = np.asarray(impostors, np.float64)
    s = s[np.isfinite(s)]
    if not len(s):
        return MIN_THRESHOLD
    return max(MIN_THRESHOLD, float(np.quantile(s, 1 - per_10k / 1e4, method="higher")) + 1e-6)
