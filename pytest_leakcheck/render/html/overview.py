"""The overview at the top of the HTML report: pictures a reviewer reads at a glance.

- findings per split pair and kind, one table (the filters below it narrow the cards);
- per detector, the distribution of the closest pairs on both sides of its
  level: the matched pairs, and the nearest pairs that did not match
  (``stats["near_misses"]``, recorded by the search), with the level drawn,
  so a reviewer sees how much room there is between copies and the rest.
  Inline SVG, no external resource.

The thresholds come from the policy (``detectors.thresholds``) through the
renderer's options; the ``aligned`` detector's calibrated one from the
report's stats.  Without a threshold the histogram is drawn without the line.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from ...detectors import registry
from ...files.escape import html_text
from ...report.model import KINDS, Report

#: One colour per finding kind, in KINDS order; chosen to stay apart for colour-blind readers.
PALETTE = ("#b2182b", "#d6604d", "#f4a582", "#2166ac", "#4393c3", "#762a83", "#9970ab",
           "#5aae61", "#a6dba0", "#878787")
HIST_WIDTH, HIST_HEIGHT, HIST_BINS = 420, 110, 20


#: Split names come from the policy or a manifest: the HTML medium's one rule.
_esc = html_text


def _colour(kind: str) -> str:
    return PALETTE[KINDS.index(kind) % len(PALETTE)] if kind in KINDS else PALETTE[-1]


def overview(report: Report, thresholds: Mapping[str, tuple[float, bool]] | None = None) -> str:
    """The overview section's HTML; empty when there are no findings."""
    if not report.findings:
        return ""
    out = ['<section class="overview" id="overview"><h2>Overview</h2>', _pairs_table(report)]
    charts = [_histogram(name, values, misses, limit)
              for name, values, misses, limit in _scores(report, thresholds or {})]
    if charts:
        out.append("<h3>Closest pairs per detector: matched, and the nearest that did not match</h3>"
                   '<div class="hists">' + "".join(charts) + "</div>")
    out.append("</section>")
    return "\n".join(out)


# --------------------------------------------------------------------------
# Findings per split pair and kind


def _pairs_table(report: Report) -> str:
    counts = Counter((f.split_pair or "-", f.kind) for f in report.findings)
    pairs = sorted({p for p, _ in counts}, key=lambda p: (-sum(n for (q, _), n in counts.items() if q == p), p))
    kinds = [k for k in (*KINDS, *sorted({k for _, k in counts} - set(KINDS))) if any(k == c for _, c in counts)]
    head = "".join(f'<th><i style="background:{_colour(k)}"></i>{_esc(k)}</th>' for k in kinds)
    rows = "".join(f"<tr><th>{_esc(p)}</th>" + "".join(f"<td>{counts[(p, k)] or ''}</td>" for k in kinds)
                   + f"<td>{sum(counts[(p, k)] for k in kinds)}</td></tr>" for p in pairs)
    return (f'<h3>Findings per split pair and kind</h3><table class="counts"><tr><th>split pair</th>{head}'
            f"<th>all</th></tr>{rows}</table>")


# --------------------------------------------------------------------------
# Score distributions


Scores = list[tuple[str, list[float], list[float], "tuple[float, bool] | None"]]


def _scores(report: Report, thresholds: Mapping[str, tuple[float, bool]]) -> Scores:
    """Per detector: matched values, the nearest unmatched values, and its level (value, lower is stronger)."""
    values: dict[str, list[float]] = {}
    for f in report.findings:
        for p in f.pairs:
            values.setdefault(p.detector, []).append(float(p.value))
    limits = dict(thresholds)
    misses: dict[str, list[float]] = {}
    for name, rec in (report.stats.get("near_misses") or {}).items():
        if isinstance(rec, dict):
            misses[str(name)] = [float(v) for v in rec.get("values", ())]
            if "level" in rec:
                limits.setdefault(str(name), (float(rec["level"]), bool(rec.get("lower_is_stronger", False))))
    for d in registry():  # thresholds calibrated on this data (aligned's) are in the report
        value = d.calibrated(report.stats.get(d.section))
        if value is not None:
            limits.setdefault(d.name, (value, d.lower_is_stronger))
    names = sorted(set(values) | set(misses))
    # Identical detectors have no score to be near a threshold of: every value is the same.
    return [(name, values.get(name, []), misses.get(name, []), limits.get(name)) for name in names
            if name in limits or len(set(values.get(name, []))) > 1]


def _bins(values: Sequence[float], edges: Sequence[float]) -> list[int]:
    counts = [0] * (len(edges) - 1)
    for v in values:
        k = next((i for i in range(len(counts)) if v < edges[i + 1]), len(counts) - 1)
        counts[k] += 1
    return counts


