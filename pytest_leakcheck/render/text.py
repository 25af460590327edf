"""Plain text for people: each finding with its files and evidence, then a summary line."""

from __future__ import annotations

from ..model import Report
from ..names import log_lines
from ._common import finding_lines

EXTENSION = "txt"
#: Text reports list this many findings in full by default; the rest are counted.
DEFAULT_MAX_FINDINGS = 50


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
    cal = stats.get("aligned")
    if cal:
        line += (f"; aligned threshold {cal['threshold']:.3f} "
                 f"({cal['false_alarms_per_10k']:g} false alarms per 10k measured on {cal['calibrated_on']} images)")
    judged = [f"{int(stats[k])} {k}" for k in ("known", "distinct") if stats.get(k)]
    if judged:
        line += "; baseline: " + ", ".join(judged)
    out.append(line)
    if report.exit_code:
        out.append("Fix: keep each cluster and each group in one split (move or delete the copies, "
                   "or write a repaired manifest with `leakcheck split`), then run `leakcheck check` again.")
    return log_lines(out)
