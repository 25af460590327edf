"""Fixed-camera copies: which "is this a copy?" signal separates them from the closest other shots.

Run by hand: ``python benchmarks/fixed_camera_verdict.py --data /work/field-data/chess``
(also ``--data /work/field-data/deeppcb --rows 400`` and ``--data /work/field-data/eggs``).

The gap of ``benchmarks/fixed_camera_copies.py`` (docs/field.md): on one board photographed
again and again, every pair of shots looks alike, and a copy planted across splits passes.  A
verdict must hold against each image's *closest* other shots, not random pairs.  This plants
12 copies of train images (re-saved at quality 70 and 50, mirrored, turned 90/180/270, cropped
3-8 %, brighter) as would-be test images, aligns every pair measured (the best of the eight
orientations at 32 px, then OpenCV ECC, affine, coarse to fine at 320 px: the ceiling of what an
alignment can give), and prints candidate signals for
(a) each copy against its source,
(b) each held-out (valid, test) shot against its 3 closest train shots,
(c) each (sampled) train shot against its 3 closest other train shots,
"closest" by the signal itself among the K nearest by a 64 px correlation.  The margin is the
least other-shot value over the largest copy value: >= 3 with no overlap is the bar.

Signals, on the two aligned greys, each normalised to zero mean and unit deviation over their
overlap: ``block<r>/<k>[b]``, the largest k x k block mean of |a - b| at r px (long side), ``b``
after a Gaussian blur of r/160 px (JPEG noise is fine-grained, a moved piece is not); and
``share<t>``, the share (per mille) of the 320 px blurred overlap where |a - b| > t.
"""

from __future__ import annotations

import argparse
import csv
import io
import warnings
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import cv2
import numpy as np
from PIL import Image, ImageEnhance

SIDE = 320
RES = (96, 192, 320)
BLOCKS = (4, 8, 16)
SHARES = (0.5, 1.0)
#: Each plant: name, how it is made from the source photo, JPEG quality.
PLANTS: list[tuple[str, Callable[[Image.Image], Image.Image], int]] = [
    ("q70", lambda im: im, 70),
    ("q50", lambda im: im, 50),
    ("mirror", lambda im: im.transpose(Image.Transpose.FLIP_LEFT_RIGHT), 85),
    ("rot90", lambda im: im.transpose(Image.Transpose.ROTATE_90), 85),
    ("rot180", lambda im: im.transpose(Image.Transpose.ROTATE_180), 85),
    ("rot270", lambda im: im.transpose(Image.Transpose.ROTATE_270), 85),
    ("crop3", lambda im: _crop(im, 0.03), 85),
    ("crop5", lambda im: _crop(im, 0.05), 85),
    ("crop8", lambda im: _crop(im, 0.08), 85),
    ("bright", lambda im: ImageEnhance.Brightness(im).enhance(1.12), 85),
    ("mirror_q50", lambda im: im.transpose(Image.Transpose.FLIP_LEFT_RIGHT), 50),
    ("rot90_crop5", lambda im: _crop(im, 0.05).transpose(Image.Transpose.ROTATE_90), 80),
]
#: The eight orientations of a 2-D array.
ORIENTS: list[Callable[[np.ndarray], np.ndarray]] = [
    lambda x: x, np.fliplr, np.flipud, lambda x: np.rot90(x, 1), lambda x: np.rot90(x, 2),
    lambda x: np.rot90(x, 3), np.transpose, lambda x: np.rot90(x, 2).T]


def _crop(im: Image.Image, f: float) -> Image.Image:
    dx, dy = round(im.width * f), round(im.height * f)
    return im.crop((dx, dy, im.width - dx, im.height - dy))


def grey(src: Path | Image.Image, side: int = SIDE) -> np.ndarray:
    """Grey float32, long side ``side`` (JPEG drafted first, as the pipeline decodes)."""
    im = Image.open(src) if isinstance(src, Path) else src
    im.draft("L", (side, side))
    im = im.convert("L")
    s = side / max(im.size)
    im = im.resize((max(1, round(im.width * s)), max(1, round(im.height * s))), Image.Resampling.BOX)
    return np.asarray(im, np.float32)


def inventory(data: Path) -> dict[str, str]:
    """{relative path: split} of the set: its split folders, or deeppcb's ``splits.csv``."""
    if (data / "splits.csv").exists():
        with open(data / "splits.csv") as f:
            return {r["path"]: r["split"] for r in csv.DictReader(f)}
    return {str(p.relative_to(data)): p.parts[-2] for p in sorted(data.glob("*/*.jpg"))}


