"""A self-contained HTML page for reviewing findings by eye, thousands of them.

Every published dataset audit ends with a person looking at each pair, so
this page puts the evidence side by side: both images at the same display
size in the policy's split order, the later one turned (and for ``aligned``
zoomed and shifted) the way the detector matched it, a heatmap of where they
differ after that alignment, one evidence line per link, and the command
that records a verdict.  Filters (kind, split pair, severity, status) and a
path search narrow the page; the counts and the verdict commands follow
what is shown (``page.py`` holds the script and the style).

The page has no external resources: thumbnails are small JPEG data URIs
that the browser decodes only near the viewport.  Everything that comes
from a file name is HTML-escaped, and the page's Content-Security-Policy
allows exactly one script, the page's own (by its hash): a file name that
slipped past escaping could still not run.
"""

from __future__ import annotations

from dataclasses import replace

import html
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from PIL import Image

from ...detectors import registry
from ...files.names import display
from ...files.remote import is_url
from ...policy.load import DEFAULT_MAX_PIXELS
from ...report.model import COPY_KINDS, KINDS, Finding, Member, Pair, Report
from ...orientation import inverse
from . import page
from .._common import checked_text, examples, link_text
from .images import (
    ALIGNING,
    THUMB,
    Alignment,
    Loader,
    alignment_of,
    data_uri,
    find_alignment,
    heatmap,
    letterbox,
    oriented,
    thumbnail_loader,
)
from .overview import overview

__all__ = ["THUMB", "groups", "heatmap", "render", "thumbnail_loader"]

#: A cluster of a thousand blank frames lists this many paths, then counts the rest.
MAX_MEMBERS = 50
#: Thumbnails on a card without a matched pair (a group split across splits).
MAX_THUMBS = 6
#: Paths a card's search text holds: enough to find any listed member.
MAX_SEARCH_PATHS = 200


def _esc(value: object) -> str:
    # display() first: a control character or a bidi override in a file name
    # would otherwise be invisible, or reorder what the reviewer reads.  `&#91;`
    # is the same `[` on the page, and keeps `##[` out of a CI log the page is printed to.
    return html.escape(display(str(value)), quote=True).replace("##[", "##&#91;")


def _img(uri: str, caption: str, cls: str = "") -> str:
    # Native lazy loading: the browser decodes a card's images only near the viewport
    # (and never for a card the filters hide).  Measured with 2,000 findings
    # (benchmarks/html_report.py), it paints sooner than an IntersectionObserver script.
    return (f'<figure><img class="{cls}" alt="{_esc(caption)}" loading="lazy" decoding="async" '
            f'width="{THUMB}" height="{THUMB}" src="{uri}">'
            f"<figcaption>{_esc(caption)}</figcaption></figure>")


def _missing(caption: str) -> str:
    return (f'<figure><div class="noimg">image unavailable</div>'
            f"<figcaption>{_esc(caption)}</figcaption></figure>")


def _pair_of(f: Finding, a: str, b: str) -> Pair | None:
    return next((p for p in f.pairs if {p.a, p.b} == {a, b}), None)


def _shown_link(f: Finding) -> tuple[Member, Member, str, str] | None:
    """The card's picture: (earlier member, later member, the orientation turning the later one
    onto the earlier, the detector).  The first link when members have links; else the first pair."""
    by_path = {m.path: m for m in f.members}
    for m in f.members:
        if m.link is not None and m.link.to in by_path:
            return by_path[m.link.to], m, m.link.orientation, m.link.detector
    if not f.pairs or f.pairs[0].a not in by_path or f.pairs[0].b not in by_path:
        return None
    p = f.pairs[0]
    order = {m.path: n for n, m in enumerate(f.members)}
    if order[p.a] > order[p.b]:  # "a after o is b": the later file a, turned by o
        return by_path[p.b], by_path[p.a], p.orientation, p.detector
    return by_path[p.a], by_path[p.b], inverse(p.orientation), p.detector


