"""``aligned``'s per-image descriptors, computed in the signature workers once per content.

From one 32 px colour square (the ``desc`` family, ``families.py``):

- ``grey32``: 32x32 grey, the input of alignment and of the verdict
  (``alignment.py``);
- ``hog``: 4x4 cells x 8 gradient orientations, for retrieval that survives
  colour changes (``search/multiview.py``); ``HOG_HFLIP`` and ``HOG_ROT180``
  turn a descriptor into its mirror's or upside-down self's without a recompute.
"""

from __future__ import annotations

import numpy as np

S = 32  # side of the descriptor square


def hog(g: np.ndarray, cells: int = 4, bins: int = 8) -> np.ndarray:
    """Unsigned, soft-binned gradient orientations per cell, square-rooted and unit-norm.

    Unsigned, so a contrast inversion keeps the descriptor; the square root
    damps a few strong edges dominating the rest.  The soft binning is two
    weighted bincounts (it runs once per image in the decode workers).
    """
    n = len(g)
    gx, gy = np.zeros_like(g), np.zeros_like(g)
    gy[:, 1:-1] = g[:, 2:] - g[:, :-2]
    gx[:, :, 1:-1] = g[:, :, 2:] - g[:, :, :-2]
    mag = np.hypot(gx, gy)
    ang = (np.arctan2(gy, gx) % np.pi) / np.pi * bins
    low = np.floor(ang)
    w1 = ang - low
    b0 = low.astype(np.int64) % bins
    side = S // cells
    cell = (np.arange(S)[:, None] // side) * cells + np.arange(S)[None, :] // side
    base = (np.arange(n)[:, None, None] * cells * cells + cell) * bins
    size = n * cells * cells * bins
    h = (np.bincount((base + b0).ravel(), (mag * (1 - w1)).ravel(), size)
         + np.bincount((base + (b0 + 1) % bins).ravel(), (mag * w1).ravel(), size))
    h = np.sqrt(h.reshape(n, cells * cells * bins) / (side * side)).astype(np.float32)
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
        "hog": hog(g[None])[0].astype(np.float16),
    }
