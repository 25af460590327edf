"""CPU per photo of each signal of a cold check, against the bare decode, in one run.

Run by hand: ``python benchmarks/decode_shares.py [--n 400] [--policy-extra YAML] [--data DIR]``, on
``speed.py``'s generated 640x480 photos (built once, cached) or on the JPEGs under ``--data``.  One
process, ``time.process_time``, best of ``--repeat`` passes: less swayed by a loaded machine than
wall time.  It prints, in milliseconds per photo:

- the bare-decode limit of ``speed.py``: read, sha256, JPEG draft to 80 x 60;
- the shared decode (``signals.decode.decode``) and every family computed from it, in the order a
  worker computes them, each one's share of the whole and its multiple of the limit;
- ``sign`` itself (all of the above through the worker's own entry point), to show nothing is missed.

``--policy-extra`` appends policy text, e.g. ``"detectors: {same_scene: {severity: off}}"``: the
families of a detector that is off are not computed, and drop out of the table.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from benchdata import generated


def best(fn, items, repeat: int) -> float:
    """Least CPU seconds of ``repeat`` passes of ``fn`` over ``items``."""
    out = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        for item in items:
            fn(item)
        out = min(out, time.process_time() - t)
    return out


def bare(data: bytes) -> None:
    from PIL import Image

    hashlib.sha256(data).digest()
    with Image.open(io.BytesIO(data)) as img:
        img.draft("RGB", (80, 60))
        img.load()


def shares(datas: list[bytes], fams: tuple, repeat: int) -> dict[str, float]:
    """CPU seconds over ``datas`` of the shared decode and of each family (summed over its orientations)."""
    from pytest_leakcheck.signals import decode as D

    wants_colour = any(f.colour for f in fams)
    spent: dict[str, float] = {}
    for _ in range(repeat):
        this: dict[str, float] = defaultdict(float)
        for data in datas:
            t = time.process_time()
            decoded = D.decode(data, 10**9, colour=D.COLOUR if wants_colour else 0)
            decoded.source, decoded.max_pixels = data, 10**9
            decoded.memo[getattr(D, "FAMILIES", "families")] = fams  # what the worker tells the families
            this["(shared decode)"] += time.process_time() - t
            for f in fams:
                t = time.process_time()
                f.compute(decoded, f)
                this[f.name.split(":")[0]] += time.process_time() - t
        spent = {k: min(v, spent.get(k, v)) for k, v in this.items()}
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data", type=Path, help="a folder of JPEGs instead of the generated photos")
    parser.add_argument("--policy-extra", default="", help="policy text appended (detector settings)")
    args = parser.parse_args()
    from pytest_leakcheck import detectors
    from pytest_leakcheck.policy.load import load
    from pytest_leakcheck.signals import decode as D

    root = args.data or generated("speed", 5000, (640, 480))
    files = sorted(p for p in root.rglob("*") if p.suffix.lower() in (".jpg", ".jpeg"))[:args.n]
    datas = [f.read_bytes() for f in files]
    with tempfile.TemporaryDirectory() as tmp:
        policy = Path(tmp) / "leakcheck.yaml"
        policy.write_text("version: 1\nsplits:\n  train: [train/**]\n  test: [test/**]\n" + args.policy_extra + "\n")
        fams = detectors.families(load(policy))
    shares(datas[:20], fams, 1)  # warm imports and caches
    limit = best(bare, datas, args.repeat)
    spent = shares(datas, fams, args.repeat)
    total = sum(spent.values())
    per = 1000 / len(datas)
    print(f"{len(datas)} photos, {len(fams)} families; ms per photo (CPU, best of {args.repeat})")
    print(f"{'bare-decode limit (read, sha256, draft 80x60)':48s} {limit * per:7.3f}")
    for name, s in sorted(spent.items(), key=lambda kv: -kv[1]):
        print(f"  {name:46s} {s * per:7.3f}  {s / total:6.1%}  {s / limit:5.2f} x limit")
    print(f"{'decode and families':48s} {total * per:7.3f}  limit / it: {limit / total:.2f}")
    sign_all = best(lambda f: D.sign(D.SignTask(str(f), 10**9, fams)), files, args.repeat)
    print(f"{'sign (the worker entry point, reads the file)':48s} {sign_all * per:7.3f}  "
          f"limit / it: {limit / sign_all:.2f}")


if __name__ == "__main__":
    main()
