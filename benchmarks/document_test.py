"""How often the document test of ``aligned.holds.documents`` fires, per field set (issue 37).

The template hold asks its 288 px residual only where both pictures of an error
link are documents, so the test must fire on ID cards, invoices and forms and on
(almost) none of the photos whose bursts and augmented copies the audits count as
leaks.  For each ``--only`` set under ``--data`` (the layout of ``benchmarks/field.py``)
it decodes a seeded sample of the image files as the check does (``signals.decode``,
then the 96 px square ``hires.row`` stores), and prints the share the test calls
documents, each feature's 5th/50th/95th percentile, and with ``--show`` the files
it fired on (to look at).

    python benchmarks/document_test.py --data /work/field-data --per-set 300 \\
        --only prado,invoices,ecustfd,eggs,muzzle,nail,cones,cavity,apex-hud,xray-wrist,damage,tracks,screws,ufc,pakcoy
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_leakcheck.detectors.aligned import hires  # noqa: E402
from pytest_leakcheck.detectors.aligned.holds import documents  # noqa: E402
from pytest_leakcheck.signals.decode import COLOUR, decode  # noqa: E402

IMAGE_EXT = {".jpg", ".jpeg", ".jfif", ".png", ".bmp", ".webp", ".tif", ".tiff"}


def fine_square(path: Path) -> np.ndarray | None:
    """The 96 px square the check stores for this file (None: a small image, or unreadable)."""
    try:
        return hires.square(hires.row(decode(path.read_bytes(), 10**8, COLOUR), None))  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - an unreadable file is no sample
        return None


def measured(root: Path, per_set: int, seed: int) -> tuple[list[Path], np.ndarray]:
    """A seeded sample of the set's image files that have a fine square, and those squares."""
    files = sorted(p for p in root.rglob("*") if p.suffix.lower() in IMAGE_EXT and p.is_file())
    random.Random(seed).shuffle(files)
    kept, squares = [], []
    for p in files[:per_set]:
        sq = fine_square(p)
        if sq is not None:
            kept.append(p)
            squares.append(sq)
    return kept, (np.stack(squares) if squares else np.zeros((0, hires.F, hires.F), np.uint8))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=Path("/work/field-data"))
    ap.add_argument("--only", required=True, help="comma-separated set names (folders under --data)")
    ap.add_argument("--per-set", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--show", action="store_true", help="list the files the test fired on")
    args = ap.parse_args()
    for name in args.only.split(","):
        files, squares = measured(args.data / name, args.per_set, args.seed)
        if not len(files):
            print(f"{name:12} no large images")
            continue
        got = documents.features(squares)
        fired = documents.documents(squares)
        cells = " ".join(f"{k} {np.percentile(v, 5):.2f}/{np.median(v):.2f}/{np.percentile(v, 95):.2f}"
                         for k, v in got.items())
        print(f"{name:12} documents {int(fired.sum())}/{len(files)} = {fired.mean():.3f}  {cells}", flush=True)
        if args.show:
            for p in np.array(files, dtype=object)[fired]:
                print(f"    {p}")


if __name__ == "__main__":
    main()
