"""GitHub workflow commands (``::error file=...::``) for the top findings.

GitHub shows at most 10 annotations of each type per step and drops the
rest silently, so we pick which ten: new findings first, then the order of
the report (errors, strongest first).
"""

from __future__ import annotations

from ..files.escape import command_data, command_property
from ..report.model import Finding, Report
from ._common import headline, link_text

#: File names link into the repository (each annotation sits on its file; render.links).
LINKS = True

#: GitHub's limit of annotations per type (error, warning) per step.
MAX_PER_TYPE = 10
_LEVEL = {"error": "error", "warning": "warning"}


#: The medium's rules live in escape.py; these names stay for callers of this module.
escape_data = command_data
escape_property = command_property


def anchor(f: Finding) -> str:
    """The member an annotation sits on.

    Members are listed in split order, training first, so the last is
    usually the evaluation copy: the one to move or delete.
    """
    return f.members[-1].path if f.members else ""



def render(report: Report, *, prefix: str = "", **_: object) -> str:
    """One workflow command per line; ``prefix`` turns root-relative paths repo-relative."""
    lines = []
    used: dict[str, int] = {}
    for f in sorted(report.findings, key=lambda f: f.status != "new"):
        level = _LEVEL.get(f.severity)
        if level is None or used.get(level, 0) >= MAX_PER_TYPE:
            continue
        used[level] = used.get(level, 0) + 1
        title = f"leakcheck {f.kind}" + (" (already on base)" if f.status == "existing" else "")
        # escape.command_*: display() first (no control character can travel in a
        # workflow command), then GitHub's own % escapes.
        props = f"file={command_property(prefix + anchor(f))},title={command_property(title)}"
        linked = next((link_text(m) for m in f.members if m.path == anchor(f) and m.link), "")
        message = headline(f) + (f"; {anchor(f)} {linked}" if linked else "") + f" [{f.id}]"
        lines.append(f"::{level} {props}::{command_data(message)}")
    return "".join(line + "\n" for line in lines)
