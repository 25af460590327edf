"""Copies planted in a fixed-camera set: which of them the check fails on, and a signal that separates them.

Run by hand: ``python benchmarks/fixed_camera_copies.py [--data /work/field-data/chess] [--jobs 2]``.

It copies the set (``chess`` of ``benchmarks/field.py`` by default: 289 photos of one board,
a piece moved between shots) to a temporary folder, with its ``leakcheck.yaml``, and plants four
copies of train photos in ``test/``: re-saved at JPEG quality 70, mirrored, turned 90 degrees,
and cropped by 5 % on each side.  Then it runs a cold ``leakcheck check`` and prints, for each
planted copy, the finding that holds it (kind, severity) or that none does.

On such a set pHash and the thumbnail cannot tell copies from other shots (``homogeneity``),
aligned's retrieved neighbours put its error level at 1.0, and the shared-scene note folds
every near link: a copy that is not byte- or pixel-identical passes the gate.  What would
separate them is printed too, with its limit: the largest 8 x 8 block of the absolute
difference of the two 96 px fine squares (``aligned/hires.py``), each normalised to zero mean
and unit deviation, for each upright or mirrored copy against its source, for random pairs of
other shots, and for each held-out shot against its closest train shot.  A copy differs by
compression noise everywhere, another shot where a piece moved; but at 96 px one small piece
is a few pixels, and the closest other shots come near the copies.
"""

from __future__ import annotations

import argparse
import glob
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

PLANTS = {
    "zz_resaved.jpg": lambda im: im,
    "zz_mirrored.jpg": lambda im: im.transpose(Image.Transpose.FLIP_LEFT_RIGHT),
    "zz_turned.jpg": lambda im: im.transpose(Image.Transpose.ROTATE_90),
    "zz_cropped.jpg": lambda im: im.crop((im.width // 20, im.height // 20,
                                          im.width - im.width // 20, im.height - im.height // 20)),
}


def plant(data: Path, into: Path) -> dict[str, str]:
    """The set copied to ``into`` with the planted copies; {copy: its source}."""
    shutil.copytree(data, into, ignore=shutil.ignore_patterns(".leakcheck*"))
    sources = sorted(glob.glob(str(into / "train" / "*.jpg")))[:len(PLANTS)]
    out = {}
    for (name, make), src in zip(PLANTS.items(), sources):
        with Image.open(src) as im:
            make(im.convert("RGB")).save(into / "test" / name, quality=70 if "resaved" in name else 85)
        out[f"test/{name}"] = str(Path(src).relative_to(into))
    return out


def block_residual(a: np.ndarray, b: np.ndarray, k: int = 8) -> float:
    """Largest k x k block mean of |a - b|, each square normalised to zero mean and unit deviation."""
    a = (a - a.mean()) / (a.std() + 1e-6)
    b = (b - b.mean()) / (b.std() + 1e-6)
    n = a.shape[0] // k
    d = np.abs(a - b)[:n * k, :n * k].reshape(n, k, n, k).mean(axis=(1, 3))
    return float(d.max())


def fine(path: Path) -> np.ndarray:
    from pytest_leakcheck.detectors.aligned import hires
    from pytest_leakcheck.signals import decode

    square = hires.square(hires.row(decode.decode(path.read_bytes(), 10**9), None))
    assert square is not None, f"{path}: no fine square (too small)"
    return square.astype(np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/work/field-data/chess"))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--pairs", type=int, default=200, help="random pairs of other shots measured")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="leakcheck-fixed-copies-"))
    try:
        root = tmp / "data"
        planted = plant(args.data, root)
        report = tmp / "report.json"
        cli = "import sys; from pytest_leakcheck.cli import main; sys.exit(main(sys.argv[1:]))"
        subprocess.run([sys.executable, "-c", cli, "check", "--policy",
                        str(root / "leakcheck.yaml"), "--format", "json", "-o", str(report), "-j", str(args.jobs),
                        "-q"], check=False)
        findings = json.loads(report.read_text())["findings"]
        for copy, source in planted.items():
            held = [(f["kind"], f["severity"]) for f in findings
                    if copy in {m["path"] for m in f["members"]}]
            together = any({copy, source} <= {m["path"] for m in f["members"]} for f in findings)
            print(f"{copy:22s} of {source[:40]}...: {held or 'in no finding (or only in a note sample)'}; "
                  f"in one finding with its source: {together}")
        for copy, source in planted.items():
            if "turned" in copy or "cropped" in copy:
                continue  # the measurement below does not align
            a = fine(root / source)
            b = fine(root / copy)
            b = b[:, ::-1] if "mirrored" in copy else b
            print(f"block residual, {copy} against its source: {block_residual(a, b):.3f}")
        shots = [p for p in sorted(root.glob("*/*.jpg")) if not p.name.startswith("zz_")]
        rng = np.random.default_rng(0)
        squares: dict[Path, np.ndarray] = {}
        values = []
        for _ in range(args.pairs):
            x, y = rng.choice(len(shots), 2, replace=False)
            for p in (shots[x], shots[y]):
                squares.setdefault(p, fine(p))
            values.append(block_residual(squares[shots[x]], squares[shots[y]]))
        pct = np.percentile(values, [0, 1, 5, 50])
        print(f"block residual, {args.pairs} random pairs of other shots: min {pct[0]:.3f}, "
              f"1st percentile {pct[1]:.3f}, 5th {pct[2]:.3f}, median {pct[3]:.3f}")
        # Random pairs rarely draw the closest shots: each held-out shot against every train shot.
        train = [p for p in shots if p.parts[-2] == "train"]
        held = [p for p in shots if p.parts[-2] != "train"]
        t = np.stack([squares.get(p) if p in squares else squares.setdefault(p, fine(p)) for p in train])
        tn = (t - t.mean(axis=(1, 2), keepdims=True)) / (t.std(axis=(1, 2), keepdims=True) + 1e-6)
        nearest = []
        for p in held:
            q = squares.setdefault(p, fine(p))
            qn = (q - q.mean()) / (q.std() + 1e-6)
            nearest.append(min(block_residual(qn, x) for x in tn))
        near = np.sort(nearest)
        print(f"block residual, each of {len(held)} held-out shots against its closest train shot: "
              f"the 5 closest {', '.join(f'{v:.3f}' for v in near[:5])}; median {np.median(near):.3f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
