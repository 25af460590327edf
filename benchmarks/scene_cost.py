"""CPU per photo of the signature stage with and without same-scene's keypoint family, and its parts.

Run by hand: ``python benchmarks/scene_cost.py [--n 400]``, on ``speed.py``'s generated 640x480
photos (built once, cached).  One process, ``time.process_time``: less swayed by a loaded machine
than wall time.  It prints, per photo: every default family (``sign``), the same without the
``scene`` family, their difference; then the scene family's parts: the shared decode, the
grey image at the keypoint side (a second, luma-only read when the shared decode is smaller), ORB.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from benchdata import generated


def per_photo(fn, items) -> float:
    t = time.process_time()
    for item in items:
        fn(item)
    return (time.process_time() - t) / len(items) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=400)
    args = parser.parse_args()
    from pytest_leakcheck import detectors
    from pytest_leakcheck.policy.load import load
    from pytest_leakcheck.signals import decode as D

    try:
        from pytest_leakcheck.detectors.same_scene import features
    except ImportError:  # the flat tree before the rooms move, to measure the code before
        from pytest_leakcheck.detectors import _scene as features
    root = generated("speed", 3000, (640, 480))
    files = sorted(root.glob("train/*.jpg"))[:args.n]
    policy = root / "scene-cost.yaml"
    policy.write_text("version: 1\nsplits:\n  train: [train/**]\n  test: [test/**]\n")
    fams: list = []
    for det, settings in detectors.enabled(load(policy)):
        fams += [f for f in det.families(settings, load(policy)) if f not in fams]
    without = tuple(f for f in fams if f.name != "scene")

    def sign(families):
        return lambda f: D.sign(D.SignTask(str(f), 10**8, families))

    per_photo(sign(tuple(fams)), files)  # warm the caches
    every = min(per_photo(sign(tuple(fams)), files) for _ in range(2))
    rest = min(per_photo(sign(without), files) for _ in range(2))
    print(f"{len(files)} photos, {len(fams)} families: every family {every:.2f} ms/photo, "
          f"without scene {rest:.2f}, the scene family {every - rest:.2f}")
    datas = [Path(f).read_bytes() for f in files]

    def decoded(data):
        d = D.decode(data, 10**8)
        d.source, d.max_pixels = data, 10**8
        return d

    decs = [decoded(d) for d in datas]
    side = features.working_side(640, 480) if hasattr(features, "working_side") else features.SIDE
    greys = [D.detail_grey(d, side) for d in decs]
    print(f"shared decode {per_photo(decoded, datas):.2f} ms; grey at {side} px "
          f"{per_photo(lambda d: D.detail_grey(d, side), decs):.2f} ms; "
          f"ORB ({features.FEATURES} points) {per_photo(features.extract, greys):.2f} ms")


if __name__ == "__main__":
    main()
