"""Plain text for people: each finding with its files and evidence, then a summary line."""

from __future__ import annotations

from collections import Counter

from ..files import lfs, members
from ..files.names import display, log_lines
from ..report.model import KINDS, Finding, Report
from ._common import (animated_lines, calibration_text, checked_text, finding_lines, headline,
                      inseparable_lines, recording_lines, unsearched_lines)

EXTENSION = "txt"
#: Text reports list this many findings in full by default; the rest are counted.
DEFAULT_MAX_FINDINGS = 50
_COPIES = ("keep each cluster of copies in one split: move or delete the copies, or let `leakcheck split` "
           "plan it (the moves for split folders, a repaired manifest with --keep)")
#: What to do about each kind of failing finding: a missing file is not fixed like a leak.
FIXES = {
    "identical-file": _COPIES,
    "identical-pixels": _COPIES,
    "near-duplicate": _COPIES + "; a false alarm: `leakcheck judge ID distinct --reason WHY`",
    "same-scene": "another shot of the same scene: a leak for classification (move it into its partner's "
                  "split), the test itself for retrieval (`same_scene: {severity: off}`)",
    "label-conflict": "one picture under two labels: keep the copy whose label is right and delete the other "
                      "(`pairs.label_conflict` sets how it is reported)",
    "group-split": "keep every file of a group in one split (`leakcheck split` moves as few as possible: "
                   "files between split folders, or rows with --keep MANIFEST)",
    "split-share": "move files between splits until each share is inside its `split_share` bounds",
    "unreadable-image": ("replace or delete the damaged file (convert one of a format it cannot read), "
                         "or skip it with `ignore:` in the policy"),
    "ambiguous-file": "make the file match one split only: narrow the globs, or list it once in the manifest",
    "missing-file": "restore the file, or delete its row from the manifest or split file",
    "unassigned-file": "put the file in a split (a glob or a manifest row), or skip it with `ignore:`",
    "outside-root": "replace the link with the files themselves, or move its target under root",
    "not-examined": "make the folder readable (or shorten the path) so its images are checked, "
                    "or skip it with `ignore:`; list a split left out in a pair of `pairs.compare`; "
                    "add split folders and lists the policy leaves out to `splits:`; list an image format "
                    "Pillow reads under `files.extensions` (convert one it cannot read, such as an SVG)",
    "ungrouped-file": "extend the group rules to cover the file, or set `ungrouped: own-group`",
}


#: What to do, short enough for the summary line (the Fix lines below it say it in full).
SHORT_FIXES = {
    "identical-file": "keep each cluster of copies in one split (`leakcheck split` plans it)",
    "identical-pixels": "keep each cluster of copies in one split (`leakcheck split` plans it)",
    "near-duplicate": "keep each cluster of copies in one split (`leakcheck split` plans it)",
    "same-scene": "keep each scene's shots in one split (`leakcheck split` plans it)",
    "label-conflict": "keep one copy, with the right label",
    "group-split": "keep each group in one split (`leakcheck split` plans it)",
    "split-share": "move files until each split's share is in bounds",
}
#: Said instead when every failing finding is inside shards: `leakcheck split` moves files, not rows.
_SHARD_COPIES = ("keep each cluster of copies in one split: drop or move the rows it names (`shard#row=N`, "
                 "counted from 0, or `shard#member`) when the shards are written again")
_SHARD_FIXES = {"identical-file": _SHARD_COPIES, "identical-pixels": _SHARD_COPIES,
                "near-duplicate": _SHARD_COPIES + "; a false alarm: `leakcheck judge ID distinct --reason WHY`",
                "group-split": "keep every row of a group in one split when the shards are written again",
                "unreadable-image": "write the rows again with their image bytes (each finding says why it has "
                                    "none: damaged, not an image, stored by path only), or drop them"}
_SPLIT_HINT = " (`leakcheck split` plans it)"
#: Kinds whose fix `leakcheck split` plans.
_SPLIT_PLANS = ("identical-file", "identical-pixels", "near-duplicate", "same-scene", "group-split")
#: The summary line stays under this many characters, whatever the report holds.
SUMMARY_WIDTH = 199


