"""Which pair signals tell the audited CIFAR error links apart: same photograph or different.

Run by hand: ``python benchmarks/audit_signals.py --data /tmp/cifar/cifar10 [--level 0.786] [--out pairs.csv]``.

It reads every judged contact sheet in ``benchmarks/quality_audit/`` (a pair judged ``different``
in any audit counts as different, else ``unsure`` if so judged, else ``same``) and the human list
(``listed-near-duplicate``, ``listed-very-similar``), decodes each image as the signatures do
(``signals.decode``: borders trimmed, the 32 px colour square), and scores each pair:

- ``score``: the ``aligned`` verdict (best of both directions and mirrors), as the detector
  computes it (``pairs.pair_scores``);
- ``tone_gap``: the grey levels by which the two squares differ at the verdict's alignment, each
  less its mean (``aligned/holds/tones.py``, which holds an error link over ``TONE_GAP`` to a warning);
- ``min_dir``: the worse of the two directions, in the mirror the verdict chose;
- ``sigma1``, ``sigma3``: the verdict with the detail high pass at 1 and 3 px instead of
  ``alignment.DETAIL_SIGMA`` (2 px);
- ``tiles4``: the verdict capped by the worst of 4x4 tiles instead of 3x3;
- ``chroma``: the detail correlation of the colour-difference planes (Cb, Cr) at the grey
  verdict's alignment, the lower of those with detail on both sides (NaN where neither has:
  most CIFAR pairs, whose colour carries little detail at 32 px);
- image statistics of the pair: ``flat`` (the larger share of pixels whose grey gradient is under
  2 levels: plain backgrounds, renders), ``border_std`` (the smaller mean colour spread along the
  border), ``colour_diff`` (mean absolute difference of the two mean colours).

Only pairs whose ``score`` reaches ``--level`` (the run's aligned error level; 0.786 on the visible
half at stop 54) are counted: those are the error links a signal would have to demote.
For each signal it prints the judgments' quartiles and, at a few cut-offs, how many of each
judgment fall under it: a signal worth using demotes most ``different`` links and no listed pair.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

AUDITS = Path(__file__).resolve().parent / "quality_audit"
LABELS = Path("/work/shared/data/cifar10-visible-duplicates.csv")
SIGNALS = ("score", "tone_gap", "min_dir", "sigma1", "sigma3", "tiles4", "chroma", "flat", "border_std", "colour_diff")
CUTS = {"tone_gap": (14.0, 16.0, 18.0, 20.0), "min_dir": (0.7, 0.75, 0.786), "sigma1": (0.7, 0.75, 0.786), "sigma3": (0.786, 0.8, 0.85),
        "tiles4": (0.7, 0.75, 0.786), "chroma": (0.0, 0.2, 0.3), "flat": (0.2, 0.3, 0.5), "border_std": (5.0, 10.0, 20.0),
        "colour_diff": (20.0, 30.0, 40.0)}
#: Signals where a high value (not a low one) speaks against a copy.
HIGH_IS_BAD = {"flat", "colour_diff", "tone_gap"}


def judged() -> dict[tuple[str, str], str]:
    """Every audited (test, train) pair with one judgment, then the listed pairs."""
    seen: dict[tuple[str, str], set[str]] = {}
    for f in sorted(AUDITS.glob("*.csv")):
        with open(f, newline="") as fh:
            for r in csv.DictReader(fh):
                seen.setdefault((r["test"], r["train"]), set()).add(r["judgment"])
    out = {k: next(j for j in ("different", "unsure", "same") if j in v or j == "same") for k, v in seen.items()}
    with open(LABELS, newline="") as fh:
        for a, b, j in list(csv.reader(fh))[1:]:
            out[(a, b)] = f"listed-{j}"
    return out


def squares(root: Path, paths: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The 32 px colour squares the signatures make, and their grey squares."""
    from pytest_leakcheck.detectors.aligned.descriptors import describe
    from pytest_leakcheck.signals.decode import COLOUR, decode

    colour = np.stack([np.asarray(decode((root / p).read_bytes(), 10**8, COLOUR).colour) for p in paths])
    return colour, np.stack([describe(c)["grey32"] for c in colour])


def verdicts(grey: np.ndarray, i: np.ndarray, j: np.ndarray) -> dict[str, np.ndarray]:
    """The aligned verdict of each pair (i, j) and its variants (module docstring)."""
    from pytest_leakcheck.detectors.aligned import alignment as al
    from pytest_leakcheck.detectors.aligned import pairs

    # Pairs only, no retrieval: no index, no descriptors to project.
    data = pairs.Data(grey, pairs.Templates(grey), np.zeros((len(grey), 128), np.float16), None,
                      np.zeros((len(grey), 0), np.float32), True)

    def directed(flip: bool) -> tuple[np.ndarray, np.ndarray]:
        fl = np.full((len(i), 1), flip)
        return tuple(al.verify(data.grey[q].astype(np.float32), r[:, None], fl, data.references, always=1)[:, 0]
                     for q, r in ((i, j), (j, i)))

    plain, mirrored = directed(False), directed(True)
    flip = np.fmax(*mirrored) > np.fmax(*plain)
    ab, ba = (np.where(flip, m, p) for p, m in zip(plain, mirrored))
    out = {"score": np.fmax(ab, ba), "min_dir": np.fmin(ab, ba), "flip": flip}
    saved = al._WIDE, al._WIDE_FINE, al._WIDE_BLUR, al.TILES
    try:
        for name, sigma in (("sigma1", 1.0), ("sigma3", 3.0)):
            al._WIDE = al._normal(al._gauss(sigma))
            al._WIDE_FINE, al._WIDE_BLUR = al._normal(al._WIDE @ al._FINE), al._normal(al._WIDE @ al._BLUR)
            p, m = directed(False), directed(True)
            out[name] = np.where(flip, np.fmax(*m), np.fmax(*p))
        al._WIDE, al._WIDE_FINE, al._WIDE_BLUR = saved[:3]
        al.TILES = 4
        p, m = directed(False), directed(True)
        out["tiles4"] = np.where(flip, np.fmax(*m), np.fmax(*p))
    finally:
        al._WIDE, al._WIDE_FINE, al._WIDE_BLUR, al.TILES = saved
    return out


