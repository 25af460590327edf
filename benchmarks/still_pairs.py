"""Still moments of a fixed camera across splits: are they separable from another shot of one scene?

Issue 37 (stop 62): frames of one still moment of a video (``webcam``, ``parking``) sit in two
splits inside one ``shared-scene`` note, and pass with exit 0.  The candidate rule: a cross-split
pair that is the same picture up to noise (no local region differs beyond the pair's own noise) is
a near-duplicate error of its own, where ``chess``'s other shots "always hold a moved piece".

Run by hand on a dataset root that holds a ``leakcheck.yaml`` (``leakcheck init``; the splits are
read as the check reads them)::

    PYTHONPATH=. python benchmarks/still_pairs.py ROOT [ROOT ...] [--show 12] [--sheet OUT_DIR]

Each image's grey is boxed to 160 x 120 (as the shared decode keeps a photo) and to a 96 px square
(as ``aligned``'s stored fine square; box here, not the package's trimmed LANCZOS square).  Each
image's nearest image of another split (mean squared difference) makes a pair, each mutual pair
once.  ``D`` is the difference of the two squares less its median (exposure); ``worst`` the largest
mean ``|D|`` of its 8 x 8 blocks of 12 px, ``ratio`` that over the pair's median block (the pair's
own noise).  ``still``: worst <= WORST and ratio <= RATIO.  ``--sheet`` writes the still pairs
(each image and its difference times 4) to ``OUT_DIR/still_<name>.png``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_leakcheck.dataset.inventory import scan  # noqa: E402
from pytest_leakcheck.policy.load import load  # noqa: E402

#: The candidate rule's levels, set on ``webcam`` and ``parking``'s still pairs by eye.
WORST, RATIO = 1.5, 3.2
SIDE, BLOCK = 96, 12


def grey(path: Path) -> np.ndarray:
    im = Image.open(path).convert("L")
    if max(im.size) > 200:
        im = im.resize((160, 120), Image.Resampling.BOX)
    return np.asarray(im.resize((SIDE, SIDE), Image.Resampling.BOX), np.float64)


def score(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """The worst block's mean |difference| and its ratio to the pair's median block."""
    d = a - b
    d -= np.median(d)
    k = SIDE // BLOCK
    blocks = np.abs(d).reshape(k, BLOCK, k, BLOCK).mean((1, 3))
    return float(blocks.max()), float(blocks.max() / max(np.median(blocks), 0.25))


def pairs(root: Path) -> tuple[int, list[tuple[float, float, float, str, str]]]:
    """Images in a split, and each mutual nearest cross-split pair: (mse, worst, ratio, path, path)."""
    recs = [r for r in scan(load(root / "leakcheck.yaml")).records if r.split]
    g = np.stack([grey(root / r.path) for r in recs])
    split = np.array([r.split for r in recs])
    x = g.reshape(len(g), -1)
    sq = (x * x).sum(1)
    dist = (sq[:, None] + sq[None, :] - 2 * x @ x.T) / x.shape[1]
    dist[split[:, None] == split[None, :]] = np.inf
    near = dist.argmin(1)
    out = []
    for i, j in enumerate(near.tolist()):
        if np.isfinite(dist[i, j]) and not (near[j] == i and j < i):
            out.append((float(dist[i, j]), *score(g[i], g[j]), recs[i].path, recs[j].path))
    return len(recs), sorted(out)


def sheet(root: Path, rows: list[tuple[float, float, float, str, str]], out: Path) -> None:
    """Each pair side by side with its difference (times 4), 320 x 240 each."""
    tiles = []
    for _, _, _, p, q in rows:
        a = Image.open(root / p).convert("L").resize((320, 240))
        b = Image.open(root / q).convert("L").resize((320, 240))
        d = np.abs(np.asarray(a, np.int16) - np.asarray(b, np.int16)) * 4
        row = Image.new("L", (980, 244), 255)
        for n, im in enumerate((a, b, Image.fromarray(np.clip(d, 0, 255).astype(np.uint8)))):
            row.paste(im, (330 * n, 0))
        tiles.append(row)
    if tiles:
        page = Image.new("L", (980, 244 * len(tiles)), 255)
        for n, t in enumerate(tiles):
            page.paste(t, (0, 244 * n))
        page.save(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("roots", nargs="+", type=Path)
    ap.add_argument("--show", type=int, default=0, help="nearest pairs to print besides the still ones")
    ap.add_argument("--sheet", type=Path, help="folder for contact sheets of the still pairs")
    args = ap.parse_args()
    for root in args.roots:
        n, found = pairs(root)
        still = [p for p in found if p[1] <= WORST and p[2] <= RATIO]
        moved = [p for p in found if p not in still]
        least = min((p[1] for p in moved), default=float("nan"))
        print(f"{root.name}: {n} images, {len(found)} nearest cross-split pairs, still {len(still)}; "
              f"worst block of the rest from {least:.2f}", flush=True)
        for p in still + moved[:args.show]:
            print(f"  {'still' if p in still else 'rest '} mse {p[0]:6.2f} worst {p[1]:5.2f} ratio {p[2]:5.1f}  "
                  f"{p[3]} | {p[4]}", flush=True)
        if args.sheet:
            args.sheet.mkdir(parents=True, exist_ok=True)
            sheet(root, still, args.sheet / f"still_{root.name}.png")


if __name__ == "__main__":
    main()