def norm(x: np.ndarray, m: np.ndarray) -> np.ndarray:
    v = x[m > 0.5]
    return (x - v.mean()) / (v.std() + 1e-6)


def align(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """``b`` turned (best of 8 at 32 px), resized to ``a`` and warped onto it by ECC (affine,
    80 -> 160 -> 320 px, starting from a few centred zooms); the warped b, its valid mask, the turn
    and the warp."""
    small = cv2.resize(a, (32, 32), interpolation=cv2.INTER_AREA).ravel()
    small = (small - small.mean()) / (small.std() + 1e-6)
    best = -2.0, 0
    for n, f in enumerate(ORIENTS):
        s = cv2.resize(np.ascontiguousarray(f(b)), (32, 32), interpolation=cv2.INTER_AREA).ravel()
        c = float(np.mean(small * (s - s.mean()) / (s.std() + 1e-6)))
        best = max(best, (c, n))
    bo = cv2.resize(np.ascontiguousarray(ORIENTS[best[1]](b)), a.shape[::-1], interpolation=cv2.INTER_AREA)
    h, w = a.shape
    out = (-1.0, np.eye(2, 3, dtype=np.float32))
    for zoom in (1.0, 1.06, 1.12, 1.18):
        warp = np.array([[zoom, 0, (1 - zoom) * w / 2], [0, zoom, (1 - zoom) * h / 2]], np.float32)
        cc = -1.0
        for f in (4, 2, 1):
            sa = cv2.resize(a, (w // f, h // f), interpolation=cv2.INTER_AREA)
            sb = cv2.resize(bo, (w // f, h // f), interpolation=cv2.INTER_AREA)
            wf = warp.copy()
            wf[:, 2] /= f
            try:
                cc, wf = cv2.findTransformECC(sa, sb, wf, cv2.MOTION_AFFINE,
                                              (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, 60, 1e-5), None, 3)
            except cv2.error:
                cc = -1.0
                break
            warp = wf.copy()
            warp[:, 2] *= f
        out = max(out, (cc, warp), key=lambda t: t[0])
        if out[0] > 0.97:
            break  # aligned already: the other zooms cost time
    flags = cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP
    # Replicated borders and a mask shrunk past the blurs: no block straddles the crop's edge.
    bw = cv2.warpAffine(bo, out[1], (w, h), flags=flags, borderMode=cv2.BORDER_REPLICATE)
    mask = cv2.warpAffine(np.ones_like(bo), out[1], (w, h), flags=flags, borderValue=0)
    return bw, cv2.erode(mask, np.ones((9, 9), np.uint8)), best[1], out[1]


def block_max(d: np.ndarray, m: np.ndarray, k: int) -> float:
    """Largest k x k block mean of ``d`` over blocks at least 90 % inside the overlap ``m``."""
    h, w = (d.shape[0] // k) * k, (d.shape[1] // k) * k
    dm = (d * m)[:h, :w].reshape(h // k, k, w // k, k).sum(axis=(1, 3))
    mm = m[:h, :w].reshape(h // k, k, w // k, k).sum(axis=(1, 3))
    ok = mm >= 0.9 * k * k
    return float((dm[ok] / mm[ok]).max()) if ok.any() else float("nan")


def signals(a: np.ndarray, bw: np.ndarray, mask: np.ndarray) -> dict[str, float]:
    out: dict[str, float] = {}
    for r in RES:
        s = r / max(a.shape)
        size = (max(1, round(a.shape[1] * s)), max(1, round(a.shape[0] * s)))
        ar, br = (cv2.resize(x, size, interpolation=cv2.INTER_AREA) for x in (a, bw))
        mr = (cv2.resize(mask, size, interpolation=cv2.INTER_AREA) > 0.99).astype(np.float32)
        for blur in (False, True):
            x, y = ar, br
            if blur:
                sigma = r / 160
                x, y = (cv2.GaussianBlur(z, (0, 0), sigma) for z in (ar, br))
            d = np.abs(norm(x, mr) - norm(y, mr))
            for k in BLOCKS:
                out[f"block{r}/{k}{'b' if blur else ''}"] = block_max(d, mr, k)
            if blur and r == SIDE:
                for t in SHARES:
                    out[f"share{t}"] = 1000 * float((d[mr > 0] > t).mean())  # per mille
    return out


def pair(a: np.ndarray, b: np.ndarray, pa: Path, pb: Path | bytes, full: bool = False) -> dict[str, float]:
    """The signals of b (file or JPEG bytes ``pb``) against a: aligned at 320 px, then warped again
    from a 640 px decode and reduced, so that a zoomed copy is not compared at its own 320 px
    resampled up (crops scored 0.09-0.13 that way, against 0.003-0.013 for copies not zoomed)."""
    _, _, turn, warp = align(a, b)
    ha = hi(pa)
    hb = _turned(hi(pb), turn, ha.shape)
    f = ha.shape[1] / a.shape[1]
    try:  # refined at 640 px: a 0.2 px error at 320 leaves 0.05 on a copy's high-contrast edges
        big = warp.copy()
        big[:, 2] *= f
        _, big = cv2.findTransformECC(ha, hb, big, cv2.MOTION_AFFINE,
                                      (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, 30, 1e-6), None, 3)
        warp = big.copy()
        warp[:, 2] /= f
    except cv2.error:
        pass
    bw, mask = _warp(hb, warp, f)
    size = a.shape[::-1]
    out = signals(*(cv2.resize(x, size, interpolation=cv2.INTER_AREA) for x in (ha, bw, mask)))
    if full:
        out["noise"] = noise(pa, pb, turn, warp, a.shape[1])
    return out


@lru_cache(maxsize=700)
def _hi(p: Path) -> np.ndarray:
    return grey(p, 2 * SIDE).astype(np.uint8)


def hi(p: Path | bytes) -> np.ndarray:
    return (_hi(p) if isinstance(p, Path) else grey(Image.open(io.BytesIO(p)), 2 * SIDE)).astype(np.float32)


def _turned(b: np.ndarray, turn: int, shape: tuple[int, ...]) -> np.ndarray:
    b = np.ascontiguousarray(ORIENTS[turn](b))
    return b if b.shape == shape else cv2.resize(b, shape[::-1], interpolation=cv2.INTER_AREA)


def _warp(b: np.ndarray, warp: np.ndarray, f: float) -> tuple[np.ndarray, np.ndarray]:
    """``b`` warped by the 320 px ``warp`` scaled by ``f``, and its valid mask (shrunk past the blurs)."""
    big = warp.astype(np.float64).copy()
    big[:, 2] *= f
    big = big.astype(np.float32)
    flags = cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP
    bw = cv2.warpAffine(b, big, b.shape[::-1], flags=flags, borderMode=cv2.BORDER_REPLICATE)
    m = cv2.warpAffine(np.ones_like(b), big, b.shape[::-1], flags=flags, borderValue=0)
    r = 2 * round(4 * f) + 1
    return bw, cv2.erode((m > 0.99).astype(np.float32), np.ones((r, r), np.uint8))


def noise(pa: Path, pb: Path | bytes, turn: int, warp: np.ndarray, w: int) -> float:
    """1 - correlation of the finest detail (grey minus its 1 px Gaussian blur) at full resolution, b
    warped by the 320 px alignment scaled up: a copy keeps the source's sensor noise and texture, a
    shot again from a tripod has noise of its own.  A copy resampled (cropped and rescaled, turned
    by a non-right angle) loses it too: this is the ceiling for copies that were not."""
    a = np.asarray(Image.open(pa).convert("L"), np.float32)
    im = Image.open(io.BytesIO(pb) if isinstance(pb, bytes) else pb)
    b = _turned(np.asarray(im.convert("L"), np.float32), turn, a.shape)
    bw, m = _warp(b, warp, a.shape[1] / w)
    m = m > 0
    ha, hb = ((x - cv2.GaussianBlur(x, (0, 0), 1.0))[m] for x in (a, bw))
    ha, hb = ha - ha.mean(), hb - hb.mean()
    return 1 - float((ha * hb).sum() / np.sqrt((ha * ha).sum() * (hb * hb).sum()))


def nearest(q: np.ndarray, ref: np.ndarray, k: int, exclude: np.ndarray | None = None) -> np.ndarray:
    """Indices into ``ref`` of each query's k most correlated (64 px, normalised) rows."""
    sim = q @ ref.T
    if exclude is not None:
        sim[exclude] = -np.inf
    return np.argsort(-sim, axis=1)[:, :k]


def closest(values: list[dict[str, float]], n: int = 3) -> dict[str, list[float]]:
    """Per signal: the ``n`` smallest values among one query's candidates (one that did not align,
    NaN, is no copy: infinite)."""
    return {s: sorted(np.nan_to_num(v[s], nan=np.inf) for v in values)[:n] for s in values[0]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=Path("/work/field-data/chess"))
    p.add_argument("--rows", type=int, default=0, help="sample this many held-out and train queries (0: all)")
    p.add_argument("--k", type=int, default=8, help="candidates per query, by 64 px correlation")
    p.add_argument("--full", action="store_true", help="also the full-resolution noise signal (slow)")
    args = p.parse_args()
    cv2.setNumThreads(1)
    # A pair that does not align has an empty overlap: NaN, counted as no copy.
    np.seterr(all="ignore")
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    rng = np.random.default_rng(0)
    inv = inventory(args.data)
    paths = sorted(inv)
    train = np.array([inv[x] == "train" for x in paths])
    imgs = [grey(args.data / x) for x in paths]
    sq = np.stack([cv2.resize(x, (64, 64), interpolation=cv2.INTER_AREA).ravel() for x in imgs])
    # Unit rows: q @ ref.T is the correlation.
    sq = (sq - sq.mean(1, keepdims=True)) / (sq.std(1, keepdims=True) + 1e-6) / np.sqrt(sq.shape[1])
    tr, held = np.flatnonzero(train), np.flatnonzero(~train)
    copies: dict[str, dict[str, float]] = {}
    for (name, make, quality), src in zip(PLANTS, rng.choice(tr, len(PLANTS), replace=False)):
        buf = io.BytesIO()  # the copy is saved to memory: the data folder is never written
        with Image.open(args.data / paths[src]) as im:
            make(im.convert("RGB")).save(buf, "JPEG", quality=quality)
        copies[f"{name} ({Path(paths[src]).name[:24]})"] = pair(imgs[src], grey(Image.open(buf)),
                                                                args.data / paths[src], buf.getvalue(), args.full)
    sigs = list(next(iter(copies.values())))
    for s in (held, tr):
        rng.shuffle(s)
    hq = held[:args.rows] if args.rows else held
    tq = tr[:args.rows] if args.rows else tr
    groups = {"held-out vs train": [], "within train": []}
    worst: dict[str, list[tuple[float, str, str]]] = {s: [] for s in sigs}
    for label, queries in (("held-out vs train", hq), ("within train", tq)):
        excl = (tr[None, :] == queries[:, None]) if label == "within train" else None
        cand = nearest(sq[queries], sq[tr], args.k, excl)
        for q, cs in zip(queries, cand):
            vals = [pair(imgs[tr[c]], imgs[q], args.data / paths[tr[c]], args.data / paths[q], args.full)
                    for c in cs]
            groups[label].append(closest(vals))
            for s in sigs:
                c = int(np.argmin([np.nan_to_num(v[s], nan=np.inf) for v in vals]))
                worst[s].append((vals[c][s], paths[q], paths[tr[cs[c]]]))
    print(f"{args.data.name}: {len(paths)} images ({len(tr)} train); {len(copies)} copies; "
          f"{len(hq)} held-out and {len(tq)} train queries, {args.k} candidates each")
    for name, v in copies.items():
        print(f"  copy {name:40s} " + " ".join(f"{s} {v[s]:.3f}" for s in ("block320/8b", "block96/8b", "noise")
                                                  if s in v))
    print(f"{'signal':14s} {'copies max':>10s} {'held min':>9s} {'held p5':>8s} {'train min':>9s} "
          f"{'train p5':>8s} {'margin':>7s}")
    for s in sigs:
        cmax = max(np.nan_to_num(v[s], nan=np.inf) for v in copies.values())  # a copy not aligned: inf
        h = np.array([g[s][0] for g in groups["held-out vs train"]])
        t = np.array([g[s][0] for g in groups["within train"]])
        lo = min(h.min(), t.min())
        print(f"{s:14s} {cmax:10.3f} {h.min():9.3f} {np.percentile(h, 5):8.3f} {t.min():9.3f} "
              f"{np.percentile(t, 5):8.3f} {lo / max(cmax, 1e-9):7.1f}")
    for s in ("block320/8b", "block192/8b", "block96/8b", "noise")[:4 if args.full else 3]:
        low = sorted(worst[s])[:10]
        print(f"closest other shots by {s}: " + "; ".join(f"{v:.3f} {Path(a).name[:10]}~{Path(b).name[:10]}"
                                                          for v, a, b in low))


if __name__ == "__main__":
    main()