def _points(pair: Pair | None, first: Image.Image, second: Image.Image, swapped: bool) -> str:
    """Matched points (a detector's point evidence, ``Pair.points``) as lines across the two images;
    ``swapped`` when the pair's ``a`` is the second image shown."""
    if pair is None or not pair.points:
        return ""
    sa, xa, ya = letterbox(first.size)
    sb, xb, yb = letterbox(second.size)
    gap = THUMB + 8  # the second figure's left edge (CSS: .images gap 8px)
    lines = []
    for p in pair.points[:50]:
        (ax, ay), (bx, by) = ((p[2], p[3]), (p[0], p[1])) if swapped else ((p[0], p[1]), (p[2], p[3]))
        x1, y1 = xa + ax * first.size[0] * sa, ya + ay * first.size[1] * sa
        x2, y2 = gap + xb + bx * second.size[0] * sb, yb + by * second.size[1] * sb
        lines.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}"/>'
                     f'<circle cx="{x1:.1f}" cy="{y1:.1f}" r="2"/><circle cx="{x2:.1f}" cy="{y2:.1f}" r="2"/>')
    return (f'<svg class="points" width="{2 * THUMB + 8}" height="{THUMB}" aria-label="matched points">'
            + "".join(lines) + "</svg>")


def _link_images(f: Finding, load: Loader | None) -> str:
    """The earlier member as it is, the later one turned (and aligned) onto it, and their difference."""
    shown = _shown_link(f)
    if shown is None:
        return ""
    first, second, turned, detector = shown
    cap_b = second.path if turned == "identity" else f"{second.path} after {turned}"
    a = load(first.path) if load else None
    b = load(second.path) if load else None
    if a is None or b is None:
        return ((_img(data_uri(a), first.path) if a else _missing(first.path))
                + (_img(data_uri(oriented(b, turned)), cap_b) if b else _missing(cap_b)))
    b = oriented(b, turned)
    pair = _pair_of(f, first.path, second.path)
    align: Alignment | None = None
    if detector in ALIGNING or (pair is not None and alignment_of(pair.signals)):
        align = (alignment_of(pair.signals) if pair is not None else None) or find_alignment(b, a)
    cap_heat = "difference" + (f" after {align.text()}" if align is not None and align.moved else "")
    # Points are given in the frames the pair matches in: the turned side is ``pair.a``.
    drawable = pair is not None and (pair.orientation == "identity" or pair.a == second.path)
    points = _points(pair, a, b, pair.a == second.path) if drawable and pair is not None else ""
    return (_img(data_uri(a), first.path) + _img(data_uri(b), cap_b)
            + _img(data_uri(heatmap(b, a, align)), cap_heat, "heat") + points)


def _member_images(f: Finding, load: Loader | None) -> str:
    """Thumbnails of a finding without a matched pair (a group across splits), in split order."""
    out = []
    for m in examples(f, MAX_THUMBS):
        img = load(m.path) if load else None
        cap = f"{m.split}: {m.path}" if m.split else m.path
        out.append(_img(data_uri(img), cap) if img is not None else _missing(cap))
    return "".join(out)


def _signal_text(signals: dict[str, float], skip: str) -> list[str]:
    return [f"{k.replace('_', ' ')} {v:g}" for k, v in sorted(signals.items())
            if not k.startswith(skip) and k not in ("zoom", "shift_x", "shift_y") and isinstance(v, (int, float))]


def _evidence(f: Finding) -> list[str]:
    """One line per link: how the member joined, then every other signal measured for that pair."""
    lines = []
    for m in f.members[:MAX_MEMBERS]:
        if m.link is None:
            continue
        pair = _pair_of(f, m.path, m.link.to)
        extra = _signal_text(pair.signals, m.link.detector) if pair is not None else []
        # Worded as every other format words a link (_common.link_text).
        lines.append(f"{m.path} {link_text(m)}" + ("; " + ", ".join(extra) if extra else ""))
    return lines


def _members(f: Finding) -> list[str]:
    out = ['<ul class="members">']
    # A group lists its training files first: show as many of each split.
    shown = f.members[:MAX_MEMBERS] if f.kind in COPY_KINDS else examples(f, MAX_MEMBERS)
    out += [f"<li><span class=\"split\">{_esc(m.split or '-')}</span> {_esc(m.path)}</li>" for m in shown]
    if len(f.members) > len(shown):
        out.append(f"<li>... and {len(f.members) - len(shown)} more (the JSON report lists all)</li>")
    out.append("</ul>")
    return out


