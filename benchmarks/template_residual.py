"""Where two aligned pictures differ: a localised residual test for documents of one template (issue 37).

Measured and not adopted (docs/field.md, ``prado`` of stop 57). A check's report gives the error
links; each pHash, thumbnail and ``aligned`` link between two large images is aligned as
``aligned``'s fine verdict aligns it (``hires.align32``, then the best of its 96 px windows), and
then scored block by block:

- at 96 px, from the fine square the store keeps (``hires.row``): the high-passed residual on a
  grid of BLOCK96 px blocks, as the share of the top three blocks (``top3``), the largest block
  against the median (``maxmed``) and the lowest local correlation of a textured block (``min96``);
- at HI px, decoding both files again (the content box of the shared decode, squashed to HI x HI
  as the fine square is to 96): the 96 px window scaled up, refined by REACH px, then each
  ``--block-hi`` px block's correlation at its best shift within ``--local`` px (a rotation or
  warp is a local shift), on a band of DoG(0.8, 3) px: ``min`` of any textured block, ``smin`` of
  a block over the median energy (text, a face), ``rmax`` the largest block residual after its own
  gain against the median block energy (see :func:`blocks_hi`).

A copy should agree in every block; another document of one template should not where its
text or portrait differs.  For ``prado`` each link is labelled by its MRZ lines
(``metadata_extract.jsonl``: ``same`` where both files have the same MRZ); other sets' error
links are copies by their audits (``benchmarks/field_audit/``).

    python benchmarks/template_residual.py --set prado=RUNS/prado:DATA/prado \\
        --set damage=RUNS/damage:DATA/damage [--per-set 60] [--block-hi 24] [--local 2]

It prints each statistic's range per set and label, and a sweep: how many links a hold at each
level would make warnings (``SWEEP``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_leakcheck.detectors.aligned.hires import F, TF  # noqa: E402
from pytest_leakcheck.detectors.aligned.holds.residual import (aligned, blocks_hi, squares,  # noqa: E402
                                                               zoom_rows)

BLOCK96 = 12
KINDS = ("aligned", "phash", "thumbnail")


def blocks96(w: np.ndarray, r: np.ndarray) -> dict[str, float]:
    """Residual statistics of the high-passed 96 px window against the reference crop."""
    n = TF // BLOCK96

    def cut(a: np.ndarray) -> np.ndarray:
        a = a.reshape(n, BLOCK96, n, BLOCK96).transpose(0, 2, 1, 3).reshape(n * n, -1)
        return a - a.mean(1, keepdims=True)

    W, R = cut(w), cut(r)
    ew, er = (W * W).sum(1), (R * R).sum(1)
    gain = np.sqrt(ew.sum() / max(er.sum(), 1e-9))
    res = np.sort(((W - gain * R) ** 2).sum(1))[::-1]
    corr = (W * R).sum(1) / np.maximum(np.sqrt(ew * er), 1e-9)
    tex = np.sqrt(np.minimum(ew, gain * gain * er))
    return {"top3": float(res[:3].sum() / max(res.sum(), 1e-9)), "maxmed": float(res[0] / max(np.median(res), 1e-9)),
            "min96": float(corr[tex > 0.5 * np.median(tex)].min())}


def pair_stats(a: Path, b: Path, orientation: str, block: int, local: int) -> dict[str, float] | None:
    """Both directions aligned as the fine verdict aligns them (``holds.residual.aligned``); the better one scored."""
    got = aligned(squares(a.read_bytes(), 10**8), squares(b.read_bytes(), 10**8), orientation)
    if got is None:
        return None
    c, geom, ha, hb, ah, bh = got
    flipped = orientation == "hflip"
    s, y, x = geom
    g = ha[:, ::-1] if flipped else ha
    w = zoom_rows(F, s, y, TF) @ g @ zoom_rows(F, s, x, TF).T
    off = (F - TF) // 2
    return {"fine": float(c), **blocks96(w, hb[off:off + TF, off:off + TF]), **blocks_hi(ah, bh, flipped, geom, block, local)}


def mrz(root: Path) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for meta in root.glob("*/metadata_extract.jsonl"):
        for line in meta.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                g = json.loads(r["ground_truth"])["gt_parse"]
                out[f"{meta.parent.name}/{r['file_name']}"] = (g.get("mrz1"), g.get("mrz2"), g.get("mrz3"))
    return out


def links(report: Path) -> list[tuple[str, str, str, str]]:
    r = json.loads(report.read_text())
    return [(p["a"], p["b"], p["detector"], p["orientation"]) for f in r["findings"] if f["severity"] == "error"
            for p in f.get("pairs", []) if p["detector"] in KINDS]


KEYS = ("fine", "top3", "maxmed", "min96", "min", "smin", "rmax", "rtex")
#: Where each statistic would hold a link (a hold is a warning): below for correlations, above for residuals.
SWEEP = {"rmax": (0.5, 0.75, 1.0, 1.5, 2.0), "rtex": (0.5, 0.6, 0.7, 0.8, 1.0), "smin": (0.85, 0.8, 0.75, 0.7), "top3": (0.25, 0.3), "maxmed": (5.0, 8.0)}


def scored(name: str, runs: Path, root: Path, per_set: int, block: int, local: int) -> list[tuple[str, dict[str, float]]]:
    """(label, statistics) of a seeded sample of the set's error links between large images."""
    got = links(runs / "report.json")
    if len(got) > per_set:
        pick = np.random.default_rng(0).choice(len(got), per_set, replace=False)
        got = [got[k] for k in sorted(pick)]
    labels = mrz(root) if (root / "train" / "metadata_extract.jsonl").exists() else None
    rows = []
    for a, b, det, o in got:
        st = pair_stats(root / a, root / b, o, block, local)
        if st is None:
            continue
        lab = "copy" if labels is None else ("same" if labels.get(a) and labels.get(a) == labels.get(b) else "other")
        rows.append((lab, st))
        if labels is not None:
            print(f"  {lab:5} {det:9} " + " ".join(f"{k}={st[k]:.3f}" for k in KEYS) + f"  {a}  {b}")
    for lab in sorted({x for x, _ in rows}):
        vals = {k: np.array([st[k] for x, st in rows if x == lab]) for k in KEYS}
        print(f"{name} {lab} ({len(vals['fine'])} links; min/median/max): " +
              " ".join(f"{k} {v.min():.2f}/{np.median(v):.2f}/{v.max():.2f}" for k, v in vals.items()), flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", action="append", default=[], help="NAME=RUNS_DIR:DATA_ROOT (RUNS_DIR holds report.json)")
    ap.add_argument("--per-set", type=int, default=60, help="links scored per set (a seeded sample)")
    ap.add_argument("--block-hi", type=int, default=24, help="block side at HI px")
    ap.add_argument("--local", type=int, default=2, help="each block's own shift, px at HI")
    args = ap.parse_args()
    every = {}
    for spec in args.set:
        name, rest = spec.split("=", 1)
        runs, root = (Path(x) for x in rest.split(":", 1))
        every[name] = scored(name, runs, root, args.per_set, args.block_hi, args.local)
    print("links held (a hold at each level): per set and label, held/scored")
    for key, levels in SWEEP.items():
        for level in levels:
            cells = []
            for name, rows in every.items():
                for lab in sorted({x for x, _ in rows}):
                    v = np.array([st[key] for x, st in rows if x == lab])
                    held = v > level if key in ("rmax", "rtex", "top3", "maxmed") else v < level
                    cells.append(f"{name}:{lab} {int(held.sum())}/{len(v)}")
            print(f"{key} {'>' if key in ('rmax', 'rtex', 'top3', 'maxmed') else '<'} {level}: " + ", ".join(cells))


if __name__ == "__main__":
    main()
