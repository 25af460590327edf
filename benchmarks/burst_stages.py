"""Where the pixels lose bursts split across train and test (issue 37, part 4): a diagnosis, no tuning.

Run by hand on a copy of a field dataset with ``leakcheck init``'s policy in it (never on
``/work/field-data`` itself: the check writes its store beside the policy)::

    python benchmarks/burst_stages.py --policy DIR/eggs/leakcheck.yaml [--jobs 2] [--exhaustive]

It checks the dataset cold with the policy's group rules left out (what the pixels alone
flag, as ``field.py``'s "no group rule" column), spying on same-scene's search, and takes the
bursts from ``field_truth.py`` (capture times in the names within 10 s, in two splits).  Each
cross-split burst pair is put at the last stage it reached:

- ``no keypoints``: same-scene did not search one of the two images;
- ``not retrieved, would verify``: no candidate, yet verified at the warning level when handed over
  (a retrieval loss);
- ``not retrieved, no evidence`` / ``retrieved, under the level``: too few inliers either way;
- ``verified, folded in a note``: a same-scene match at the level whose files sit in a
  ``shared-scene`` note (a dataset-wide web, ``pipeline/clusters.py``);
- ``verified, reported apart``: a match, but the two files in no finding together;
- ``linked``: the two files share a pixel finding (any level).

Each held-out burst file (not ``train``) counts at the furthest stage of its pairs, so the
file counts add up to ``field.py``'s burst recall (pixels, any level).  ``--exhaustive``
verifies every cross-split pair at the warning level (a few minutes for 700 photos) and counts
the pairs at each inlier level by how far apart their capture times are: what a search with
perfect retrieval, or a lower level, would add, bursts against shots hours apart (another
subject on the same stand, by eye on ``eggs``).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import field  # noqa: E402  (file_splits, recall, PIXEL_KINDS)
import field_truth  # noqa: E402

STAGES = ("no keypoints", "not retrieved, no evidence", "retrieved, under the level",
          "not retrieved, would verify", "verified, reported apart", "verified, folded in a note", "linked")
GAPS = ((10, "<=10 s"), (600, "<=10 min"), (3600, "<=1 h"), (float("inf"), ">1 h"))


def spied_check(policy: Path, jobs: int, out: Path) -> tuple[dict, dict]:
    """The report of a cold check without group rules, and what same-scene's search saw."""
    from pytest_leakcheck.cli import main
    from pytest_leakcheck.detectors.same_scene import find
    from pytest_leakcheck.pipeline import clusters

    raw = yaml.safe_load(policy.read_text())
    raw.pop("groups", None)
    raw.pop("cache", None)
    bare = policy.parent / "leakcheck-burst-stages.yaml"  # beside it: its globs are relative to its folder
    bare.write_text(yaml.safe_dump(raw, sort_keys=False))
    seen: dict[str, Any] = {}
    real = find._finish

    def spy(run: Any, settings: Any, name: str, search: Any, verified: list) -> list:
        seen.update(paths=list(run.paths), split_of=list(run.split_of), feats=search.feats, cal=search.cal,
                    counts={(min(i, j), max(i, j)): c for (i, j), (c, _) in zip(search.pairs, verified)})
        return real(run, settings, name, search, verified)

    grouping = clusters.group

    def scenes(matches: Any, judge: Any, images: int) -> Any:
        # The report lists a few of a note's files; the grouping holds them all.
        out = grouping(matches, judge, images)
        seen["noted"] = {r for scene in out.scenes for r in scene.rows}
        return out

    find._finish, clusters.group = spy, scenes
    try:
        main(["check", "--policy", str(bare), "--format", "json", "-o", str(out), "-j", str(jobs), "-q", "--no-cache"])
    finally:
        find._finish, clusters.group = real, grouping
        bare.unlink(missing_ok=True)
    return json.loads(out.read_text()), seen


def together(report: dict) -> set[frozenset[str]]:
    """File pairs sharing a pixel finding."""
    linked: set[frozenset[str]] = set()
    for finding in report["findings"]:
        if finding["kind"] in field.PIXEL_KINDS:
            paths = sorted(m["path"] for m in finding["members"])
            linked.update(frozenset((a, b)) for k, a in enumerate(paths) for b in paths[k + 1:])
    return linked


