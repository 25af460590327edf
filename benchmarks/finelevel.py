"""What aligned's fine verdict scores for copies and lookalikes of large photos (the fine floors).

Run by hand: ``python benchmarks/finelevel.py [--data /work/scratch/data/reshot/bsds] [--n 50]``.

For each photo A (``--n`` BSDS500 photographs from the re-shot benchmark's distractors,
resized to 640 x 480, and as many synthetic ``testing.photo`` ones) it makes:

- copies: A cropped 3-6 % a side and resized back, half of them mirrored;
- a lookalike: A's 8 px Gaussian blur plus the finer detail of another photo B (the same
  layout, another picture: docs/detectors.md, "What it does not find");

saves each as JPEG (quality 90), decodes it on the check's own path, and prints each
kind's 32 px score (``alignment.verify``) and fine score (``hires.both_ways``):
minimum, 5th and 90th percentiles, maximum, and the rate the current floors
(``hires_levels.FINE_FLOOR`` and ``FINE_SMALL_FLOOR``) leave at error level.
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import numpy as np
from PIL import Image, ImageFilter

from pytest_leakcheck.detectors.aligned import alignment, descriptors, families, hires, hires_levels
from pytest_leakcheck.signals.decode import decode
from pytest_leakcheck.testing import photo

SIZE = (640, 480)


def squares(img: Image.Image) -> tuple[np.ndarray, np.ndarray]:
    """The 32 px grey square and the fine square of ``img`` saved as a JPEG, as a check makes them."""
    buf = io.BytesIO()
    img.convert("RGB").save(buf, "JPEG", quality=90)
    decoded = decode(buf.getvalue(), 10**9, colour=alignment.S)
    fine = hires.square(families.HIRES_FAMILY.compute(decoded, families.HIRES_FAMILY))
    assert fine is not None, "not a large image"
    return descriptors.describe(np.asarray(decoded.colour))["grey32"], fine


def lookalike(a: Image.Image, b: Image.Image, radius: float = 8) -> Image.Image:
    def low(im: Image.Image) -> np.ndarray:
        return np.asarray(im.filter(ImageFilter.GaussianBlur(radius)), np.float32)

    return Image.fromarray(np.clip(low(a) + np.asarray(b, np.float32) - low(b), 0, 255).astype(np.uint8))


def cropped(img: Image.Image, rng: np.random.Generator) -> Image.Image:
    w, h = img.size
    left, top, right, bottom = rng.uniform(0.03, 0.06, 4)
    box = (round(w * left), round(h * top), w - round(w * right), h - round(h * bottom))
    return img.crop(box).resize((w, h), Image.Resampling.LANCZOS)


def score(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray], mirrored: bool) -> tuple[float, float]:
    """(32 px score, fine score) of one pair, each the better of both directions."""
    flip = np.array([mirrored])
    coarse = -1.0
    for q, r in ((a[0], b[0]), (b[0], a[0])):
        tmpl2 = alignment.mirrored_templates(alignment.templates(r[None], coarse=True))
        coarse = max(coarse, float(alignment.verify(q[None].astype(np.float32), np.zeros((1, 1), np.int64), flip[:, None],
                                                    alignment.References(r[None], tmpl2), always=1)[0, 0]))
    return coarse, float(hires.both_ways(a[0][None], b[0][None], a[1][None], b[1][None], flip)[0])


def measure(images: list[Image.Image], seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out: dict[str, list[tuple[float, float]]] = {"copy": [], "lookalike": []}
    for k, a in enumerate(images):
        sa = squares(a)
        mirrored = k % 2 == 1
        copy = cropped(a, rng)
        copy = copy.transpose(Image.Transpose.FLIP_LEFT_RIGHT) if mirrored else copy
        out["copy"].append(score(sa, squares(copy), mirrored))
        out["lookalike"].append(score(sa, squares(lookalike(a, images[(k + 1) % len(images)])), False))
    return {kind: np.array(v) for kind, v in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/work/scratch/data/reshot/bsds"))
    parser.add_argument("--n", type=int, default=50)
    args = parser.parse_args()
    sets = {"synthetic": [photo(i, SIZE) for i in range(args.n)]}
    files = sorted(args.data.glob("*.jpg"))[:args.n] if args.data.is_dir() else []
    if files:
        sets["photographs"] = [Image.open(f).convert("RGB").resize(SIZE, Image.Resampling.LANCZOS) for f in files]
    else:
        print(f"no photographs under {args.data}: synthetic images only")
    print(f"fine square {hires.F} px; floors {hires_levels.FINE_FLOOR} (large data), {hires_levels.FINE_SMALL_FLOOR} (small data)")
    for name, images in sets.items():
        for kind, v in measure(images, 1).items():
            fine = v[:, 1][np.isfinite(v[:, 1])]
            print(f"{name:11s} {kind:9s} n={len(v):3d}  32 px min {v[:, 0].min():.2f}  "
                  f"fine min {fine.min():.2f} p5 {np.percentile(fine, 5):.2f} p90 {np.percentile(fine, 90):.2f} "
                  f"max {fine.max():.2f}  no fine evidence {int((~np.isfinite(v[:, 1])).sum())}  "
                  f"at error level: {(fine >= hires_levels.FINE_FLOOR).mean():.0%} / {(fine >= hires_levels.FINE_SMALL_FLOOR).mean():.0%}")


if __name__ == "__main__":
    main()
