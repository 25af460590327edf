"""Resized copies among documents of one template: what each signal says of them, against the template's
other documents.

Receipts printed from three shop templates (``testing.receipt``: the same header and rules, other items
and totals) are split 27/9 per template; four copies of train receipts are planted in test: re-saved as a
JPEG, resized to 70 % and to 50 % as PNGs, and resized to 85 %, made grey and re-saved. The check runs
with the default search and ``aligned`` at error; then every copy and every cross-split pair of one
template is scored at 96 px by ``aligned``'s fine verdict (``hires_levels.scores``: the correlation of
the finest detail after alignment), the evidence a promotion of held matches would rest on.

    python benchmarks/document_copies.py [--workdir DIR]

Nothing is tuned on this: it says whether a signal separates a resized copy from another receipt of
its template, and it is the figure ``docs/detectors.md`` gives for the cost of the look-alike level.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_leakcheck import check  # noqa: E402
from pytest_leakcheck.detectors.aligned import hashed, hires_levels  # noqa: E402
from pytest_leakcheck.store.db import open_store  # noqa: E402
from pytest_leakcheck.testing import receipt, resized, save  # noqa: E402

POLICY = """\
version: 1
splits:
  train: [train/**]
  test: [test/**]
augmentations: [hflip, rot90]
detectors:
  aligned: {severity: error}
"""

#: Planted copy in test -> its train original.
COPIES = {"test/copy.jpg": "train/r0_03.jpg", "test/smaller70.png": "train/r1_05.jpg",
          "test/half50.png": "train/r2_04.jpg", "test/grey85.jpg": "train/r2_06.jpg"}


def build(root: Path) -> None:
    for t in range(3):
        for k in range(12):
            save(receipt(t, 100 * t + k), root / f"{'train' if k < 9 else 'test'}/r{t}_{k:02d}.jpg", quality=90)
    save(receipt(0, 3), root / "test/copy.jpg", quality=80)
    save(resized(receipt(1, 105), 0.7), root / "test/smaller70.png")
    save(resized(receipt(2, 204), 0.5), root / "test/half50.png")
    save(resized(receipt(2, 206), 0.85).convert("L").convert("RGB"), root / "test/grey85.jpg", quality=75)
    (root / "leakcheck.yaml").write_text(POLICY)


def severities(report: Any) -> dict[str, str]:
    """Each planted copy's verdict: the severity of the finding that links it to its original, or 'missed'."""
    out = {}
    for copy, original in COPIES.items():
        found = [f.severity for f in report.findings if {copy, original} <= {m.path for m in f.members}]
        out[copy] = "error" if "error" in found else (found[0] if found else "missed")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args(argv)
    root = args.workdir or Path(tempfile.mkdtemp(prefix="leakcheck-documents-"))
    build(root)
    caught: dict[str, Any] = {}
    refine = hashed.refine

    def keep_run(run: Any, settings: Any, matches: Any) -> Any:
        caught["run"] = run
        return refine(run, settings, matches)

    hashed.refine = keep_run  # the run, to score pairs the check did not judge at 96 px
    report = check(root / "leakcheck.yaml")
    run = caught["run"]
    row = {p: n for n, p in enumerate(run.paths)}
    with open_store(next(root.rglob("*.sqlite"))) as run.store:
        def fine(a: str, b: str) -> float:
            one = np.array([row[a]]), np.array([row[b]]), np.array([False])
            return float(hires_levels.scores(run, *one)[0])

        verdicts = severities(report)
        for copy, original in COPIES.items():
            print(f"{copy:20s} fine {fine(copy, original):.3f}  finding: {verdicts[copy]}")
        template = np.array([fine(f"test/r{t}_{a:02d}.jpg", f"train/r{t}_{b:02d}.jpg")
                             for t in range(3) for a in range(9, 12) for b in range(9)])
    stats = report.stats.get("aligned", {})
    print(f"other receipts of one template, {len(template)} cross-split pairs: fine min {np.nanmin(template):.3f}, "
          f"median {np.nanmedian(template):.3f}, 95th pct {np.nanpercentile(template, 95):.3f}, "
          f"max {np.nanmax(template):.3f}")
    print(f"levels: fine {stats.get('fine_threshold')}, 32 px error {stats.get('error_threshold')} "
          f"(look-alike neighbours {stats.get('neighbour_level')}, impostors' hash level "
          f"{stats.get('hash_error_threshold')})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
