"""Plain text for people: each finding with its files and evidence, then a summary line."""

from __future__ import annotations

from ..files.names import log_lines
from ..report.model import Report
from ._common import calibration_text, checked_text, finding_lines

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
    "group-split": "keep every file of a group in one split (`leakcheck split` moves as few as possible: "
                   "files between split folders, or rows with --keep MANIFEST)",
    "split-share": "move files between splits until each share is inside its `split_share` bounds",
    "unreadable-image": "replace or delete the damaged file, or skip it with `ignore:` in the policy",
    "ambiguous-file": "make the file match one split only: narrow the globs, or list it once in the manifest",
    "missing-file": "restore the file, or delete its row from the manifest or split file",
    "unassigned-file": "put the file in a split (a glob or a manifest row), or skip it with `ignore:`",
    "outside-root": "replace the link with the files themselves, or move its target under root",
    "not-examined": "make the folder readable (or shorten the path) so its images are checked, "
                    "or skip it with `ignore:`; list a split left out in a pair of `pairs.compare`",
    "ungrouped-file": "extend the group rules to cover the file, or set `ungrouped: own-group`",
}


def render(report: Report, *, max_findings: int = DEFAULT_MAX_FINDINGS, **_: object) -> str:
    # Every element of `out` is one line; log_lines escapes each at the output
    # boundary, so nothing a file name or the policy holds can break a line.
    out: list[str] = []
    shown = report.findings if max_findings <= 0 else report.findings[:max_findings]
    for f in shown:
        out.extend(finding_lines(f))
        out.append("")
    if len(shown) < len(report.findings):
        out.append(f"... and {len(report.findings) - len(shown)} more findings "
                   "(--max-findings 0 shows all, --format json gives every detail)")
        out.append("")
    for w in report.warnings:
        out.append(f"warning: {w}")
    counts = report.counts()
    errors = counts["severity"].get("error", 0)
    warns = counts["severity"].get("warning", 0)
    stats = report.stats
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(counts["kind"].items()))
    line = f"leakcheck: {errors} error{'s' * (errors != 1)}, {warns} warning{'s' * (warns != 1)}"
    if kinds:
        line += f" ({kinds})"
    if stats:
        line += (f" in {int(stats.get('files', 0))} images; decoded {int(stats.get('decoded', 0))}, "
                 f"reused {int(stats.get('reused', 0))}, {stats.get('seconds', 0):.1f}s")
    if stats.get("checked"):
        line += f"; checked: {checked_text(stats['checked'])}"
    if stats.get("not_searched"):
        line += f"; not searched: copies after {'/'.join(stats['not_searched'])}"
    line += calibration_text(stats)  # what each detector measured on this data (aligned: its levels)
    judged = [f"{int(stats[k])} {k}" for k in ("known", "distinct") if stats.get(k)]
    if judged:
        line += "; baseline: " + ", ".join(judged)
    out.append(line)
    failing = {f.kind for f in report.failing}
    fixes: dict[str, list[str]] = {}  # kinds that share a fix share its line
    for kind in (k for k in FIXES if k in failing):
        fixes.setdefault(FIXES[kind], []).append(kind)
    for fix, kinds in fixes.items():
        out.append(f"Fix ({', '.join(kinds)}): {fix}.")
    if failing:
        out.append("Then run `leakcheck check` again.")
    return log_lines(out)