def chroma(colour: np.ndarray, grey: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """The ``chroma`` signal of each pair (module docstring), at the alignment its verdict chose."""
    from pytest_leakcheck.detectors.aligned import alignment as al

    c = colour.astype(np.float32)
    luma = c @ np.array([0.299, 0.587, 0.114], np.float32)
    planes = ((c[..., 2] - luma) * 0.564 + 128, (c[..., 0] - luma) * 0.713 + 128)
    g = grey.astype(np.float32)
    tmpl2 = al.mirrored_templates(al.templates(g, coarse=True))
    out = np.full(len(i), np.nan)
    for n, (a, b) in enumerate(zip(i.tolist(), j.tolist())):
        best = -np.inf
        for q, r, f in ((a, b, False), (a, b, True), (b, a, False), (b, a, True)):
            fl = np.array([f])
            _, pick = al.coarse(g[[q]], np.array([[r + len(g) * f]]), tmpl2)
            _, zoom, shift = al.fine(g[[q]], g[[r]], fl, pick[:, 0] // al.COARSE_SHIFTS * al.COARSE_STEP,
                                     pick[:, 0] % al.COARSE_SHIFTS)
            score = al.detail(g[[q]], g[[r]], fl, zoom, shift)[0]
            if score > best:
                best = score
                got = [al.detail(x[[q]], x[[r]], fl, zoom, shift, tiles=False)[0] for x in planes]
                # detail() scores 0 where a side has no detail: no evidence, not disagreement.
                live = [v for v in got if v != 0]
                out[n] = min(live) if live else np.nan
    return out


def statistics(colour: np.ndarray, grey: np.ndarray, i: np.ndarray, j: np.ndarray) -> dict[str, np.ndarray]:
    """Image statistics of each pair (module docstring)."""
    g = grey.astype(np.float32)
    gy, gx = np.gradient(g, axis=(1, 2))
    flat = (np.hypot(gx, gy) < 2).mean((1, 2))
    c = colour.astype(np.float32)
    border = np.concatenate([c[:, 0], c[:, -1], c[:, :, 0], c[:, :, -1]], axis=1)
    spread = border.std(1).mean(1)
    mean = c.reshape(len(c), -1, 3).mean(1)
    return {"flat": np.maximum(flat[i], flat[j]), "border_std": np.minimum(spread[i], spread[j]),
            "colour_diff": np.abs(mean[i] - mean[j]).mean(1)}


def report(rows: list[dict], level: float) -> None:
    kept = [r for r in rows if r["score"] >= level]
    labels = sorted({r["judgment"] for r in kept})
    print(f"{len(kept)} of {len(rows)} judged or listed pairs score at or above {level}: "
          + ", ".join(f"{lab} {sum(r['judgment'] == lab for r in kept)}" for lab in labels))
    for s in SIGNALS:
        print(f"\n{s}: quartiles per judgment")
        for lab in labels:
            v = np.array([r[s] for r in kept if r["judgment"] == lab], float)
            v = v[np.isfinite(v)]
            print(f"  {lab:24s} " + (" ".join(f"{q:7.3f}" for q in np.percentile(v, [5, 25, 50, 75, 95]))
                                     if len(v) else "no evidence") + f"  ({len(v)} with evidence)")
        for cut in CUTS.get(s, ()):
            bad = (lambda v: v > cut) if s in HIGH_IS_BAD else (lambda v: v < cut)
            print(f"  {'>' if s in HIGH_IS_BAD else '<'} {cut}: " + ", ".join(
                f"{lab} {sum(bad(r[s]) for r in kept if r['judgment'] == lab)}" for lab in labels))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="folder with train/ and test/")
    ap.add_argument("--level", type=float, default=0.786, help="the run's aligned error level")
    ap.add_argument("--out", help="write every pair's signals to this CSV")
    args = ap.parse_args()
    pairs_ = judged()
    paths = sorted({p for k in pairs_ for p in k})
    row = {p: n for n, p in enumerate(paths)}
    colour, grey = squares(Path(args.data), paths)
    keys = list(pairs_)
    i, j = np.array([row[a] for a, _ in keys]), np.array([row[b] for _, b in keys])
    from pytest_leakcheck.detectors.aligned.holds import tones

    found = verdicts(grey, i, j)
    found = {**found, "tone_gap": tones.gaps(grey, i, j, found.pop("flip")), "chroma": chroma(colour, grey, i, j),
             **statistics(colour, grey, i, j)}
    rows = [{"test": a, "train": b, "judgment": pairs_[a, b], **{s: float(found[s][n]) for s in SIGNALS}}
            for n, (a, b) in enumerate(keys)]
    report(rows, args.level)
    if args.out:
        write(Path(args.out), rows)


def write(path: Path, rows: list[dict]) -> None:
    """Every pair's figures as CSV, one column per key of the first row."""
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, list(rows[0]))
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main()
