"""The overview at the top of the HTML report: pictures a reviewer reads at a glance.

Two inline SVG charts, no script (the page's Content-Security-Policy forbids
every script, and SVG markup inside HTML is not an external resource):

- findings per split pair, one bar per pair stacked by kind, with the same
  counts in a table below for screen readers and copy-paste;
- per detector, the distribution of the match scores of its pairs with the
  threshold drawn, so a reviewer sees how close the borderline pairs are.

The thresholds come from the policy (``detectors.thresholds``) through the
renderer's options; the ``aligned`` detector's calibrated one from the
report's stats.  Without a threshold the histogram is drawn without the line.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from ..detectors import registry
from ..files.escape import html_text
from ..report.model import KINDS, Report

#: One colour per finding kind, in KINDS order; chosen to stay apart for colour-blind readers.
PALETTE = ("#b2182b", "#d6604d", "#f4a582", "#2166ac", "#4393c3", "#762a83", "#9970ab",
           "#5aae61", "#a6dba0", "#878787")
BAR_WIDTH = 360
LABEL_WIDTH = 150
ROW = 22
HIST_WIDTH, HIST_HEIGHT, HIST_BINS = 420, 110, 20


#: Split names come from the policy or a manifest: the HTML medium's one rule.
_esc = html_text


def _colour(kind: str) -> str:
    return PALETTE[KINDS.index(kind) % len(PALETTE)] if kind in KINDS else PALETTE[-1]


def overview(report: Report, thresholds: Mapping[str, tuple[float, bool]] | None = None) -> str:
    """The overview section's HTML; empty when there are no findings."""
    if not report.findings:
        return ""
    out = ['<section class="overview" id="overview"><h2>Overview</h2>', _pairs_chart(report)]
    charts = [_histogram(name, values, limit) for name, values, limit in _scores(report, thresholds or {})]
    if charts:
        out.append('<h3>Match scores per detector</h3><div class="hists">' + "".join(charts) + "</div>")
    out.append("</section>")
    return "\n".join(out)


# --------------------------------------------------------------------------
# Findings per split pair and kind


def _pairs_chart(report: Report) -> str:
    counts = Counter((f.split_pair or "-", f.kind) for f in report.findings)
    pairs = sorted({p for p, _ in counts}, key=lambda p: (-sum(n for (q, _), n in counts.items() if q == p), p))
    kinds = [k for k in (*KINDS, *sorted({k for _, k in counts} - set(KINDS))) if any(k == c for _, c in counts)]
    most = max(sum(counts[(p, k)] for k in kinds) for p in pairs)
    height = ROW * len(pairs) + 4
    svg = [f'<svg class="chart pairs" role="img" width="{LABEL_WIDTH + BAR_WIDTH + 40}" height="{height}" '
           f'viewBox="0 0 {LABEL_WIDTH + BAR_WIDTH + 40} {height}" xmlns="http://www.w3.org/2000/svg">',
           "<title>Findings per split pair and kind</title>"]
    for row, pair in enumerate(pairs):
        y = row * ROW + 2
        svg.append(f'<text x="{LABEL_WIDTH - 6}" y="{y + 15}" text-anchor="end">{_esc(pair)}</text>')
        x = float(LABEL_WIDTH)
        for kind in kinds:
            n = counts[(pair, kind)]
            if not n:
                continue
            w = max(BAR_WIDTH * n / most, 2.0)
            svg.append(f'<rect class="bar" data-kind="{_esc(kind)}" x="{x:.1f}" y="{y}" width="{w:.1f}" '
                       f'height="{ROW - 6}" fill="{_colour(kind)}"><title>{_esc(pair)}: {n} {_esc(kind)}'
                       "</title></rect>")
            x += w
        total = sum(counts[(pair, k)] for k in kinds)
        svg.append(f'<text x="{x + 4:.1f}" y="{y + 15}">{total}</text>')
    svg.append("</svg>")
    legend = "".join(f'<span class="key"><i style="background:{_colour(k)}"></i>{_esc(k)}</span>' for k in kinds)
    head = "".join(f"<th>{_esc(k)}</th>" for k in kinds)
    rows = "".join(f"<tr><th>{_esc(p)}</th>" + "".join(f"<td>{counts[(p, k)] or ''}</td>" for k in kinds)
                   + "</tr>" for p in pairs)
    return ("<h3>Findings per split pair and kind</h3>" + "".join(svg) + f'<p class="legend">{legend}</p>'
            + f'<table class="counts"><tr><th>split pair</th>{head}</tr>{rows}</table>')


# --------------------------------------------------------------------------
# Score distributions


def _scores(
    report: Report, thresholds: Mapping[str, tuple[float, bool]]
) -> list[tuple[str, list[float], tuple[float, bool] | None]]:
    values: dict[str, list[float]] = {}
    for f in report.findings:
        for p in f.pairs:
            values.setdefault(p.detector, []).append(float(p.value))
    limits = dict(thresholds)
    for d in registry():  # thresholds calibrated on this data (aligned's) are in the report
        value = d.calibrated(report.stats.get(d.name))
        if value is not None:
            limits.setdefault(d.name, (value, d.lower_is_stronger))
    # Identical detectors have no score to be near a threshold of: every value is the same.
    return [(name, vals, limits.get(name)) for name, vals in sorted(values.items())
            if name in limits or len(set(vals)) > 1]


