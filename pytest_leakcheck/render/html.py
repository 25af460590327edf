"""A self-contained HTML page for reviewing findings by eye.

Every published dataset audit ends with a person looking at each pair, so
this page puts the evidence side by side: both images at the same display
size with the matched orientation applied to the first, a heatmap of where
they differ, the signal values, and the command that records a verdict.

The page has no external resources: thumbnails are small JPEG data URIs,
and the browser loads only the images of rows near the viewport, so 2,000
findings open fast.  Everything that comes from a file name is HTML-escaped,
and the page's Content-Security-Policy forbids every script, as a second
line of defence.
"""

from __future__ import annotations

import base64
import io
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps

from ..signals.decode import TRANSPOSE, open_image
from ..report.model import COPY_KINDS, KINDS, Finding, Pair, Report
from ..files.escape import html_text
from ..policy.load import DEFAULT_MAX_PIXELS
from ..files.remote import is_url, read_bytes
from ._common import checked_text, link_text
from ._matches import overlay, points_by_pair
from ._overview import overview

#: Longest side of an embedded thumbnail, in pixels.
THUMB = 128
#: Side of the difference heatmap; it is smooth, so a small one scales up well.
HEAT = 64
#: A pixel this many standard deviations off shows at full heat.
HEAT_SCALE = 2.0
JPEG_QUALITY = 70
#: A cluster of a thousand blank frames lists this many paths, then counts the rest.
MAX_MEMBERS = 50

Loader = Callable[[str], "Image.Image | None"]


def thumbnail_loader(root: Path, max_pixels: int = DEFAULT_MAX_PIXELS, size: int = THUMB) -> Loader:
    """Load ``root / path`` as an upright RGB thumbnail; None when it cannot be read."""

    # JPEG decodes at 1/2 .. 1/8 scale while both sides stay >= 3/4 of the
    # thumbnail: several times cheaper than a full decode, and still sharp.
    draft = (size * 3 // 4, size * 3 // 4)

    def load(path: str) -> Image.Image | None:
        try:
            img = open_image(read_bytes(str(root / path)), max_pixels)  # a file, or an object (sources.py)
            img.draft("RGB", draft)
            if img.getexif().get(0x0112, 1) != 1:  # transposing copies, so only when needed
                img = ImageOps.exif_transpose(img)
            img = img.convert("RGB")
            img.thumbnail((size, size), Image.Resampling.LANCZOS)
            return img
        except Exception:  # any unreadable file: the row says so instead of failing the page
            return None

    return load


def oriented(img: Image.Image, orientation: str) -> Image.Image:
    op = TRANSPOSE[orientation]
    return img if op is None else img.transpose(op)


def heatmap(a: Image.Image, b: Image.Image, size: int = HEAT) -> Image.Image:
    """Where ``a`` and ``b`` differ, after both are squashed to ``size`` and standardised.

    Standardising makes a brightness or contrast change read as cold: what
    lights up is structure that differs, which is what a reviewer judges.
    """
    def grey(img: Image.Image) -> np.ndarray:
        x = np.asarray(img.convert("L").resize((size, size), Image.Resampling.BILINEAR), dtype=np.float32)
        return (x - x.mean()) / max(float(x.std()), 1e-3)

    t = np.clip(np.abs(grey(a) - grey(b)) / HEAT_SCALE, 0.0, 1.0)
    # black -> red -> yellow -> white
    rgb = np.stack([np.clip(3 * t, 0, 1), np.clip(3 * t - 1, 0, 1), np.clip(3 * t - 2, 0, 1)], axis=-1)
    return Image.fromarray((rgb * 255).astype(np.uint8), "RGB")


def data_uri(img: Image.Image) -> str:
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=JPEG_QUALITY, optimize=True)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


#: The medium's rule (escape.html_text): display() first, so a control character or
#: a bidi override in a file name is visible, then HTML's escapes, and `##[` as `##&#91;`.
_esc = html_text


def _img(uri: str, caption: str, cls: str = "", width: int = THUMB) -> str:
    # Native lazy loading: the browser decodes a row's images only near the viewport.
    # Measured with 2,000 findings (benchmarks/html_report.py), it shows the first
    # screen and fires `load` sooner than an IntersectionObserver script.
    return (f'<figure><img class="{cls}" alt="{_esc(caption)}" loading="lazy" decoding="async" '
            f'width="{width}" height="{THUMB}" src="{uri}">'
            f"<figcaption>{_esc(caption)}</figcaption></figure>")


def _missing(caption: str) -> str:
    return (f'<figure><div class="noimg">image unavailable</div>'
            f"<figcaption>{_esc(caption)}</figcaption></figure>")


def _images(pair: Pair, load: Loader | None, points: list[list[float]] | None = None) -> str:
    a = load(pair.a) if load else None
    b = load(pair.b) if load else None
    cap_a = pair.a if pair.orientation == "identity" else f"{pair.a} after {pair.orientation}"
    if a is None or b is None:
        return (_img(data_uri(a), cap_a) if a else _missing(cap_a)) + (
            _img(data_uri(b), pair.b) if b else _missing(pair.b))
    if points:  # another shot of the scene: where its keypoints meet tells more than a heatmap
        both = overlay(a, b, points, THUMB)
        return _img(data_uri(both), f"{len(points)} matched points: {pair.a} ~ {pair.b}", "scene", both.width)
    a = oriented(a, pair.orientation)
    return (_img(data_uri(a), cap_a) + _img(data_uri(b), pair.b)
            + _img(data_uri(heatmap(a, b)), "difference heatmap", "heat"))


