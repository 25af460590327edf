"""Render a :class:`Report` for people (text) and for machines (JSON).

Renderers live in a registry so that new formats (SARIF, Markdown, HTML)
plug in without touching the CLI.  Nothing here prints: each renderer
returns a string and the caller decides where it goes.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from .findings import Finding, Report
from .names import defuse_json, display, hex_bytes, json_text, log_line, log_lines

JSON_SCHEMA_VERSION = 1
#: Text reports list this many findings in full by default; the rest are counted.
DEFAULT_MAX_FINDINGS = 50

Renderer = Callable[..., str]
RENDERERS: dict[str, Renderer] = {}


def renderer(name: str) -> Callable[[Renderer], Renderer]:
    def register(fn: Renderer) -> Renderer:
        RENDERERS[name] = fn
        return fn

    return register


#: Formats whose renderers live in their own modules, imported on first use
#: so that a plain text check does not load them.
PLUGGED = {"sarif": "sarif", "markdown": "markdown", "annotations": "annotations"}


def formats() -> tuple[str, ...]:
    return tuple(dict.fromkeys([*RENDERERS, *PLUGGED]))


def render(report: Report, fmt: str = "text", **options: object) -> str:
    if fmt not in RENDERERS and fmt in PLUGGED:
        importlib.import_module(f".{PLUGGED[fmt]}", __package__)
    return RENDERERS[fmt](report, **options)


def headline(f: Finding, max_members: int = 4) -> str:
    """One line for a finding, for annotations, SARIF messages and summaries."""
    if f.kind not in ("identical-file", "identical-pixels", "near-duplicate"):
        return f"{f.members[0].path}: {f.message or f.kind}" if f.members else f.message
    names = ", ".join(f"{m.path} ({m.split})" for m in f.members[:max_members])
    if len(f.members) > max_members:
        names += f" and {len(f.members) - max_members} more"
    what = {"identical-file": "same bytes", "identical-pixels": "same decoded pixels"}.get(f.kind)
    if what is None:
        parts = _signal_parts(f.pairs[0].signals if f.pairs else f.evidence)
        if f.orientation != "identity":
            parts.append(f"after {f.orientation}")
        what = ", ".join(parts) or "near-duplicate"
    return f"{f.kind} across {f.split_pair}: {names}; {what}"


def _signal_parts(sig: dict) -> list[str]:
    """The cheap signals of a pair, as a reader wants them."""
    parts = []
    if "phash_distance" in sig:
        parts.append(f"phash distance {int(sig['phash_distance'])}")
    if "thumbnail_cosine" in sig:
        parts.append(f"thumbnail cosine {float(sig['thumbnail_cosine']):.3f}")
    return parts


def _describe(f: Finding) -> list[str]:
    lines = []
    paths = [display(m.path) for m in f.members[:10]]  # aligned as shown, escapes included
    width = max(map(len, paths), default=0)
    for m, path in zip(f.members[:10], paths):
        split = f"({m.split})" if m.split else ""
        lines.append(f"    {path.ljust(width)}  {split}")
    if len(f.members) > 10:
        lines.append(f"    ... and {len(f.members) - 10} more files in this cluster")
    if f.kind in ("identical-file", "identical-pixels"):
        what = "same bytes" if f.kind == "identical-file" else "same decoded pixels, different files"
        lines.append(f"    evidence: {what}")
    elif f.kind == "near-duplicate":
        best = f.pairs[0] if f.pairs else None
        parts = []
        if best is not None:
            sig = best.signals
            if best.detector == "aligned":
                parts.append(f"aligned score {best.value:.3f}")
            parts += _signal_parts(sig)
            if best.orientation != "identity":
                parts.append(f"{best.b} = {best.a} after {best.orientation}")
        lines.append("    evidence: " + ", ".join(parts))
    elif f.message:
        lines.append(f"    {f.message}")
    return lines


def finding_lines(f: Finding) -> list[str]:
    """One finding as the text report shows it: a head line, then files and evidence.

    Each line is a :func:`~pytest_leakcheck.names.log_line`: a file name may hold
    a newline, a control character or a workflow command, and none may reach
    a terminal or a CI log as such.
    """
    head = f"{f.severity.upper()} {f.kind}"
    if f.kind in ("identical-file", "identical-pixels", "near-duplicate"):
        head += f"  {f.split_pair}"
    if f.status == "known":
        head += "  (known: in the baseline)"
    elif f.status != "new":
        head += f"  ({f.status})"
    return [log_line(line) for line in (f"{head}  [{f.id}]", *_describe(f))]


@renderer("text")
def render_text(report: Report, *, max_findings: int = DEFAULT_MAX_FINDINGS) -> str:
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


def _path_fields(name: str, path: str) -> dict[str, str]:
    """``{name: path}``, plus ``{name}_bytes`` (hex) when the path is not UTF-8.

    JSON strings must be valid Unicode, so such a path is shown with its
    undecodable bytes as ``\\xNN`` and given exactly in hex beside it.
    """
    raw = hex_bytes(path)
    return {name: json_text(path)} if raw is None else {name: json_text(path), f"{name}_bytes": raw}


def _unicode(value: object) -> object:
    """``value`` with every string valid Unicode (messages may quote a file name)."""
    if isinstance(value, str):
        return json_text(value)
    if isinstance(value, dict):
        return {json_text(k) if isinstance(k, str) else k: _unicode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unicode(v) for v in value]
    return value


def finding_dict(f: Finding) -> dict:
    return {
        "id": f.id,
        "kind": f.kind,
        "severity": f.severity,
        "status": f.status,
        "split_pair": f.split_pair,
        "strength": f.strength,
        "orientation": f.orientation,
        "message": f.message,
        "members": [{**_path_fields("path", m.path), "split": m.split, "digest": m.digest} for m in f.members],
        "evidence": f.evidence,
        "pairs": [
            {**_path_fields("a", p.a), **_path_fields("b", p.b), "detector": p.detector, "value": p.value,
             "orientation": p.orientation, "signals": p.signals}
            for p in f.pairs
        ],
    }


def report_dict(report: Report) -> dict:
    counts = report.counts()
    return {
        "schema": "pytest-leakcheck/report",
        "version": JSON_SCHEMA_VERSION,
        "policy": report.policy_path,
        "exit_code": report.exit_code,
        "summary": {
            "findings": len(report.findings),
            "errors": counts["severity"].get("error", 0),
            "warnings": counts["severity"].get("warning", 0),
            "by_kind": dict(sorted(counts["kind"].items())),
            "by_split_pair": dict(sorted(counts["split_pair"].items())),
        },
        "stats": report.stats,
        "warnings": list(report.warnings),
        "stale": list(report.stale),
        "findings": [finding_dict(f) for f in report.findings],
    }


@renderer("json")
def render_json(report: Report, **_: object) -> str:
    return defuse_json(json.dumps(_unicode(report_dict(report)), indent=2, sort_keys=False)) + "\n"


def write_atomic(path: str | Path, text: str, *, errors: str = "strict") -> None:
    """Write via a temporary file and rename, so a reader never sees half a report.

    The file keeps the mode of the one it replaces (0644 when new): mkstemp's
    0600 would make a baseline or a report unreadable to the rest of a team.
    ``errors="surrogateescape"`` writes file names that are not UTF-8 back as
    their bytes (a manifest); reports stay strict, they are valid Unicode.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o777
    except OSError:
        mode = 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors=errors, newline="\n") as fh:
            fh.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