def inliers(seen: dict, i: int, j: int) -> int:
    """The pair's verdict as same-scene would give it at its warning level (its gate included)."""
    from pytest_leakcheck.detectors.same_scene import features

    return features.verify(seen["feats"], i, j, at_least=seen["cal"]["threshold"])[0]


def stage(seen: dict, i: int, j: int, linked: bool, noted: bool) -> str:
    if linked:
        return "linked"
    f, level = seen["feats"], seen["cal"]["threshold"]
    if f.local[i] < 0 or f.local[j] < 0:
        return "no keypoints"
    count = seen["counts"].get((min(i, j), max(i, j)))
    if count is None:
        return "not retrieved, would verify" if inliers(seen, i, j) >= level else "not retrieved, no evidence"
    if count < level:
        return "retrieved, under the level"
    return "verified, folded in a note" if noted else "verified, reported apart"


def stages(report: dict, seen: dict, truth: field_truth.Truth) -> tuple[collections.Counter, collections.Counter]:
    """Cross-split burst pairs by stage, and held-out burst files by the furthest stage of their pairs."""
    linked = together(report)
    noted = {seen["paths"][r] for r in seen.get("noted", ())}
    row = {p: k for k, p in enumerate(seen["paths"])}
    split = dict(zip(seen["paths"], seen["split_of"]))
    pairs: collections.Counter = collections.Counter()
    best: dict[str, int] = {}
    for a, partners in truth.bursts.items():
        for b in partners:
            if a >= b:
                continue
            s = stage(seen, row[a], row[b], frozenset((a, b)) in linked, a in noted and b in noted)
            pairs[s] += 1
            for p in (a, b):
                if split[p] != "train":
                    best[p] = max(best.get(p, 0), STAGES.index(s))
    return pairs, collections.Counter(STAGES[k] for k in best.values())


def gap_band(a: str, b: str) -> str:
    ta, tb = field_truth.captured(a), field_truth.captured(b)
    if ta is None or tb is None:
        return "no time"
    seconds = abs((ta - tb).total_seconds())
    return next(name for limit, name in GAPS if seconds <= limit)


def exhaustive(seen: dict, truth: field_truth.Truth, levels: tuple[int, ...]) -> None:
    """Every cross-split pair verified: pairs at each level by capture gap, and the burst files they reach."""
    f, paths, split = seen["feats"], seen["paths"], seen["split_of"]
    rows = [r for r in range(len(paths)) if f.local[r] >= 0]
    found = []
    for k, i in enumerate(rows):
        for j in rows[k + 1:]:
            if split[i] != split[j] and (c := inliers(seen, i, j)) >= min(levels):
                found.append((c, paths[i], paths[j]))
    where = dict(zip(paths, split))
    held = {p for p, ps in truth.bursts.items() if ps and where[p] != "train"}
    for level in levels:
        at = [(a, b) for c, a, b in found if c >= level]
        reached = {p for a, b in at for p, q in ((a, b), (b, a)) if p in held and q in truth.bursts[p]}
        bands = collections.Counter(gap_band(a, b) for a, b in at)
        print(f"  at {level} inliers: {len(at)} cross-split pairs {dict(sorted(bands.items()))}; "
              f"held-out burst files with a burst partner among them: {len(reached)}/{len(held)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--policy", type=Path, required=True, help="leakcheck init's policy, in a copy of the data")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--exhaustive", action="store_true", help="verify every cross-split pair (small sets)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        report, seen = spied_check(args.policy.resolve(), args.jobs, Path(tmp) / "report.json")
    splits = dict(zip(seen["paths"], seen["split_of"]))
    truth = field_truth.build(splits, None, True)
    pairs, files = stages(report, seen, truth)
    print(f"{args.policy.parent.name}: same-scene levels {seen['cal']['threshold']}/{seen['cal']['error_threshold']}; "
          f"burst recall (pixels, any level): {field.recall(report, truth.bursts, splits)}")
    print("  cross-split burst pairs by stage:", {s: pairs[s] for s in STAGES if pairs[s]})
    print("  held-out burst files by the furthest stage of their pairs:", {s: files[s] for s in STAGES if files[s]})
    if args.exhaustive:
        level = int(seen["cal"]["threshold"])
        exhaustive(seen, truth, (level, level + 3, level + 8))


if __name__ == "__main__":
    main()