def _signals(f: Finding, pair: Pair | None) -> str:
    rows = [("strength", f"{f.strength:.4f}"), ("orientation", f.orientation)]
    if pair is not None:
        rows.append(("detector", f"{pair.detector} = {pair.value:g}"))
        rows += [(k.replace("_", " "), f"{v:g}") for k, v in sorted(pair.signals.items())]
    rows += [(k.replace("_", " "), f"{v:g}") for k, v in sorted(f.evidence.items())
             if pair is None or k not in pair.signals]
    return "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in rows)


def _finding(f: Finding, load: Loader | None, points: dict | None = None) -> str:
    pair = f.pairs[0] if f.pairs else None
    out = [f'<article class="finding {_esc(f.severity)} {_esc(f.status)}" id="f-{_esc(f.id)}">',
           f'<header><span class="badge {_esc(f.severity)}">{_esc(f.severity)}</span>'
           f'<span class="badge {_esc(f.status)}">{_esc(f.status)}</span>'
           f"<code>{_esc(f.id)}</code> {_esc(f.kind)} <span class=\"pair\">{_esc(f.split_pair)}</span>"
           "</header>"]
    if pair is not None:
        drawn = (points or {}).get((pair.a, pair.b)) if pair.detector == "same-scene" else None
        out.append(f'<div class="images">{_images(pair, load, drawn)}</div>')
    out.append('<div class="details"><table>')
    if f.kind in COPY_KINDS:
        out.append(_signals(f, pair))
    out.append("</table>")
    if f.message:
        out.append(f'<p class="message">{_esc(f.message)}</p>')
    out.append('<ul class="members">')
    out += [f"<li><span class=\"split\">{_esc(m.split or '-')}</span> {_esc(m.path)}"
            + (f' <span class="link">{_esc(link_text(m))}</span>' if m.link else "") + "</li>"
            for m in f.members[:MAX_MEMBERS]]
    if len(f.members) > MAX_MEMBERS:
        out.append(f"<li>... and {len(f.members) - MAX_MEMBERS} more (the JSON report lists all)</li>")
    out.append("</ul>")
    if len(f.pairs) > 1:
        out.append('<details><summary>all matched pairs</summary><ul class="pairs">')
        out += [f"<li>{_esc(p.a)} ~ {_esc(p.b)}: {_esc(p.detector)} {p.value:g}"
                + (f" after {_esc(p.orientation)}" if p.orientation != "identity" else "") + "</li>"
                for p in f.pairs]
        out.append("</ul></details>")
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


_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:0 2em 4em;color:#222;background:#fafafa}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #ccc}
.summary td,.summary th{padding:0 1em 0 0;text-align:left}
.finding{display:flex;flex-wrap:wrap;gap:1em;background:#fff;border:1px solid #ddd;
 border-left:6px solid #c00;margin:.8em 0;padding:.6em;min-height:180px}
.finding.warning{border-left-color:#e90}.finding.known{border-left-color:#888;opacity:.85}
.finding header{flex-basis:100%}.finding header code{margin:0 .6em}
.badge{display:inline-block;padding:0 .5em;margin-right:.3em;border-radius:3px;font-size:.85em;
 color:#fff;background:#c00}.badge.warning{background:#e90}.badge.new{background:#06c}
.badge.known{background:#888}.pair{color:#555}
.images{display:flex;gap:.5em}figure{margin:0;width:128px}
figure img,.noimg{width:128px;height:128px;object-fit:contain;background:#eee;display:block}
img.heat{image-rendering:pixelated}figure img.scene{width:auto;max-width:none}.noimg{line-height:128px;text-align:center;color:#888;font-size:.8em}
figcaption{font-size:.75em;word-break:break-all;color:#444}
.details{flex:1;min-width:20em}.details th{text-align:left;font-weight:normal;color:#555;padding-right:1em}
.members{padding-left:1.2em;word-break:break-all}.split{color:#06c}.link{color:#666}
.judge code{user-select:all;background:#f2f2f2;padding:0 .3em}.message{color:#a00}
nav li{margin:.1em 0}
.overview h3{font-size:1em;margin:1em 0 .3em}.chart text{font-size:11px;fill:#333}
.legend .key{margin-right:1em;font-size:.85em}.legend i{display:inline-block;width:.9em;height:.9em;
 margin-right:.3em;vertical-align:middle}.counts td,.counts th{padding:0 .8em 0 0;text-align:left}
.hists{display:flex;flex-wrap:wrap;gap:1.5em}.hist{width:auto}
.hist figcaption{font-size:.8em;max-width:420px;word-break:normal}
"""

#: No script may run on the page: it needs none, and a file name that slipped
#: past escaping could not execute.
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


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
    grouped = groups(report)
    points = points_by_pair(report)
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_esc(CSP)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>leakcheck review</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>leakcheck review</h1>",
        f'<table class="summary">{_summary(report)}</table>',
        overview(report, thresholds),
        "<p>Each finding shows the first file with the matched orientation applied, the second file, "
        "and where they differ (white: most). Record a verdict with the command under it; "
        "<code>distinct</code> findings are never reported again.</p>",
    ]
    if grouped:
        out.append("<nav><ul>")
        out += [f'<li><a href="#g-{n}">{_esc(kind)} · {_esc(pair)}</a> ({len(fs)})</li>'
                for n, (kind, pair, fs) in enumerate(grouped)]
        out.append("</ul></nav>")
    else:
        out.append("<p>No findings.</p>")
    # Decoding, resizing and JPEG encoding release the GIL: threads overlap them.
    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        for n, (kind, pair, fs) in enumerate(grouped):
            out.append(f'<section id="g-{n}"><h2>{_esc(kind)} · {_esc(pair)} ({len(fs)})</h2>')
            out += pool.map(lambda f: _finding(f, load, points), fs)
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
    out.append("</body></html>")
    return "\n".join(out) + "\n"
