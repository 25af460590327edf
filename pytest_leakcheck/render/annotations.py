"""GitHub workflow commands (``::error file=...::``) for the top findings.

GitHub shows at most 10 annotations of each type per step and drops the
rest silently, so we pick which ten: new findings first, then the order of
the report (errors, strongest first).
"""

from __future__ import annotations

from ..report.model import Finding, Report
from ..files.names import display
from ._common import headline, link_text

#: File names link into the repository (each annotation sits on its file; render.links).
LINKS = True

#: GitHub's limit of annotations per type (error, warning) per step.
MAX_PER_TYPE = 10
_LEVEL = {"error": "error", "warning": "warning"}


def escape_data(text: str) -> str:
    """Escape a command's message, as GitHub's toolkit does."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A property value (``file=``, ``title=``): also ``:`` and ``,``, which end a property.

    With ``:`` escaped, the first ``::`` of the line is the one we wrote, so a
    file name can neither end the properties early nor start a command.
    """
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


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
        # GitHub's runner unescapes only %25, %0D, %0A (and %3A, %2C in properties;
        # actions/runner ActionCommand.cs): no other control character can travel,
        # so display() shows each one escaped, a newline included, before GitHub's escapes.
        props = f"file={escape_property(display(prefix + anchor(f)))},title={escape_property(title)}"
        linked = next((link_text(m) for m in f.members if m.path == anchor(f) and m.link), "")
        message = headline(f) + (f"; {display(anchor(f))} {linked}" if linked else "") + f" [{f.id}]"
        lines.append(f"::{level} {props}::{escape_data(display(message))}")
    return "".join(line + "\n" for line in lines)
