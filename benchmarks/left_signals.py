"""Do any signals tell the CIFAR error links every hold leaves apart: same photograph or different?

Run by hand: ``python benchmarks/left_signals.py --data /tmp/cifar/cifar10 [--cache DIR]``.

It takes every cross-split error link as ``links_left.py`` finds them (the holds' verdict on each,
every judgment so far) and prints, per judgment and for the links held and left, the quartiles
of ``audit_signals.py``'s signals (verdict variants, tone gap, chroma, image statistics) and of
three more:

- ``shift_gain``: local agreement.  At the pair's 32 px alignment each of 3x3 tiles of the
  24 px template may move by up to 2 px on its own; the mean gain in the tile's detail
  correlation (less a 2 px blur) over not moving, the smaller of both directions.  A copy agrees
  in place everywhere; two renders of one aircraft in other poses should agree on the fuselage
  and need a move at the wings.
- ``tile_min``: the worst of those 9 tiles' correlations in place (the larger of both directions).
- ``partners``: transitivity.  Where a test image has several error links left, the least verdict
  between the train image of this link and that of a stronger one of the same test image: two
  copies of one picture are copies of each other.

And, for a few cut-offs, how many links of each judgment fall on the wrong side.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from audit_signals import chroma, statistics, verdicts  # noqa: E402
from links_left import every_judgment, links  # noqa: E402

REACH, TILES = 2, 3
CUTS = {"shift_gain": (0.05, 0.08), "tile_min": (0.4, 0.5), "partners": (0.7, 0.786)}
HIGH_IS_BAD = {"tone_gap", "flat", "colour_diff", "shift_gain"}


def _tiles(w: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Correlation of each of TILES x TILES tiles of two (n, T, T) stacks."""
    n, t = len(w), w.shape[1] // TILES
    a = w.reshape(n, TILES, t, TILES, t).transpose(0, 1, 3, 2, 4).reshape(n, TILES * TILES, -1)
    b = ref.reshape(n, TILES, t, TILES, t).transpose(0, 1, 3, 2, 4).reshape(n, TILES * TILES, -1)
    a, b = a - a.mean(2, keepdims=True), b - b.mean(2, keepdims=True)
    return (a * b).sum(2) / np.sqrt((a * a).sum(2) * (b * b).sum(2) + 1e-6)


def local(q: np.ndarray, r: np.ndarray, fl: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean gain of the tiles moved on their own, and the worst tile in place (module docstring)."""
    from scipy.ndimage import gaussian_filter

    from pytest_leakcheck.detectors.aligned import alignment
    from pytest_leakcheck.detectors.aligned.hires import align32

    zoom, shift = align32(q, r, fl)
    side, t, off = alignment.S - alignment.T + 1, alignment.T, (alignment.S - alignment.T) // 2
    m = alignment._FINE[zoom]
    z = m @ np.where(fl[:, None, None], q[:, :, ::-1], q) @ m.swapaxes(-1, -2)
    ref = alignment._BLUR @ r @ alignment._BLUR.T
    z, ref = z - gaussian_filter(z, (0, 2, 2)), ref - gaussian_filter(ref, (0, 2, 2))
    ref = ref[:, off:off + t, off:off + t]
    sy, sx, rows = shift // side, shift % side, np.arange(len(q))[:, None, None]
    best, here = np.full((len(q), TILES * TILES), -2.0), None
    for dy in range(-REACH, REACH + 1):
        for dx in range(-REACH, REACH + 1):
            yy, xx = np.clip(sy + dy, 0, alignment.S - t), np.clip(sx + dx, 0, alignment.S - t)
            w = z[rows, (yy[:, None] + np.arange(t))[:, :, None], (xx[:, None] + np.arange(t))[:, None, :]]
            c = _tiles(w, ref)
            best = np.maximum(best, c)
            here = c if dy == dx == 0 else here
    return (best - here).mean(1), here.min(1)


def partners(data, i: np.ndarray, j: np.ndarray, score: np.ndarray, left: np.ndarray) -> np.ndarray:
    """The ``partners`` signal of each link (inf where its test image has no stronger link left)."""
    from pytest_leakcheck.detectors.aligned import pairs

    by = defaultdict(list)
    for n in np.flatnonzero(left).tolist():
        by[int(i[n])].append(n)
    a, b = zip(*[(x, y) for ns in by.values() for x in ns for y in ns if x != y and score[x] <= score[y]]) or ((), ())
    out = np.full(len(i), np.inf)
    if a:
        s = pairs.pair_scores(data, j[list(a)], j[list(b)], always=1)
        np.minimum.at(out, np.array(a), s)
    return out


def signals(root: Path, cache: Path, level: float) -> tuple[list[str], dict[str, np.ndarray]]:
    """Each cross-split error link's group (judgment, held or left) and signals."""
    from pytest_leakcheck.detectors.aligned import pairs
    from pytest_leakcheck.detectors.aligned.holds import tones

    paths, grey, i, j, score, fl, by = links(root, cache, level)
    labels = every_judgment()
    g = grey.astype(np.float32)
    data = pairs.Data(g, pairs.Templates(g), np.zeros((len(g), 128), np.float16), None,
                      np.zeros((len(g), 0), np.float32), True)
    from audit_signals import squares

    rows = np.unique(np.concatenate([i, j]))
    colour = np.zeros((len(paths), 32, 32, 3), np.uint8)
    colour[rows] = squares(root, [paths[n] for n in rows.tolist()])[0]
    out = verdicts(grey, i, j)
    flip = out.pop("flip")
    out.update(tone_gap=tones.gaps(grey, i, j, flip), chroma=chroma(colour, grey, i, j), **statistics(colour, grey, i, j))
    (ga, ta), (gb, tb) = local(g[i], g[j], flip), local(g[j], g[i], flip)
    out.update(shift_gain=np.minimum(ga, gb), tile_min=np.maximum(ta, tb),
               partners=partners(data, i, j, score, by == ""))
    judged = [labels.get((paths[a], paths[b]), "") for a, b in zip(i.tolist(), j.tolist())]
    group = [f"{'listed' if x.startswith('listed-near') else x or 'unjudged'} {'held' if h else 'left'}"
             for x, h in zip(judged, by.tolist()) if not x.startswith("listed-very")]
    keep = np.array([not x.startswith("listed-very") for x in judged])
    return group, {k: v[keep] for k, v in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--level", type=float, default=0.7879)
    ap.add_argument("--cache", default="/tmp/leakcheck-audit-ratio")
    args = ap.parse_args()
    group, out = signals(Path(args.data), Path(args.cache), args.level)
    group = np.array(group)
    for k, v in out.items():
        print(k)
        for gname in sorted(set(group.tolist())):
            x = v[group == gname]
            x = x[np.isfinite(x)]
            print(f"  {gname:18s} n={len(x):3d} " + " ".join(f"{q:7.3f}" for q in np.percentile(x, [0, 5, 50, 95, 100]))
                  if len(x) else f"  {gname:18s} no evidence")
        for cut in CUTS.get(k, ()):
            bad = v > cut if k in HIGH_IS_BAD else v < cut
            print(f"  {'>' if k in HIGH_IS_BAD else '<'} {cut} (left only): " + ", ".join(
                f"{gname.split()[0]} {int(np.sum(bad & (group == gname)))}"
                for gname in sorted(set(group.tolist())) if gname.endswith("left")))


if __name__ == "__main__":
    main()