def _finding(f: Finding, load: Loader | None) -> str:
    search = "\n".join(m.path for m in f.members[:MAX_SEARCH_PATHS]).lower()
    out = [f'<article class="finding {_esc(f.severity)} {_esc(f.status)}" id="f-{_esc(f.id)}" '
           f'data-id="{_esc(f.id)}" data-kind="{_esc(f.kind)}" data-pair="{_esc(f.split_pair)}" '
           f'data-severity="{_esc(f.severity)}" data-status="{_esc(f.status)}" data-paths="{_esc(search)}">',
           f'<header><span class="badge {_esc(f.severity)}">{_esc(f.severity)}</span>'
           f'<span class="badge {_esc(f.status)}">{_esc(f.status)}</span>'
           f"<code>{_esc(f.id)}</code> {_esc(f.kind)} <span class=\"pair\">{_esc(f.split_pair)}</span>"
           "</header>"]
    pictures = _link_images(f, load) if f.kind in COPY_KINDS else _member_images(f, load)
    if pictures:
        out.append(f'<div class="images">{pictures}</div>')
    out.append('<div class="details">')
    if f.kind in COPY_KINDS:
        rows = [("strength", f"{f.strength:.4f}")]
        out.append("<table>" + "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in rows)
                   + "</table>")
        out.append('<ul class="evidence">' + "".join(f"<li>{_esc(line)}</li>" for line in _evidence(f)) + "</ul>")
    if f.message:
        out.append(f'<p class="message">{_esc(f.message)}</p>')
    out += _members(f)
    cmd = f'leakcheck judge {f.id} distinct --reason "..."'
    alt = f'leakcheck judge {f.id} duplicate --reason "..."'
    out.append(f'<p class="judge">false alarm: <code>{_esc(cmd)}</code><br>'
               f"real leak, accepted for now: <code>{_esc(alt)}</code></p>")
    out.append("</div></article>")
    return "\n".join(out)


def groups(report: Report) -> list[tuple[str, str, list[Finding]]]:
    """Findings by kind (report order) and split pair, strongest first within each.

    Within a kind, split pairs holding errors come before warning-only ones
    (a duplicate inside train), since those are what fail the check.
    """
    out: dict[tuple[str, str], list[Finding]] = {}
    for f in report.findings:
        out.setdefault((f.kind, f.split_pair), []).append(f)

    def order(key: tuple[str, str]) -> tuple:
        kind = KINDS.index(key[0]) if key[0] in KINDS else len(KINDS)
        return kind, all(f.severity != "error" for f in out[key]), key

    return [(kind, pair, sorted(out[(kind, pair)], key=lambda f: (-f.strength, f.id)))
            for kind, pair in sorted(out, key=order)]


def _summary(report: Report) -> str:
    counts = report.counts()
    new_errors = sum(f.status == "new" for f in report.errors)
    rows = [
        ("policy", report.policy_path),
        ("findings", len(report.findings)),
        ("new error-level findings", new_errors),
        ("known (in the baseline)", sum(f.status == "known" for f in report.findings)),
        ("judged distinct (hidden)", int(report.stats.get("distinct", 0))),
        ("warnings", counts["severity"].get("warning", 0)),
        ("exit code", report.exit_code),
    ]
    if report.stats.get("checked"):
        rows.append(("checked", checked_text(report.stats["checked"])))
    return "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in rows)


def _options(name: str, label: str, values: Sequence[str]) -> str:
    opts = "".join(f'<option value="{_esc(v)}">{_esc(v)}</option>' for v in values)
    return (f'<label>{_esc(label)} <select name="{name}" data-facet="{name}">'
            f'<option value="">all</option>{opts}</select></label>')


def _filters(report: Report, grouped: list[tuple[str, str, list[Finding]]]) -> str:
    """The filter bar, the count of what is shown, and the verdict commands for it."""
    kinds = list(dict.fromkeys(kind for kind, _, _ in grouped))
    pairs = sorted({f.split_pair for f in report.findings})
    sev = [s for s in ("error", "warning") if any(f.severity == s for f in report.findings)]
    status = sorted({f.status for f in report.findings}, key=lambda s: (s != "new", s))
    return (
        '<form id="filters" class="filters" autocomplete="off">'
        + _options("kind", "kind", kinds) + _options("pair", "split pair", pairs)
        + _options("severity", "severity", sev) + _options("status", "status", status)
        + '<label>path <input type="search" name="q" placeholder="part of a file name"></label>'
        + f'<output id="shown" aria-live="polite">{len(report.findings)} of {len(report.findings)} shown</output>'
        + "</form>"
        + '<details id="verdicts"><summary>verdict commands for the findings shown</summary>'
        + '<p><label>verdict <select id="verdict"><option value="distinct">distinct (false alarm)</option>'
        + '<option value="duplicate">duplicate (real leak, accepted for now)</option></select></label> '
        + '<button type="button" id="copy">copy</button> <span id="copied"></span></p>'
        + f'<textarea id="commands" readonly rows="6" cols="90">{_esc(_commands(report.findings))}</textarea>'
        + "</details>"
    )


