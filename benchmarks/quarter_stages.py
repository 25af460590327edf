"""What ``turned-copy`` makes of a dataset's same-scene pairs turned a quarter and zoomed, stage by stage.

Run by hand after a check whose JSON report kept same-scene's points (``benchmarks/field.py`` writes
``<out>/<set>/report.json``)::

    PYTHONPATH=<worktree> python benchmarks/quarter_stages.py DATA_ROOT REPORT.json

For each pair of the report's ``same_scene`` points whose similarity is a quarter turn zoomed
(``turned_copy.Turn.quarter``), the detail correlation (``turned_copy.detail``) at each stage of the
verdict: ``keypoints`` (the keypoints' map, the edge in: what the verdict of the other geometries
does), ``shrunk`` (the larger view shrunk onto the smaller, the edge in), ``shrunk, edge out``, and
``refined`` (the verdict itself, ``turned_copy._quarter_detail``).  It prints, per stage, the pairs at
LEVEL or more, in the BAND under it (where ``impostor_level`` counts this dataset's impostors), in
the band under that, and the median.

Issue 37 (stop 57), ``tracks`` (a renamed Roboflow export): of 90 such pairs, 14 / 8 / 59 / 81 at
LEVEL or more, 18 / 11 / 13 / 1 in the band under it, medians 0.79 / 0.475 / 0.88 / 0.955.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def main() -> None:
    from pytest_leakcheck.detectors import turned_copy as tc
    from pytest_leakcheck.signals.decode import decode, detail_grey

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("report", type=Path)
    args = parser.parse_args()
    stats = json.loads(args.report.read_text())["stats"].get("same_scene", {})

    def grey(path: str) -> np.ndarray:
        return detail_grey(decode((args.root / path).read_bytes(), 10**9), tc.SIDE)

    stages: dict[str, list[float]] = {"keypoints": [], "shrunk": [], "shrunk, edge out": [], "refined": []}
    for pair in stats.get("points", []):
        a, b = grey(pair["a"]), grey(pair["b"])
        found = tc.turn(np.asarray(pair["points"], np.float32), (a.shape[1], a.shape[0]), (b.shape[1], b.shape[0]))
        if found is None or not found[0].quarter or found[0].explained < tc.EXPLAINED:
            continue
        sa, sb, sm = tc._shrunk(a, b, found[1])
        values = (tc.detail(a, b, found[1]), tc.detail(sa, sb, sm), tc.detail(sa, sb, sm, edge=tc.EDGE),
                  tc._quarter_detail(a, b, found[1]))
        for name, value in zip(stages, values):
            if value is not None:
                stages[name].append(value)
    low = tc.LEVEL - tc.BAND
    for name, v in stages.items():
        x = np.asarray(v)
        print(f"{name:17} pairs {len(x):4}  >= {tc.LEVEL}: {int((x >= tc.LEVEL).sum()):4}  "
              f"band: {int(((x >= low) & (x < tc.LEVEL)).sum()):3}  under it: {int(((x >= low - tc.BAND) & (x < low)).sum()):3}"
              f"  median {float(np.median(x)) if len(x) else float('nan'):.3f}")


if __name__ == "__main__":
    main()