def _histogram(name: str, values: Sequence[float], limit: tuple[float, bool] | None) -> str:
    lower = limit[1] if limit else False
    threshold = limit[0] if limit else None
    edges = _edges(values, threshold, lower)
    counts = [0] * (len(edges) - 1)
    for v in values:
        k = next((i for i in range(len(counts)) if v < edges[i + 1]), len(counts) - 1)
        counts[k] += 1
    top = max(counts) or 1
    lo, hi = edges[0], edges[-1]
    pad, base, top_y = 8, HIST_HEIGHT - 18, 18

    def x(v: float) -> float:
        return pad + (HIST_WIDTH - 2 * pad) * (v - lo) / ((hi - lo) or 1.0)

    svg = [f'<figure class="hist"><svg class="chart scores" role="img" data-detector="{_esc(name)}" '
           f'width="{HIST_WIDTH}" height="{HIST_HEIGHT}" viewBox="0 0 {HIST_WIDTH} {HIST_HEIGHT}" '
           'xmlns="http://www.w3.org/2000/svg">', f"<title>{_esc(name)} scores</title>"]
    # The name goes to the side the threshold's label does not take.
    name_left = threshold is None or x(threshold) > HIST_WIDTH / 2
    svg.append(f'<text class="name" x="{pad if name_left else HIST_WIDTH - pad}" y="12" font-weight="bold" '
               f'text-anchor="{"start" if name_left else "end"}">{_esc(name)}</text>')
    for i, n in enumerate(counts):
        if n:
            h = (base - top_y) * n / top
            svg.append(f'<rect class="bin" x="{x(edges[i]) + 0.5:.1f}" y="{base - h:.1f}" '
                       f'width="{max(x(edges[i + 1]) - x(edges[i]) - 1, 1):.1f}" height="{h:.1f}" fill="#4393c3">'
                       f"<title>{_fmt(edges[i])} to {_fmt(edges[i + 1])}: {n}</title></rect>")
    svg.append(f'<line x1="{pad}" y1="{base}" x2="{HIST_WIDTH - pad}" y2="{base}" stroke="#444"/>')
    svg.append(f'<text x="{pad}" y="{HIST_HEIGHT - 4}">{_fmt(lo)}</text>'
               f'<text x="{HIST_WIDTH - pad}" y="{HIST_HEIGHT - 4}" text-anchor="end">{_fmt(hi)}</text>')
    if threshold is not None:
        # Whole-number bins [v, v+1): a distance threshold t admits the bin of t, so the line is at t+1.
        tx = x(threshold + (1.0 if lower and _integral(values, threshold) else 0.0))
        # The label sits at the top beside the line, on the side with room, clear of the axis labels.
        left = tx > HIST_WIDTH / 2
        svg.append(f'<line class="threshold" x1="{tx:.1f}" y1="{top_y - 2}" x2="{tx:.1f}" y2="{base}" stroke="#c00" '
                   'stroke-width="2" stroke-dasharray="4 3"/>'
                   f'<text class="threshold" x="{tx + (-4 if left else 4):.1f}" y="12" '
                   f'text-anchor="{"end" if left else "start"}" style="fill:#c00">threshold {_fmt(threshold)}</text>')
    svg.append("</svg>")
    return "".join(svg) + f"<figcaption>{_esc(_caption(name, values, threshold, lower))}</figcaption></figure>"


def _edges(values: Sequence[float], threshold: float | None, lower: bool) -> list[float]:
    """Bin edges covering every value and the threshold; whole-number bins for distances."""
    if lower and _integral(values, threshold):
        top = int(max([*values, threshold or 0.0])) + 2  # one empty bin past the threshold
        step = max(1, -(-top // HIST_BINS))
        return [float(v) for v in range(0, top + step, step)]
    lo = min([*values, *([threshold] if threshold is not None else [])])
    hi = max([*values, *([threshold] if threshold is not None else [])])
    if hi - lo < 1e-9:
        lo, hi = lo - 0.01, hi + 0.01
    margin = (hi - lo) * 0.05
    lo, hi = lo - margin, hi + margin
    return [lo + (hi - lo) * k / HIST_BINS for k in range(HIST_BINS + 1)]


def _integral(values: Sequence[float], threshold: float | None) -> bool:
    return all(float(v).is_integer() for v in values) and (threshold is None or float(threshold).is_integer())


def _caption(name: str, values: Sequence[float], threshold: float | None, lower: bool) -> str:
    text = f"{name}: {len(values)} matched pairs"
    if threshold is None:
        return text
    side = "at most" if lower else "at least"
    nearest = max(values) if lower else min(values)
    return (f"{text}; a match needs {side} {_fmt(threshold)}; the pair closest to the threshold "
            f"scores {_fmt(nearest)}")


def _fmt(v: float) -> str:
    return f"{v:g}" if float(v).is_integer() else f"{v:.3f}"