def render(report: Report, *, max_findings: int = DEFAULT_MAX_FINDINGS, verbose: bool = False,
           **_: object) -> str:
    """Each finding, then the summary line; every error is shown, past ``max_findings`` one line each.

    ``verbose`` adds a line of what the check measured (decodes, the detectors that ran, each
    detector's calibrated levels) before the summary: the JSON report's ``stats`` carry it too.
    """
    # Every element of `out` is one line; log_lines escapes each at the output
    # boundary, so nothing a file name or the policy holds can break a line.
    out, listed = _pointer_block(report.findings, max_findings)
    shown = listed if max_findings <= 0 else listed[:max_findings]
    for f in shown:
        out.extend(finding_lines(f))
        out.append("")
    out += _rest(listed[len(shown):])
    for w in report.warnings:
        out.append(f"warning: {w}")
    out += inseparable_lines(report.stats)
    out += recording_lines(report.findings)
    out += unsearched_lines(report.stats)
    out += animated_lines(report.stats)
    if verbose and (details := details_line(report.stats)):
        out.append(details)
    out.append(summary_line(report))
    failing = {f.kind for f in report.failing}
    table = {**FIXES, **_SHARD_FIXES} if in_shards(report) else dict(FIXES)
    table["unreadable-image"] = _unreadable_fix(report, table["unreadable-image"])
    fixes: dict[str, list[str]] = {}  # kinds that share a fix share its line
    for kind in (k for k in FIXES if k in failing):
        fixes.setdefault(table[kind], []).append(kind)
    for fix, kinds in fixes.items():
        out.append(f"Fix ({', '.join(kinds)}): {fix}.")
    if failing:
        out.append("Then run `leakcheck check` again.")
    return log_lines(out)


#: Past this many Git LFS pointers, the text report names a few and counts the rest: one cause, one fix.
POINTERS_SHOWN = 5


def _pointer_block(findings: tuple[Finding, ...], max_findings: int) -> tuple[list[str], tuple[Finding, ...]]:
    """The Git LFS pointers as one block when there are many, and the findings left to list.

    A clone without git-lfs makes every image a pointer: the held-out probe of issue 37 (UC Merced,
    2,100 pointers) printed 2,256 lines that all said the same thing. ``--max-findings 0`` and
    ``--format json`` still give one finding per file.
    """
    pointers = [f for f in findings if f.kind == "unreadable-image" and lfs.FIX in f.message]
    if max_findings <= 0 or len(pointers) <= POINTERS_SHOWN:
        return [], findings
    names = [f"    {display(m.path)}  ({m.split})" for f in pointers[:POINTERS_SHOWN] for m in f.members]
    out = [f"ERROR unreadable-image  {len(pointers)} files are Git LFS pointers, not the images themselves",
           *names, f"    ... and {len(pointers) - POINTERS_SHOWN} more (--max-findings 0 or --format json lists "
           "every one)", f"    {lfs.FIX}", ""]
    shown = {id(f) for f in pointers}  # a set: testing the list is quadratic in the pointers
    return out, tuple(f for f in findings if id(f) not in shown)


def _lfs_pointers(report: Report) -> tuple[int, int]:
    """How many failing unreadable-image findings are Git LFS pointers, of how many."""
    unreadable = [f for f in report.failing if f.kind == "unreadable-image"]
    return sum(lfs.FIX in f.message for f in unreadable), len(unreadable)


def _unreadable_fix(report: Report, fix: str) -> str:
    """A clone without git-lfs leaves pointers, not damaged files: `git lfs pull` is the fix that works
    (held-out probe of issue 37: 2,100 pointers were told to "replace or delete the damaged file")."""
    pointers, unreadable = _lfs_pointers(report)
    if not pointers:
        return fix
    if pointers == unreadable:
        return f"the images are Git LFS pointers: {lfs.FIX}"
    return f"{fix}; for the Git LFS pointers, {lfs.FIX}"


def _rest(rest: tuple[Finding, ...]) -> list[str]:
    """Findings past ``max_findings``: every error still named (one line each), the rest counted."""
    out: list[str] = []
    errors = [f for f in rest if f.severity == "error"]
    if errors:
        out.append(f"{len(errors)} more error{'s' * (len(errors) != 1)}, one line each "
                   "(--max-findings 0 shows every finding in full):")
        out += [f"ERROR {f.kind}  [{f.id}]  {headline(f)}" for f in errors]
        out.append("")
    if len(rest) > len(errors):
        out.append(f"... and {len(rest) - len(errors)} more warnings "
                   "(--max-findings 0 shows all, --format json gives every detail)")
        out.append("")
    return out


