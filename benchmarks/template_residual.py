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
from typing import Any

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_leakcheck.detectors.aligned import alignment, hires  # noqa: E402
from pytest_leakcheck.detectors.aligned.descriptors import describe  # noqa: E402
from pytest_leakcheck.detectors.aligned.hires import (F, K, REACH, SUBZOOMS, TF, _gauss,  # noqa: E402
                                                      _zooms, align32)
from pytest_leakcheck.signals import imagedepth  # noqa: E402
from pytest_leakcheck.signals.decode import COLOUR, DETAIL_FROM, content_box, decode, open_image  # noqa: E402

BLOCK96 = 12
M = 3  # the re-decoded square is M times the fine one
HI = M * F
LOCAL = 2
KINDS = ("aligned", "phash", "thumbnail")


def squares(path: Path) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """The 32 px grey square, the stored 96 px fine square (None for a small image), the HI px one."""
    data = path.read_bytes()
    d = decode(data, 10**8, COLOUR)
    g32 = describe(np.asarray(d.colour))["grey32"].reshape(alignment.S, alignment.S)
    fine = hires.square(hires.row(d, None))  # type: ignore[arg-type]
    box = content_box(d.upright, own_colour=max(d.size) < DETAIL_FROM)
    img = open_image(data, 10**8)
    rgb = imagedepth.upright_rgb(img, imagedepth.orientation(img))
    if box is not None:  # the shared decode's content box, scaled to the full decode
        sx, sy = rgb.width / d.upright.width, rgb.height / d.upright.height
        rgb = rgb.crop((round(box[0] * sx), round(box[1] * sy), round(box[2] * sx), round(box[3] * sy)))
    hi = rgb.convert("L").resize((HI, HI), Image.Resampling.LANCZOS, reducing_gap=3.0)
    return g32, fine, np.asarray(hi, np.float32)


def _corr(w: np.ndarray, t: np.ndarray) -> float:
    w, t = w - w.mean(), t - t.mean()
    return float((w * t).sum() / max(np.sqrt((w * w).sum() * (t * t).sum()), 1e-6))