def _commands(findings: Sequence[Finding]) -> str:
    # The same text the script writes after a filter change; without script it is every finding.
    return "".join(f'leakcheck judge {f.id} distinct --reason "..."\n' for f in findings)


def _with_points(report: Report) -> Report:
    """Pairs take the point evidence a detector kept in its stats (``stats[section]["points"]``:
    ``{a, b, points}``), where the pair does not carry it already."""
    kept: dict[tuple[str, str], tuple] = {}
    for d in registry():
        entry = report.stats.get(d.section)
        for rec in entry.get("points", ()) if isinstance(entry, dict) else ():
            if isinstance(rec, dict) and isinstance(rec.get("points"), list):
                pts = tuple(tuple(float(v) for v in q[:4]) for q in rec["points"] if len(q) >= 4)
                kept[(str(rec.get("a")), str(rec.get("b")))] = pts
                kept[(str(rec.get("b")), str(rec.get("a")))] = tuple((c, e, a, b) for a, b, c, e in pts)
    if not kept:
        return report

    def fill(pair: Pair) -> Pair:
        return pair if pair.points or (pair.a, pair.b) not in kept else replace(pair, points=kept[(pair.a, pair.b)])

    return replace(report, findings=tuple(replace(f, pairs=tuple(fill(p) for p in f.pairs)) if f.pairs else f
                                          for f in report.findings))


def render(
    report: Report,
    *,
    root: Path | None = None,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    loader: Loader | None = None,
    thresholds: dict[str, tuple[float, bool]] | None = None,
    **_: object,
) -> str:
    """The review page.  Images come from ``loader``, or from files under ``root``;
    ``thresholds`` (``detectors.thresholds(policy)``) are drawn on the score charts."""
    load = loader or (thumbnail_loader(root if is_url(root) else Path(root), max_pixels) if root is not None else None)
    report = _with_points(report)
    grouped = groups(report)
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_esc(page.CSP)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>leakcheck review</title>",
        f"<style>{page.STYLE}</style></head><body>",
        "<h1>leakcheck review</h1>",
        f'<table class="summary">{_summary(report)}</table>',
        overview(report, thresholds),
        "<p>Each finding shows its files in the policy's split order, the later one turned (and for "
        "<code>aligned</code>, zoomed and shifted) as the detector matched it, and where they differ "
        "after that alignment (white: most; blue: not covered). Record a verdict with the command under it; "
        "<code>distinct</code> findings are never reported again.</p>",
    ]
    if grouped:
        out.append(_filters(report, grouped))
        out.append("<nav><ul>")
        out += [f'<li data-group="g-{n}"><a href="#g-{n}">{_esc(kind)} · {_esc(pair)}</a> '
                f'(<span class="n">{len(fs)}</span>)</li>' for n, (kind, pair, fs) in enumerate(grouped)]
        out.append("</ul></nav>")
    else:
        out.append("<p>No findings.</p>")
    # Decoding, resizing and JPEG encoding release the GIL: threads overlap them.
    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        for n, (kind, pair, fs) in enumerate(grouped):
            out.append(f'<section class="group" id="g-{n}"><h2>{_esc(kind)} · {_esc(pair)} '
                       f'(<span class="n">{len(fs)}</span>)</h2>')
            out += pool.map(lambda f: _finding(f, load), fs)
            out.append("</section>")
    if report.stale:
        out.append("<h2>Stale baseline entries</h2><p>These match no finding any more; "
                   "<code>leakcheck baseline --prune</code> drops them.</p><ul>")
        out += [f"<li><code>{_esc(s)}</code></li>" for s in report.stale]
        out.append("</ul>")
    if report.warnings:
        out.append("<h2>Warnings</h2><ul>")
        out += [f"<li>{_esc(w)}</li>" for w in report.warnings]
        out.append("</ul>")
    out.append(f"<script>{page.SCRIPT}</script></body></html>")
    return "\n".join(out) + "\n"