def summary_line(report: Report) -> str:
    """``leakcheck: 3 errors, 1 warning in 906 images, 4.1s; failed: near-duplicate 2; fix: ...``.

    What failed and what to do, under :data:`SUMMARY_WIDTH` characters: the calibration and
    what was searched are in ``--verbose`` and the JSON report's ``stats``.
    """
    counts = report.counts()
    errors = counts["severity"].get("error", 0)
    warns = counts["severity"].get("warning", 0)
    stats = report.stats
    line = f"leakcheck: {errors} error{'s' * (errors != 1)}, {warns} warning{'s' * (warns != 1)}"
    if stats:
        line += f" in {int(stats.get('files', 0))} images, {float(stats.get('seconds', 0)):.1f}s"
    line += blind_note(stats)
    failing = Counter(f.kind for f in report.failing)
    if not failing:
        known = len(report.errors)
        return line + (f"; passed: {known} known (baseline)" if known else "")
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(failing.items(), key=lambda kv: KINDS.index(kv[0])
                                                     if kv[0] in KINDS else 99))
    pointers, unreadable = _lfs_pointers(report)
    short = {**SHORT_FIXES, "unreadable-image": "`git lfs pull` (the images are Git LFS pointers)"} \
        if pointers and pointers == unreadable else SHORT_FIXES
    fixes = list(dict.fromkeys(short.get(k, "") for k in failing))
    if len(fixes) == 1 and fixes[0]:
        todo = fixes[0]
    elif all(k in _SPLIT_PLANS for k in failing):
        todo = "keep each cluster of copies and each group in one split (`leakcheck split` plans it)"
    else:
        todo = "see the Fix lines below"
    if in_shards(report):
        todo = todo.replace(_SPLIT_HINT, " (in the shards)")
    for failed in (f"; failed: {kinds}", f"; failed: {len(failing)} kinds", ""):
        full = f"{line}{failed}; fix: {todo}"
        if len(full) <= SUMMARY_WIDTH:
            return full
    return f"{line}; fix: see below"[:SUMMARY_WIDTH]


def in_shards(report: Report) -> bool:
    """Whether every failing finding names rows or members of shards, which `leakcheck split` cannot move."""
    return bool(report.failing) and all(members.is_member(m.path) and not members.is_frame(m.path)
                                        for f in report.failing for m in f.members)


def blind_note(stats: dict) -> str:
    """``; only split test holds images, 809 in no split: little is compared`` when so (pipeline/unseen.py
    makes the finding): a green line over one split must not read as a clean dataset."""
    splits = stats.get("splits")
    if not isinstance(splits, dict) or not splits:
        return ""
    holding = [s for s, n in splits.items() if n]
    unassigned = int(stats.get("unassigned", 0) or 0)
    parts = []
    if len(holding) < 2:
        parts.append(f"only split {holding[0]} holds images" if holding else "no split holds images")
    if unassigned * 2 > unassigned + sum(int(n) for n in splits.values()):
        parts.append(f"{unassigned} in no split")
    if not parts:
        return ""
    return "; " + ", ".join(parts) + (": nothing compared across splits" if len(holding) < 2 else
                                      ": most images compared with nothing")


def details_line(stats: dict) -> str:
    """What the check measured and searched, each detector's calibration: the ``--verbose`` line."""
    parts = []
    if stats:
        parts.append(f"decoded {int(stats.get('decoded', 0))}, reused {int(stats.get('reused', 0))}")
    if stats.get("checked"):
        parts.append(f"checked: {checked_text(stats['checked'])}")
    if stats.get("not_searched"):
        parts.append(f"not searched: copies after {'/'.join(stats['not_searched'])}")
    calibration = calibration_text(stats)  # what each detector measured on this data (aligned: its levels)
    if calibration:
        parts.append(calibration[2:])
    judged = [f"{int(stats[k])} {k}" for k in ("known", "distinct") if stats.get(k)]
    if judged:
        parts.append("baseline: " + ", ".join(judged))
    return "leakcheck: details: " + "; ".join(parts) if parts else ""
