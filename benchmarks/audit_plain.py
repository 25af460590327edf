"""Colour, edge and plain-ground signals of the judged CIFAR error links: which separate different photographs.

Run by hand: ``python benchmarks/audit_plain.py --data /tmp/cifar/cifar10 [--level 0.7879] [--out pairs.csv]``.

It reads every judged pair in ``benchmarks/quality_audit/`` and its subfolders (the random sheets,
the tones and plain holds, the low band of stop 60: ``different`` in any counts as different, else
``unsure``, else ``same``) and the human list, aligns each pair as the ``aligned`` verdict does
(``hires.align32`` on the grey squares, the verdict's mirror) and measures at that alignment, the
less telling of both directions:

- ``chroma_abs``, ``chroma_rel``, ``chroma_mean``: the colour-difference planes' (Cb, Cr) mean
  distance, as they are, each less its mean, and of their means (a blue sky against a grey one);
- ``edge_corr``, ``edge_iou``: correlation of the two gradient-magnitude maps, overlap of their
  strongest quarters (the subject's silhouette);
- ``flat_both``: share of the window flat in both squares (agreement a featureless ground gives);
  ``subj_gap``: the tone gap outside it; ``chroma_subj``, ``chroma_bg``: chroma inside and outside;
- ``flat``: the larger share of flat pixels of the two whole squares (``aligned/holds/plain.py``).

Of the pairs scoring ``--level`` or more whose tone gap is within ``tones.TONE_GAP`` (error links
today), it prints per signal the judgments beyond the most extreme listed near-duplicate (what a
cut holding every listed pair demotes), and the quartiles.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import audit_signals  # noqa: E402

#: Signals where a low value speaks against a copy.
LOW_IS_BAD = {"edge_corr", "edge_iou"}


def judged() -> dict[tuple[str, str], str]:
    seen: dict[tuple[str, str], set[str]] = {}
    for f in sorted(audit_signals.AUDITS.glob("**/*.csv")):
        for r in csv.DictReader(open(f, newline="")):
            if r.get("judgment"):
                seen.setdefault((r["test"], r["train"]), set()).add(r["judgment"])
    out = {k: next(j for j in ("different", "unsure", "same") if j in v or j == "same") for k, v in seen.items()}
    for a, b, j in list(csv.reader(open(audit_signals.LABELS, newline="")))[1:]:
        out[(a, b)] = f"listed-{j}"
    return out


def _aligned(planes_q: list[np.ndarray], planes_r: list[np.ndarray], fl: np.ndarray) -> tuple[list, list]:
    """Each query plane zoomed, mirrored and moved onto its reference as the grey verdict aligns them."""
    from pytest_leakcheck.detectors.aligned import alignment as al
    from pytest_leakcheck.detectors.aligned.hires import align32

    zoom, shift = align32(planes_q[0], planes_r[0], fl)
    side, t, off = al.S - al.T + 1, al.T, (al.S - al.T) // 2
    m, sy, sx, n = al._FINE[zoom], shift // side, shift % side, len(fl)
    ws, rs = [], []
    for q, r in zip(planes_q, planes_r):
        z = m @ np.where(fl[:, None, None], q[:, :, ::-1], q) @ m.swapaxes(-1, -2)
        ws.append(z[np.arange(n)[:, None, None], (sy[:, None] + np.arange(t))[:, :, None],
                    (sx[:, None] + np.arange(t))[:, None, :]])
        rs.append((al._BLUR @ r @ al._BLUR.T)[:, off:off + t, off:off + t])
    return ws, rs


def directed(cq: np.ndarray, cr: np.ndarray, fl: np.ndarray) -> dict[str, np.ndarray]:
    def planes(c: np.ndarray) -> list[np.ndarray]:
        y = c.astype(np.float32) @ np.array([0.299, 0.587, 0.114], np.float32)
        return [y, (c[..., 2] - y) * 0.564, (c[..., 0] - y) * 0.713]

    def rel(x: np.ndarray) -> np.ndarray:
        return x - x.mean((1, 2), keepdims=True)

    def grad(x: np.ndarray) -> np.ndarray:
        return np.hypot(*np.gradient(x, axis=(1, 2)))

    def corr(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a, b = rel(a).reshape(len(a), -1), rel(b).reshape(len(b), -1)
        return (a * b).sum(1) / np.sqrt((a * a).sum(1) * (b * b).sum(1) + 1e-9)

    (wy, wb, wr), (ry, rb, rr) = _aligned(planes(cq), planes(cr), fl)
    gw, gr = grad(wy), grad(ry)
    dc, sub = np.hypot(wb - rb, wr - rr), ~((gw < 2) & (gr < 2))
    top = [g > np.percentile(g.reshape(len(g), -1), 75, axis=1)[:, None, None] for g in (gw, gr)]
    inside = np.maximum(sub.sum((1, 2)), 1)
    return {"chroma_abs": dc.mean((1, 2)), "chroma_rel": np.hypot(rel(wb) - rel(rb), rel(wr) - rel(rr)).mean((1, 2)),
            "chroma_mean": np.hypot(wb.mean((1, 2)) - rb.mean((1, 2)), wr.mean((1, 2)) - rr.mean((1, 2))),
            "edge_corr": corr(gw, gr), "edge_iou": (top[0] & top[1]).sum((1, 2)) / np.maximum((top[0] | top[1]).sum((1, 2)), 1),
            "flat_both": (~sub).mean((1, 2)), "subj_gap": (np.abs(rel(wy) - rel(ry)) * sub).sum((1, 2)) / inside,
            "chroma_subj": (dc * sub).sum((1, 2)) / inside,
            "chroma_bg": (dc * ~sub).sum((1, 2)) / np.maximum((~sub).sum((1, 2)), 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--level", type=float, default=0.7879, help="the run's aligned error level plus the hair")
    ap.add_argument("--out")
    args = ap.parse_args()
    from pytest_leakcheck.detectors.aligned.holds import plain, tones

    pairs = judged()
    paths = sorted({p for k in pairs for p in k})
    row = {p: n for n, p in enumerate(paths)}
    colour, grey = audit_signals.squares(Path(args.data), paths)
    keys = list(pairs)
    i, j = np.array([row[a] for a, _ in keys]), np.array([row[b] for _, b in keys])
    v = audit_signals.verdicts(grey, i, j)
    one, two = directed(colour[i], colour[j], v["flip"]), directed(colour[j], colour[i], v["flip"])
    sig = {k: (np.maximum if k in LOW_IS_BAD else np.minimum)(one[k], two[k]) for k in one}
    share = plain.flat_share(grey)
    sig.update(score=v["score"], tone_gap=tones.gaps(grey, i, j, v["flip"]), flat=np.maximum(share[i], share[j]))
    rows = [{"test": a, "train": b, "judgment": pairs[a, b], **{k: float(sig[k][n]) for k in sig}}
            for n, (a, b) in enumerate(keys)]
    live = [r for r in rows if r["score"] >= args.level and r["tone_gap"] <= tones.TONE_GAP]
    print(f"{len(live)} judged or listed error links: {dict(Counter(r['judgment'] for r in live))}")
    for s in [k for k in sig if k not in ("score", "tone_gap")]:
        listed = [r[s] for r in live if r["judgment"] == "listed-near-duplicate"]
        edge = min(listed) if s in LOW_IS_BAD else max(listed)
        beyond = Counter(r["judgment"] for r in live if (r[s] < edge if s in LOW_IS_BAD else r[s] > edge))
        q = {lab: np.percentile([r[s] for r in live if r["judgment"] == lab], 50).round(2)
             for lab in ("different", "same", "listed-near-duplicate")}
        print(f"  {s:12s} beyond the listed extreme {edge:7.3f}: {dict(beyond)}; medians {q}")
    if args.out:
        audit_signals.write(Path(args.out), rows)


if __name__ == "__main__":
    main()