def window96(hq: np.ndarray, hr: np.ndarray, flipped: bool, zoom: int, shift: int) -> tuple[float, tuple[float, int, int]]:
    """Best fine correlation around the 32 px alignment, and its geometry (zoom factor, row, column at 96 px)."""
    side, span, off = alignment.S - alignment.T + 1, TF + 2 * REACH, (F - TF) // 2
    y0 = int(np.clip(K * (shift // side) - REACH, 0, F - span))
    x0 = int(np.clip(K * (shift % side) - REACH, 0, F - span))
    t, g = hr[off:off + TF, off:off + TF], (hq[:, ::-1] if flipped else hq)
    best: tuple[float, tuple[float, int, int]] = (-np.inf, (1.0, 0, 0))
    for k in range(len(SUBZOOMS)):
        reg = _zooms()[zoom, k, y0:y0 + span] @ g @ _zooms()[zoom, k, x0:x0 + span].T
        for dy in range(span - TF + 1):
            for dx in range(span - TF + 1):
                c = _corr(reg[dy:dy + TF, dx:dx + TF], t)
                if c > best[0]:
                    best = (c, (alignment.SCALES[zoom] * SUBZOOMS[k], y0 + dy, x0 + dx))
    return best


def _zoom_rows(n: int, s: float, first: int, count: int) -> np.ndarray:
    c = (n - 1) / 2
    x = np.clip(c + (np.arange(first, first + count) - c) / s, 0, n - 1)
    x0 = np.minimum(np.floor(x).astype(int), n - 2)
    m = np.zeros((count, n), np.float32)
    m[np.arange(count), x0] += 1 - (x - x0)
    m[np.arange(count), x0 + 1] += x - x0
    return m


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


def blocks_hi(q: np.ndarray, r: np.ndarray, flipped: bool, geom: tuple[float, int, int], block: int,
              local: int) -> dict[str, float]:
    """Local block correlations at HI px around the 96 px window scaled up M times.

    ``rmax``: the largest block residual after its own gain, energy x (1 - corr+^2), over the
    median block energy of the reference; ``smin``: the lowest correlation of a block whose energy
    is over that median (text, a face), ``min``: of any textured block.
    """
    s, y, x = geom
    band = [_gauss(0.8, HI), _gauss(3.0, HI)]
    q, r = ((b0 @ a @ b0.T) - (b1 @ a @ b1.T) for a in (q, r) for b0, b1 in [band])
    t3, pad = M * TF, M * REACH // 2 + 1 + local
    g = q[:, ::-1] if flipped else q
    reg = _zoom_rows(HI, s, M * y - pad, t3 + 2 * pad) @ g @ _zoom_rows(HI, s, M * x - pad, t3 + 2 * pad).T
    off = (HI - t3) // 2
    t = r[off:off + t3, off:off + t3]
    reach = pad - local
    _, gy, gx = max((_corr(reg[pad + dy:pad + dy + t3, pad + dx:pad + dx + t3], t), dy, dx)
                    for dy in range(-reach, reach + 1) for dx in range(-reach, reach + 1))
    n = t3 // block
    corr, et, ew = np.zeros(n * n), np.zeros(n * n), np.zeros(n * n)
    for b in range(n * n):
        by, bx = divmod(b, n)
        tb = t[by * block:(by + 1) * block, bx * block:(bx + 1) * block]
        oy, ox = pad + gy + by * block, pad + gx + bx * block
        corr[b], dy, dx = max((_corr(reg[oy + dy:oy + dy + block, ox + dx:ox + dx + block], tb), dy, dx)
                              for dy in range(-local, local + 1) for dx in range(-local, local + 1))
        et[b], ew[b] = tb.var(), reg[oy + dy:oy + dy + block, ox + dx:ox + dx + block].var()
    e, med = np.minimum(et, ew), np.median(et)
    textured, strong = np.sqrt(e) > 0.25 * np.median(np.sqrt(e)), e > med
    res = e * (1 - np.clip(corr, 0, 1) ** 2)
    return {"min": float(corr[textured].min()), "smin": float(corr[strong].min()) if strong.any() else 1.0,
            "rmax": float(res.max() / max(med, 1e-9))}


def pair_stats(a: Path, b: Path, orientation: str, block: int, local: int) -> dict[str, float] | None:
    """Both directions aligned as the fine verdict aligns them; the better one is scored."""
    (qa32, qaf, qah), (qb32, qbf, qbh) = squares(a), squares(b)
    if qaf is None or qbf is None:
        return None
    flipped = orientation == "hflip"
    turned = orientation if orientation not in ("identity", "hflip") else "identity"
    hq, hr = hires.high_pass(np.stack([qaf, qbf]).astype(np.float32))
    best: Any = None
    for a32, ha, ah, b32, hb, bh, how in ((qa32, hq, qah, qb32, hr, qbh, turned),
                                         (qb32, hr, qbh, qa32, hq, qah, alignment.TURNS[turned][1])):
        if how != "identity":
            a32, ha, ah = (np.ascontiguousarray(alignment.turn(x[None], [how])[0]) for x in (a32, ha, ah))
        zoom, shift = align32(a32[None].astype(np.float32), b32[None].astype(np.float32), np.array([flipped]))
        c, geom = window96(ha, hb, flipped, int(zoom[0]), int(shift[0]))
        if best is None or c > best[0]:
            best = (c, geom, ha, hb, ah, bh)
    c, geom, ha, hb, ah, bh = best
    s, y, x = geom
    g = ha[:, ::-1] if flipped else ha
    w = _zoom_rows(F, s, y, TF) @ g @ _zoom_rows(F, s, x, TF).T
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


KEYS = ("fine", "top3", "maxmed", "min96", "min", "smin", "rmax")
#: Where each statistic would hold a link (a hold is a warning): below for correlations, above for residuals.
SWEEP = {"rmax": (0.5, 0.75, 1.0, 1.5, 2.0), "smin": (0.85, 0.8, 0.75, 0.7), "top3": (0.25, 0.3), "maxmed": (5.0, 8.0)}


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
    ap.add_argument("--local", type=int, default=LOCAL, help="each block's own shift, px at HI")
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
                    held = v > level if key in ("rmax", "top3", "maxmed") else v < level
                    cells.append(f"{name}:{lab} {int(held.sum())}/{len(v)}")
            print(f"{key} {'>' if key in ('rmax', 'top3', 'maxmed') else '<'} {level}: " + ", ".join(cells))


if __name__ == "__main__":
    main()