#: Matched pairs, and the nearest pairs that did not match.
MATCHED, MISSED = "#4393c3", "#bbbbbb"


def _histogram(name: str, values: Sequence[float], misses: Sequence[float],
               limit: tuple[float, bool] | None) -> str:
    lower = limit[1] if limit else False
    threshold = limit[0] if limit else None
    edges = _edges([*values, *misses], threshold, lower)
    series = [(MATCHED, "matched", _bins(values, edges)), (MISSED, "not matched", _bins(misses, edges))]
    top = max(max(c) for _, _, c in series) or 1
    lo, hi = edges[0], edges[-1]
    pad, base, top_y = 8, HIST_HEIGHT - 18, 18

    def x(v: float) -> float:
        return pad + (HIST_WIDTH - 2 * pad) * (v - lo) / ((hi - lo) or 1.0)

    svg = [f'<figure class="hist"><svg class="chart scores" role="img" data-detector="{_esc(name)}" '
           f'width="{HIST_WIDTH}" height="{HIST_HEIGHT}" viewBox="0 0 {HIST_WIDTH} {HIST_HEIGHT}" '
           'xmlns="http://www.w3.org/2000/svg">', f"<title>{_esc(name)} closest pairs</title>"]
    # The name goes to the side the threshold's label does not take.
    name_left = threshold is None or x(threshold) > HIST_WIDTH / 2
    svg.append(f'<text class="name" x="{pad if name_left else HIST_WIDTH - pad}" y="12" font-weight="bold" '
               f'text-anchor="{"start" if name_left else "end"}">{_esc(name)}</text>')
    for colour, what, counts in series:
        cls = "bin" if what == "matched" else "bin miss"
        for i, n in enumerate(counts):
            if n:  # matched and missed share a bin only at a level's edge: stacked
                below = _below(series, i, what) * (base - top_y) / top
                h = (base - top_y) * n / top
                svg.append(f'<rect class="{cls}" x="{x(edges[i]) + 0.5:.1f}" y="{base - below - h:.1f}" '
                           f'width="{max(x(edges[i + 1]) - x(edges[i]) - 1, 1):.1f}" height="{h:.1f}" '
                           f'fill="{colour}"><title>{_fmt(edges[i])} to {_fmt(edges[i + 1])}: {n} {what}'
                           "</title></rect>")
    svg.append(f'<line x1="{pad}" y1="{base}" x2="{HIST_WIDTH - pad}" y2="{base}" stroke="#444"/>')
    svg.append(f'<text x="{pad}" y="{HIST_HEIGHT - 4}">{_fmt(lo)}</text>'
               f'<text x="{HIST_WIDTH - pad}" y="{HIST_HEIGHT - 4}" text-anchor="end">{_fmt(hi)}</text>')
    if threshold is not None:
        # Whole-number bins [v, v+1): a distance threshold t admits the bin of t, so the line is at t+1.
        tx = x(threshold + (1.0 if lower and _integral([*values, *misses], threshold) else 0.0))
        # The label sits at the top beside the line, on the side with room, clear of the axis labels.
        left = tx > HIST_WIDTH / 2
        svg.append(f'<line class="threshold" x1="{tx:.1f}" y1="{top_y - 2}" x2="{tx:.1f}" y2="{base}" stroke="#c00" '
                   'stroke-width="2" stroke-dasharray="4 3"/>'
                   f'<text class="threshold" x="{tx + (-4 if left else 4):.1f}" y="12" '
                   f'text-anchor="{"end" if left else "start"}" style="fill:#c00">level {_fmt(threshold)}</text>')
    svg.append("</svg>")
    caption = _caption(name, values, misses, threshold, lower)
    return "".join(svg) + f"<figcaption>{_esc(caption)}</figcaption></figure>"


def _below(series: Sequence[tuple[str, str, list[int]]], i: int, what: str) -> int:
    """Height already drawn in bin ``i`` by the series before ``what``."""
    total = 0
    for _, name, counts in series:
        if name == what:
            return total
        total += counts[i]
    return total


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


def _caption(name: str, values: Sequence[float], misses: Sequence[float], threshold: float | None,
             lower: bool) -> str:
    text = f"{name}: {len(values)} matched pairs"
    if misses:
        text += f", {len(misses)} nearest pairs that did not match (grey)"
    if threshold is None:
        return text
    side = "at most" if lower else "at least"
    text += f"; a match needs {side} {_fmt(threshold)}"
    if values:
        text += f"; the weakest match scores {_fmt(max(values) if lower else min(values))}"
    if misses:
        text += f"; the nearest miss scores {_fmt(min(misses) if lower else max(misses))}"
    return text


def _fmt(v: float) -> str:
    return f"{v:g}" if float(v).is_integer() else f"{v:.3f}"
