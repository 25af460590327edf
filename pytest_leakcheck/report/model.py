"""The report model: plain data every renderer, the plugin and the baseline read.

Findings, their members and pairs, the kinds of finding, what fails a check,
and the JSON form of a report (written by ``--format json``, read back by
``leakcheck render`` and the Action).  It imports no numpy, no Pillow and no
other part of the engine, so re-rendering a saved report stays cheap.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import EXIT_CLEAN, EXIT_LEAKS, UsageError
from ..files import jsontext
from ..files.names import from_bytes, hex_bytes, json_text, to_bytes

#: Finding kinds in report order.
KINDS = (
    "identical-file",
    "identical-pixels",
    "near-duplicate",
    "same-scene",
    "label-conflict",
    "shared-scene",
    "group-split",
    "split-share",
    "unreadable-image",
    "ambiguous-file",
    "missing-file",
    "unassigned-file",
    "outside-root",
    "not-examined",
    "ungrouped-file",
)
#: Kinds that say "these files are copies of each other": a cluster of members.  A
#: ``label-conflict`` is a cluster of copies within one split that carry different labels.
COPY_KINDS = ("identical-file", "identical-pixels", "near-duplicate", "same-scene", "label-conflict")
#: Copy kinds whose links are equality (transitive): such clusters cannot chain.
EXACT_KINDS = ("identical-file", "identical-pixels")
#: Kinds about single files rather than about copies across splits.
FILE_KINDS = ("unreadable-image", "ambiguous-file", "missing-file", "unassigned-file", "outside-root", "not-examined")
#: Kinds that group rules (whole groups kept in one split) produce start with these.
GROUP_PREFIXES = ("group", "split-share", "ungrouped")
#: Version of the JSON report; bump it when a field changes meaning or goes away.
JSON_SCHEMA_VERSION = 1
JSON_SCHEMA = "pytest-leakcheck/report"


@dataclass(frozen=True)
class Link:
    """How a member joined its cluster: it, turned by ``orientation``, matches
    the member at ``to`` by ``detector`` with ``value`` (the detector's unit)."""

    to: str
    detector: str
    value: float
    orientation: str = "identity"
    #: A warning-level link ("probably the same shot, please look"), which never merges clusters.
    weak: bool = False


@dataclass(frozen=True)
class Member:
    path: str
    split: str
    digest: str = ""
    #: How this file is linked to the cluster; None for the first member (and non-copy findings).
    link: Link | None = None


@dataclass(frozen=True)
class Pair:
    """One edge of a cluster: ``a`` transformed by ``orientation`` matches ``b``."""

    a: str
    b: str
    detector: str
    value: float
    orientation: str = "identity"
    signals: dict[str, float] = field(default_factory=dict)
    #: Point evidence, for detectors that match points: (xa, ya, xb, yb) per matched point, each
    #: coordinate a fraction of the image's width or height, ``a`` in its turned frame.  The
    #: review page draws them; no detector of the hash or thumbnail kind fills it.
    points: tuple[tuple[float, float, float, float], ...] = ()


@dataclass(frozen=True)
class Finding:
    id: str
    kind: str
    severity: str
    members: tuple[Member, ...]
    evidence: dict[str, float] = field(default_factory=dict)
    orientation: str = "identity"
    pairs: tuple[Pair, ...] = ()
    message: str = ""
    strength: float = 1.0
    #: ``new``; ``known`` when the baseline accepts it (baseline.py); ``existing``
    #: when it was already there at the base of a pull request (pullrequest.py).
    status: str = "new"

    @property
    def splits(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m.split for m in self.members if m.split))

    @property
    def split_pair(self) -> str:
        """``train~test`` style label in policy order; one split for a within-split cluster."""
        return "~".join(self.splits) or "-"

    @property
    def is_copy(self) -> bool:
        return self.kind in COPY_KINDS

    @property
    def weak(self) -> bool:
        """Made by a weak link ("probably the same shot, please look"): a warning that
        joins two clusters without merging them (findings.py)."""
        return any(m.link is not None and m.link.weak for m in self.members)

    @property
    def fails(self) -> bool:
        """The one rule for what fails a check: a new error-level finding."""
        return self.severity == "error" and self.status == "new"


@dataclass(frozen=True)
class Report:
    policy_path: str
    findings: tuple[Finding, ...]
    stats: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    #: Baseline entries that match no finding any more.
    stale: tuple[str, ...] = ()

    @property
    def errors(self) -> tuple[Finding, ...]:
        """Every error-level finding, including those the baseline accepts."""
        return tuple(f for f in self.findings if f.severity == "error")

    @property
    def failing(self) -> tuple[Finding, ...]:
        """What fails the build: error-level findings the baseline does not accept."""
        return tuple(f for f in self.findings if f.fails)

    @property
    def exit_code(self) -> int:
        return EXIT_LEAKS if self.failing else EXIT_CLEAN

    def counts(self) -> dict[str, dict[str, int]]:
        """Findings per kind and per split pair, errors and warnings apart."""
        out: dict[str, dict[str, int]] = {"kind": {}, "split_pair": {}, "severity": {}}
        for f in self.findings:
            for key, value in (("kind", f.kind), ("split_pair", f.split_pair), ("severity", f.severity)):
                out[key][value] = out[key].get(value, 0) + 1
        return out


