"""One picture under two labels: a labelling error, said as one.

A cluster of copies (same bytes, same pixels, or a near-duplicate no weak link
holds) whose members carry different labels (``dataset/labels.py``) is the same
image labelled twice.  Within one split it becomes a ``label-conflict`` finding
("same image, 2 labels (shorts, skirt)") at ``pairs.label_conflict`` or the
copy's own severity, whichever is higher: the fix is to keep one copy with the
right label, not to move files between splits.  Across splits the copy stays
what it is (a leak, with its severity), and its message names the labels.
Another shot of a scene (``same-scene``) or a weak link is no evidence that the
image is the same, so neither is called a conflict.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from ..report.model import Finding, Report, finding_id
from .findings import ordered

#: Kinds whose members are one image: only those can carry a label conflict.
SAME_IMAGE = ("identical-file", "identical-pixels", "near-duplicate")
_RANK = {"error": 0, "warning": 1, "off": 2}


def apply(report: Report, labels: Mapping[str, str], severity: str) -> Report:
    """``report`` with its copies under two labels said as such; their count in ``stats["label_conflicts"]``."""
    if severity == "off" or not labels:
        return report
    findings = tuple(judged(f, labels, severity) for f in report.findings)
    changed = sum(a is not b for a, b in zip(findings, report.findings))
    if not changed:
        return report
    within = sum(f.kind == "label-conflict" for f in findings)
    # A conflict is a kind of its own, ordered after near-duplicates and other shots of a scene: left in
    # its copy's place, 137 of them hid every cross-split warning of `isic` (`benchmarks/field.py --only isic`).
    return replace(report, findings=ordered(findings),
                   stats={**report.stats, "label_conflicts": {"within_split": within, "across_splits": changed - within}})


def judged(f: Finding, labels: Mapping[str, str], severity: str) -> Finding:
    """``f`` as a label conflict when its members are one image under two labels; else ``f`` itself."""
    if f.kind not in SAME_IMAGE or f.weak:
        return f
    names = list(dict.fromkeys(labels[m.path] for m in f.members if m.path in labels))
    if len(names) < 2:
        return f
    said = ", ".join(names)
    if len(f.splits) > 1:  # a leak first: the labels are said beside it
        return replace(f, message=f"also under {len(names)} labels ({said})")
    return replace(f, kind="label-conflict", id=finding_id("label-conflict", [m.digest for m in f.members]),
                   severity=min(f.severity, severity, key=_RANK.__getitem__),
                   message=f"same image, {len(names)} labels ({said})")
