"""Versions of one Roboflow source across splits: copy recall by pixels, and why each missed one is missed.

Run by hand on a Roboflow export whose policy ``leakcheck init`` wrote (``tumor`` of
``benchmarks/field.py``, on a copy of it: the check writes its store there):
``python benchmarks/roboflow_copies.py DIR [--jobs 2] [--out report.json]``.  A warm store makes it a
minute on ``tumor``'s 12,887 images.

A file's source is its name before ``_<ext>.rf.<hash>`` (``train/Tr-gl_0064_jpg.rf.ab12.jpg``); a val or
test file whose source has a version in another split is a known copy.  It prints copy recall by pixels
(the file in one pixel finding with such a version, at error and at any level), the cross-split
error-level links joining one source or two source names, and for each copy missed at error the cause,
read from the matches between it and its versions before ``aligned``'s ``refine`` and after every
detector's ``refine``:

- ``linked at error, apart``: an error-level link, but the two files in different findings (the
  25-file cap of ``pipeline/clusters.py``);
- ``demoted by aligned``: a pHash or thumbnail match strong before ``aligned``'s verdict, weak or gone
  after it;
- ``weak before refine``: every hash match already weak (``homogeneity``'s part test);
- ``other links only``: only links at warning by policy (same-scene), or none.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path
from typing import Any

PIXELS = {"identical-file", "identical-pixels", "near-duplicate", "same-scene"}


def source(path: str) -> str:
    return path.rsplit("/", 1)[-1].split(".rf.")[0]


def split(path: str) -> str:
    return path.split("/", 1)[0]


def checked(root: Path, jobs: int, out: Path | None) -> tuple[dict, dict[str, Any]]:
    """The JSON report of ``root``'s policy, and the matches before ``aligned``'s refine and after all."""
    from pytest_leakcheck import detectors
    from pytest_leakcheck.cli.main import main
    from pytest_leakcheck.pipeline import matches as stage

    seen: dict[str, Any] = {}
    search, aligned = stage.search, detectors.get("aligned")
    refine = aligned.refine

    def keep_matches(inv: Any, *a: Any, **k: Any) -> Any:
        found, stats = search(inv, *a, **k)
        seen.update(paths=[r.path for r in inv.records], after=list(found))
        return found, stats

    def keep_input(run: Any, settings: Any, found: list) -> list:
        seen["before"] = list(found)
        return refine(run, settings, found)

    stage.search, aligned.refine = keep_matches, keep_input  # type: ignore[method-assign]
    report = out or root / ".leakcheck" / "roboflow_copies.json"
    try:
        main(["check", "--policy", str(root / "leakcheck.yaml"), "-j", str(jobs), "--format", "json",
              "-o", str(report), "-q"])
    finally:
        stage.search, aligned.refine = search, refine  # type: ignore[method-assign]
    return json.loads(report.read_text()), seen


def recall(report: dict, paths: list[str]) -> tuple[list[str], dict[str, set[str]], collections.Counter]:
    """The known copies, those in one pixel finding with a version by level, and error links by source."""
    versions: dict[str, set[str]] = collections.defaultdict(set)
    for p in paths:
        versions[source(p)].add(p)
    known = [p for p in paths if split(p) != "train" and any(split(q) != split(p) for q in versions[source(p)])]
    found: dict[str, set[str]] = {"error": set(), "any": set()}
    links: collections.Counter = collections.Counter()
    for f in report["findings"]:
        if f["kind"] not in PIXELS:
            continue
        members = {m["path"] for m in f["members"]}
        for p in members:
            if any(q in members for q in versions[source(p)] if split(q) != split(p)):
                found["any"].add(p)
                found["error"].update([p] if f["severity"] == "error" else [])
        for m in f["members"] if f["severity"] == "error" else []:
            link = m.get("link")
            if link and not link.get("weak") and split(m["path"]) != split(link["to"]):
                links["one source" if source(m["path"]) == source(link["to"]) else "two source names"] += 1
    return known, found, links


def cause(path: str, seen: dict[str, Any], versions: set[str]) -> tuple[str, list]:
    """Why ``path`` shares no error finding with any of ``versions`` (see the module)."""
    row = {p: n for n, p in enumerate(seen["paths"])}
    i, others = row[path], {row[q] for q in versions}

    def between(found: list) -> list:
        return [m for m in found if (m.i == i and m.j in others) or (m.j == i and m.i in others)]

    hashes = [m for m in between(seen["before"]) if m.detector in ("phash", "thumbnail")]
    after = between(seen["after"])
    strong_after = {(m.i, m.j, m.detector, m.orientation) for m in after if not m.weak}
    shown = [(m.detector, m.value, m.orientation, "weak" if m.weak else "strong") for m in hashes]
    if any(not m.weak and m.detector != "same-scene" for m in after):
        return "linked at error, apart", shown
    if any(not m.weak and (m.i, m.j, m.detector, m.orientation) not in strong_after for m in hashes):
        return "demoted by aligned", shown
    return ("weak before refine", shown) if hashes else ("other links only", shown)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("root", type=Path, help="a Roboflow export with its leakcheck.yaml")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", type=Path, help="where the JSON report goes (default: in the store folder)")
    args = ap.parse_args(argv)
    report, seen = checked(args.root, args.jobs, args.out)
    known, found, links = recall(report, seen["paths"])
    print(f"copy recall by pixels: {len(found['error'] & set(known))} at error, "
          f"{len(found['any'] & set(known))} at any level, of {len(known)}")
    print(f"cross-split error links: {links['one source']} joining one source, "
          f"{links['two source names']} joining two source names")
    versions: dict[str, set[str]] = collections.defaultdict(set)
    for p in seen["paths"]:
        versions[source(p)].add(p)
    causes: collections.Counter = collections.Counter()
    for p in sorted(set(known) - found["error"]):
        why, shown = cause(p, seen, {q for q in versions[source(p)] if split(q) != split(p)})
        causes[why] += 1
        print(f"  {p}: {why} {shown}")
    print("missed by cause:", dict(causes.most_common()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