def per_split(members: Sequence[Member], k: int) -> tuple[Member, ...]:
    """The first ``k`` members of each split, in report order: a few examples that show every side of a
    long list (a group-split finding lists every file of its group, training files first)."""
    seen: dict[str, int] = {}
    out = []
    for m in members:
        if seen.get(m.split, 0) < k:
            seen[m.split] = seen.get(m.split, 0) + 1
            out.append(m)
    return tuple(out)


def finding_id(kind: str, keys: Sequence[str]) -> str:
    """Short and stable under renames: built from content digests, not paths."""
    text = kind + "\n" + "\n".join(sorted(keys))
    # to_bytes, not encode(): a key may be a file name that is not UTF-8.
    return hashlib.sha256(to_bytes(text)).hexdigest()[:12]


# --------------------------------------------------------------------------
# JSON form


def _path_fields(name: str, path: str) -> dict[str, str]:
    """``{name: path}``, plus ``{name}_bytes`` (hex) when the path is not UTF-8.

    JSON strings must be valid Unicode, so such a path is shown with its
    undecodable bytes as ``\\xNN`` and given exactly in hex beside it.
    """
    raw = hex_bytes(path)
    return {name: json_text(path)} if raw is None else {name: json_text(path), f"{name}_bytes": raw}


def _path(d: dict, name: str) -> str:
    """The exact path: from ``{name}_bytes`` (hex) when the name is not UTF-8."""
    raw = d.get(f"{name}_bytes")
    return from_bytes(bytes.fromhex(raw)) if isinstance(raw, str) else d[name]


def unicode_only(value: object) -> object:
    """``value`` with every string valid Unicode (messages may quote a file name)."""
    if isinstance(value, str):
        return json_text(value)
    if isinstance(value, dict):
        return {json_text(k) if isinstance(k, str) else k: unicode_only(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unicode_only(v) for v in value]
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
        "members": [{**_path_fields("path", m.path), "split": m.split, "digest": m.digest,
                     "link": _link_dict(m.link)} for m in f.members],
        "evidence": f.evidence,
        "pairs": [
            {**_path_fields("a", p.a), **_path_fields("b", p.b), "detector": p.detector, "value": p.value,
             "orientation": p.orientation, "signals": p.signals,
             **({"points": [list(q) for q in p.points]} if p.points else {})}
            for p in f.pairs
        ],
    }


def _link_dict(link: Link | None) -> dict | None:
    if link is None:
        return None
    return {**_path_fields("to", link.to), "detector": link.detector, "value": link.value,
            "orientation": link.orientation, "weak": link.weak}


def _link(d: dict | None) -> Link | None:
    if not d:
        return None
    return Link(_path(d, "to"), str(d["detector"]), float(d["value"]), d.get("orientation", "identity"),
                bool(d.get("weak", False)))


def report_dict(report: Report) -> dict:
    counts = report.counts()
    return {
        "schema": JSON_SCHEMA,
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


def finding_from_dict(d: dict) -> Finding:
    return Finding(
        id=str(d["id"]),
        kind=str(d["kind"]),
        severity=str(d["severity"]),
        members=tuple(Member(_path(m, "path"), m.get("split", ""), m.get("digest", ""), _link(m.get("link")))
                      for m in d["members"]),
        evidence=dict(d.get("evidence") or {}),
        orientation=d.get("orientation", "identity"),
        pairs=tuple(
            Pair(_path(p, "a"), _path(p, "b"), p["detector"], p["value"], p.get("orientation", "identity"),
                 dict(p.get("signals") or {}), tuple(tuple(float(c) for c in q[:4]) for q in p.get("points") or ()))
            for p in d.get("pairs") or ()
        ),
        message=d.get("message", ""),
        strength=float(d.get("strength", 1.0)),
        status=d.get("status", "new"),
    )


def load_report(path: str | Path) -> Report:
    """The JSON report saved at ``path``; a clear error if it is not one of ours."""
    path = Path(path)
    fix = "write one with `leakcheck check --format json -o PATH`"
    try:
        data = jsontext.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError("report file not found", path=str(path), fix=fix) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"cannot read report: {exc}", path=str(path)) from None
    if not isinstance(data, dict) or data.get("schema") != JSON_SCHEMA:
        raise UsageError("not a leakcheck JSON report", path=str(path), fix=fix)
    if data.get("version") != JSON_SCHEMA_VERSION:
        raise UsageError(f"report version {data.get('version')!r} is not {JSON_SCHEMA_VERSION}",
                         path=str(path), fix="re-run the check with this version of leakcheck")
    try:
        return report_from_dict(data)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise UsageError(f"malformed finding in report: {exc}", path=str(path)) from None


def report_from_dict(data: dict) -> Report:
    """The report a :func:`report_dict` holds; KeyError, TypeError or ValueError when it is malformed."""
    return Report(
        policy_path=str(data.get("policy", "")),
        findings=tuple(finding_from_dict(f) for f in data.get("findings", ())),
        stats=dict(data.get("stats") or {}),
        warnings=tuple(data.get("warnings") or ()),
    )
