"""Why chosen pairs of a field set get no finding: each pair's matches and its verdicts, beside look-alikes'.

Run by hand on a checked copy (its ``leakcheck.yaml`` and store, as ``benchmarks/field.py`` leaves them):
``python benchmarks/pair_verdicts.py --data DIR --pairs PAIRS.txt [--random 400 --under cataract/]``.
``PAIRS.txt`` holds one pair a line (two paths relative to the root). The check runs once (warm from
the store), keeping its run and matches, and prints for each pair every match between the two files,
the levels (``aligned``'s warning and error, the hash matches' ones, the fine level), and in its best
view the 32 px ``aligned`` score and the 96 px fine score (``hires_levels.scores``). ``--random N``
then scores N random pairs of two sources (``field_truth.source_of``, and other leading numbers) under
``--under`` the same way and prints the highest: the look-alikes a level must stay above.

Stop 60 (docs/field.md, ``eyes``): the mirrored, turned and recoloured copies ``_157``, ``_280``, ``_311``
and ``_349`` scored 0.934-0.980 at 32 px and 0.56-0.69 at 96 px; of 400 random cataract pairs of two
sources the highest reached 0.964 at 32 px and 0.875 at 96 px.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import field_truth  # noqa: E402

from pytest_leakcheck.orientation import ORIENTATIONS  # noqa: E402


def best_view(run: Any, data: Any, i: int, j: int) -> tuple[float, str, float]:
    """The pair's best 32 px ``aligned`` score over the 8 views, that view, and its fine score there."""
    from pytest_leakcheck.detectors.aligned import hires_levels, pairs

    scored = []
    for o in ORIENTATIONS:
        flip, turned = (True, "identity") if o == "hflip" else (False, o)
        s = pairs.pair_scores(data, np.array([i]), np.array([j]), np.array([flip]), always=1, turned=[turned])[0]
        scored.append((float(s), o, flip, turned))
    s, o, flip, turned = max(scored)
    fine = hires_levels.scores(run, np.array([i]), np.array([j]), np.array([flip]), [turned])[0]
    return s, o, float(fine)


def analyse(run: Any, matches: list[Any], args: argparse.Namespace) -> None:
    """Print the pairs' matches and verdicts, then the random look-alikes' (the store still open)."""
    from pytest_leakcheck.detectors.aligned import pairs

    data = pairs.prepare(run.sigs, True, None)
    row = {p: n for n, p in enumerate(run.paths)}
    cal = run.stats.get("aligned", {})
    print({k: cal.get(k) for k in ("threshold", "error_threshold", "hash_threshold", "hash_error_threshold",
                                   "fine_threshold")})
    for line in args.pairs.read_text().splitlines():
        if not line.strip():
            continue
        # A tab separates the two paths when there is one: names may hold spaces (BUSI's `benign (1).png`).
        a, b = line.split("\t") if "\t" in line else line.split()
        i, j = row[a], row[b]
        found = [(m.detector, m.value, m.orientation, m.weak) for m in matches if {m.i, m.j} == {i, j}]
        s, o, fine = best_view(run, data, i, j)
        print(f"{a} ~ {b}: 32 px {s:.3f} ({o}), fine {fine:.3f}; matches {found}")
    paths = [p for p in run.paths if p.startswith(args.under)]
    rng, seen = random.Random(args.seed), []
    while len(seen) < args.random and len(paths) > 1:
        a, b = rng.sample(paths, 2)
        lead = [Path(p).name.split("_")[0] for p in (a, b)]
        if field_truth.source_of(a) == field_truth.source_of(b) or lead[0] == lead[1]:
            continue
        seen.append((*best_view(run, data, row[a], row[b]), a, b))
    for s, o, fine, a, b in sorted(seen, reverse=True)[:args.show]:
        print(f"random {a} ~ {b}: 32 px {s:.3f} ({o}), fine {fine:.3f}")
    if seen:
        print(f"random pairs: 32 px max {max(x[0] for x in seen):.3f}, fine max {np.nanmax([x[2] for x in seen]):.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True, help="a checked copy holding leakcheck.yaml")
    ap.add_argument("--pairs", type=Path, required=True, help="one pair of relative paths a line, separated by a tab (or blanks when the names have none)")
    ap.add_argument("--random", type=int, default=0, help="random pairs of two sources to score")
    ap.add_argument("--under", default="", help="draw the random pairs from paths starting so")
    ap.add_argument("--show", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    from pytest_leakcheck import check
    from pytest_leakcheck.pipeline import matches as stage
    from pytest_leakcheck.policy.load import load

    seen: dict[str, Any] = {}
    new_run, search = stage.new_run, stage.search

    def keep_run(*a: Any, **k: Any) -> Any:
        seen["run"] = new_run(*a, **k)
        return seen["run"]

    def analysed(*a: Any, **k: Any) -> Any:
        found, stats = search(*a, **k)
        analyse(seen["run"], list(found), args)
        return found, stats

    stage.new_run, stage.search = keep_run, analysed
    check(policy=load(args.data / "leakcheck.yaml"), jobs=args.jobs)


if __name__ == "__main__":
    main()
