"""How far apart unrelated images of one dataset sit by pHash: the share of cross-split pairs
within the policy's ``max_distance`` (8 of 64 bits by default), in identity and in any of the
8 orientations. On a fixed camera (one board, one inspection rig) most pairs are close,
so the hash's error level cannot separate copies from the rest there (docs/field.md).
Where names carry capture times, it also compares cross-split pairs shot within 10 s
(bursts) with the other cross-split pairs.

Run by hand: ``python benchmarks/field_probe.py /work/field-data/chess [--max-images 400]``.
The pHash is the package's own (``signals.families.phash_bits``) on a JPEG draft decode
(at least 4x the 32 px square the hash reads, so the bits barely differ from a full decode).
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> int:
    import numpy as np
    from PIL import Image

    from field import file_splits
    from field_truth import BURST_SECONDS, captured
    from pytest_leakcheck.signals.families import phash_bits

    parser = argparse.ArgumentParser()
    parser.add_argument("root", type=Path)
    parser.add_argument("--max-images", type=int, default=600)
    parser.add_argument("--level", type=int, default=8)
    args = parser.parse_args()
    splits = file_splits(args.root / "leakcheck.yaml")
    paths = sorted(splits)
    paths = sorted(random.Random(0).sample(paths, min(args.max_images, len(paths))))
    turns = (None, Image.Transpose.FLIP_LEFT_RIGHT, Image.Transpose.FLIP_TOP_BOTTOM, Image.Transpose.ROTATE_90,
             Image.Transpose.ROTATE_180, Image.Transpose.ROTATE_270, Image.Transpose.TRANSPOSE,
             Image.Transpose.TRANSVERSE)
    bits = []
    for path in paths:
        with Image.open(args.root / path) as image:
            image.draft("L", (128, 128))
            grey = image.convert("L")
            bits.append([phash_bits(grey if t is None else grey.transpose(t), 8).ravel() for t in turns])
    h = np.array(bits, dtype=np.uint8)  # images x 8 orientations x 64 bits
    split = np.array([splits[p] for p in paths])
    cross = split[:, None] != split[None, :]
    ident = (h[:, None, 0, :] != h[None, :, 0, :]).sum(-1)
    anyo = np.min([(h[:, None, 0, :] != h[None, :, o, :]).sum(-1) for o in range(8)], axis=0)
    iu = np.triu_indices(len(paths), 1)
    c = cross[iu]
    for name, d in (("identity", ident[iu][c]), ("any orientation", anyo[iu][c])):
        q = np.percentile(d, [1, 5, 25, 50])
        print(f"{args.root.name}: {len(paths)} images, {c.sum()} cross-split pairs, pHash {name}: "
              f"{(d <= args.level).mean():.1%} within {args.level}; percentiles 1/5/25/50 = {q.tolist()}")
    # Cross-split pairs shot within the burst window (capture times in the names), against the rest.
    times = [captured(p) for p in paths]
    burst = np.array([[ta is not None and tb is not None and abs((ta - tb).total_seconds()) <= BURST_SECONDS
                       for tb in times] for ta in times])[iu] & c
    if burst.any():
        for name, d in (("bursts", anyo[iu][burst]), ("other cross-split pairs", anyo[iu][c & ~burst])):
            q = np.percentile(d, [5, 25, 50, 75, 95])
            print(f"  {name} ({len(d)}): pHash any orientation, percentiles 5/25/50/75/95 = {q.tolist()}; "
                  f"{(d <= args.level).mean():.1%} within {args.level}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
