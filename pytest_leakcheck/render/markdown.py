"""A Markdown job summary: verdict, counts, and the top findings with thumbnails.

GitHub refuses a step summary over 1 MiB, so the summary is built to fit:
findings are added until the next one would not, and a note says how many
were left out.  Thumbnails are links to the images in the repository at the
checked commit; the caller passes that URL in, nothing here reads the
environment.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote

from ..files.escape import html_text, markdown, markdown_code
from ..report.model import COPY_KINDS, Finding, Report
from ..files.names import log_text, to_bytes
from ._common import checked_text, headline, link_text

#: File names link into the repository (thumbnails from the blob URL; render.links).
LINKS = True

#: GitHub's limit is 1 MiB per step summary; leave room for other steps' text.
MAX_BYTES = 1_000_000
DEFAULT_TOP = 30
THUMB_WIDTH = 160
MAX_THUMBS = 4


def _table(title: str, rows: dict[str, dict[str, int]], cell: Callable[[str], str] = markdown) -> list[str]:
    out = [f"| {title} | new | existing |", "|---|---:|---:|"]
    for key in sorted(rows):
        out.append(f"| {cell(key)} | {rows[key].get('new', 0)} | {rows[key].get('existing', 0)} |")
    return out


def _counts(report: Report, attr: str) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for f in report.findings:
        status = "new" if f.status == "new" else "existing"
        row = out.setdefault(getattr(f, attr), {})
        row[status] = row.get(status, 0) + 1
    return out


def _thumbs(f: Finding, blob_url: str, prefix: str) -> list[str]:
    cells = []
    for m in f.members[:MAX_THUMBS]:
        url = f"{blob_url.rstrip('/')}/{quote(to_bytes(prefix + m.path), safe='/')}?raw=true"
        # Inside an HTML block Markdown is not parsed: the HTML medium's rule applies.
        cells.append(f'<td><img src="{html_text(url)}" width="{THUMB_WIDTH}" alt=""><br>'
                     f"<code>{html_text(m.path)}</code> ({html_text(m.split)})</td>")
    return ["<table><tr>", *cells, "</tr></table>", ""]


def _finding(n: int, f: Finding, blob_url: str | None, prefix: str) -> str:
    tag = "" if f.status == "new" else " · already on base"
    # Split names and paths come from the pull request: escape.markdown / markdown_code,
    # so no image, link, HTML or emphasis of theirs reaches the job summary.
    lines = [f"#### {n}. {f.severity.upper()} {markdown(f.kind)} {markdown_code(f.split_pair)}{tag} `{f.id}`", ""]
    lines.append(markdown(headline(f, max_members=MAX_THUMBS)))
    lines.append("")
    linked = [m for m in f.members[:MAX_THUMBS] if m.link]
    if linked:
        lines += [f"- {markdown_code(m.path)} ({markdown(m.split)}) {markdown(link_text(m))}" for m in linked]
        lines.append("")
    if blob_url and f.kind in COPY_KINDS:
        lines += _thumbs(f, blob_url, prefix)
    # A summary printed to a CI log must not carry a workflow command either.
    return log_text("\n".join(lines)) + "\n"


def render(
    report: Report,
    *,
    blob_url: str | None = None,
    prefix: str = "",
    max_findings: int = DEFAULT_TOP,
    max_bytes: int = MAX_BYTES,
    **_: object,
) -> str:
    """``blob_url`` like ``https://github.com/OWNER/REPO/blob/SHA`` enables thumbnails."""
    new_errors = sum(f.status == "new" for f in report.errors)
    old_errors = len(report.errors) - new_errors
    if new_errors:
        verdict = f"❌ {new_errors} new error-level finding{'s' * (new_errors != 1)}"
    else:
        verdict = "✅ no new error-level findings"
    if old_errors:
        verdict += f"; {old_errors} already on the base branch"
    head = ["## leakcheck", "", verdict, ""]
    if report.findings:
        head += [*_table("kind", _counts(report, "kind"), str), ""]  # our own words
        head += [*_table("splits", _counts(report, "split_pair")), ""]
    st = report.stats
    if st:
        checked = f"; checked: {markdown(checked_text(st['checked']))}" if st.get("checked") else ""
        head.append(f"{int(st.get('files', 0))} images; decoded {int(st.get('decoded', 0))}, "
                    f"reused {int(st.get('reused', 0))}, {float(st.get('seconds', 0)):.1f}s{checked}")
        head.append("")
    head += [f"> {markdown(w)}" for w in report.warnings]
    text = log_text("\n".join(head)) + "\n"
    ordered = sorted(report.findings, key=lambda f: f.status != "new")
    top = ordered if max_findings <= 0 else ordered[:max_findings]
    if top:
        text += "### Top findings\n\n"
    reserve = 200  # room for the truncation note
    shown = 0
    for n, f in enumerate(top, start=1):
        block = _finding(n, f, blob_url, prefix)
        if len((text + block).encode()) + reserve > max_bytes:
            break
        text += block
        shown += 1
    if shown < len(report.findings):
        why = "to stay under GitHub's summary size limit" if shown < len(top) else "in this summary"
        text += (f"\n_{len(report.findings) - shown} more findings not shown {why}; "
                 "the JSON report artifact has them all._\n")
    return text
