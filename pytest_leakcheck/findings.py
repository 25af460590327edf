"""Turn matches and file-level issues into findings a person can act on.

Matches that chain (test A ~ train B ~ val C) become one finding: fixing a
leak means moving or deleting the whole cluster, not one pair of it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .errors import EXIT_CLEAN, EXIT_LEAKS
from .inventory import Inventory
from .names import to_bytes
from .policy import ORIENTATIONS, Policy
from .search import DETECTORS, Match, normalised_thumbs, orient_thumbs
from .signatures import Signatures

#: Finding kinds in report order.
KINDS = (
    "identical-file",
    "identical-pixels",
    "near-duplicate",
    "group-split",
    "split-share",
    "unreadable-image",
    "ambiguous-file",
    "missing-file",
    "unassigned-file",
    "ungrouped-file",
)
_RANK = {"error": 0, "warning": 1, "off": 2}
_KIND_OF = {"identical-file": "identical-file", "identical-pixels": "identical-pixels",
            "phash": "near-duplicate", "thumbnail": "near-duplicate", "aligned": "near-duplicate"}
# A cluster of a thousand blank frames is one finding; listing every edge
# would bury the report, so evidence keeps the strongest few.
MAX_PAIRS = 20


@dataclass(frozen=True)
class Member:
    path: str
    split: str
    digest: str = ""


@dataclass(frozen=True)
class Pair:
    """One edge of a cluster: ``a`` transformed by ``orientation`` matches ``b``."""

    a: str
    b: str
    detector: str
    value: float
    orientation: str = "identity"
    signals: dict[str, float] = field(default_factory=dict)


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
    #: when it was already there at the base of a pull request (changes.py).
    status: str = "new"

    @property
    def splits(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m.split for m in self.members if m.split))

    @property
    def split_pair(self) -> str:
        """``train~test`` style label in policy order; one split for a within-split cluster."""
        return "~".join(self.splits) or "-"


@dataclass(frozen=True)
class Report:
    policy_path: str
    findings: tuple[Finding, ...]
    stats: dict[str, float] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    #: Baseline entries that match no finding any more.
    stale: tuple[str, ...] = ()

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == "error")

    @property
    def exit_code(self) -> int:
        """Only error-level findings the baseline does not know fail the check."""
        return EXIT_LEAKS if any(f.status == "new" for f in self.errors) else EXIT_CLEAN

    def counts(self) -> dict[str, dict[str, int]]:
        """Findings per kind and per split pair, errors and warnings apart."""
        out: dict[str, dict[str, int]] = {"kind": {}, "split_pair": {}, "severity": {}}
        for f in self.findings:
            for key, value in (("kind", f.kind), ("split_pair", f.split_pair), ("severity", f.severity)):
                out[key][value] = out[key].get(value, 0) + 1
        return out


def finding_id(kind: str, keys: Sequence[str]) -> str:
    """Short and stable under renames: built from content digests, not paths."""
    text = kind + "\n" + "\n".join(sorted(keys))
    # to_bytes, not encode(): a key may be a file name that is not UTF-8.
    return hashlib.sha256(to_bytes(text)).hexdigest()[:12]


def _severity(match: Match, same_split: bool, policy: Policy) -> str:
    det = policy.detectors
    sev = {
        "identical-file": det.identical_file,
        "identical-pixels": det.identical_pixels,
        "phash": det.phash.severity,
        "thumbnail": det.thumbnail.severity,
        "aligned": det.aligned.severity,
    }[match.detector]
    if same_split:
        sev = max(sev, policy.within_split, key=_RANK.__getitem__)
    return sev


def _strength(match: Match, policy: Policy) -> float:
    if match.detector == "phash":
        return 1.0 - match.value / policy.detectors.phash.bits
    if match.detector in ("thumbnail", "aligned"):
        return match.value
    return 1.0


def _signals(i: int, j: int, orientation: str, sigs: Signatures) -> dict[str, float]:
    """Every cheap signal for one pair, so a reader sees more than the one that fired."""
    k = ORIENTATIONS.index(orientation)
    dist = int(np.bitwise_count(sigs.phash[i, k] ^ sigs.phash[j, 0]).sum())
    ti = orient_thumbs(normalised_thumbs(sigs.thumb[i : i + 1]), orientation)[0]
    tj = normalised_thumbs(sigs.thumb[j : j + 1])[0]
    return {"phash_distance": dist, "thumbnail_cosine": round(float(ti @ tj), 4)}


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[int, int] = {}

    def find(self, x: int) -> int:
        self.parent.setdefault(x, x)
        root = x
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[x] != root:
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def _clusters(matches: Sequence[Match], inv: Inventory, sigs: Signatures, policy: Policy) -> list[Finding]:
    split_order = {s: n for n, s in enumerate(inv.splits)}
    uf = _UnionFind()
    for m in matches:
        uf.union(m.i, m.j)
    edges: dict[int, list[Match]] = {}
    for m in matches:
        edges.setdefault(uf.find(m.i), []).append(m)
    out = []
    for root in sorted(edges):
        group = edges[root]
        cross = [m for m in group if inv.records[m.i].split != inv.records[m.j].split]
        decisive = cross or group
        sev_of = {id(m): _severity(m, not cross, policy) for m in decisive}
        severity = min(sev_of.values(), key=_RANK.__getitem__)
        if severity == "off":
            continue
        decisive = [m for m in decisive if sev_of[id(m)] != "off"]
        kind = _KIND_OF[min((m.detector for m in decisive), key=DETECTORS.index)]
        decisive.sort(key=lambda m: (-_strength(m, policy), DETECTORS.index(m.detector), m.i, m.j))
        best = decisive[0]
        rows = sorted({r for m in group for r in (m.i, m.j)},
                      key=lambda r: (split_order.get(inv.records[r].split, 99), inv.records[r].path))
        members = tuple(Member(inv.records[r].path, inv.records[r].split, sigs.digests[r].hex()) for r in rows)
        evidence: dict[str, float] = {}
        for m in decisive:
            if m.detector == "phash":
                evidence["phash_distance"] = min(evidence.get("phash_distance", 1e9), m.value)
            elif m.detector == "thumbnail":
                evidence["thumbnail_cosine"] = max(evidence.get("thumbnail_cosine", -1.0), m.value)
            elif m.detector == "aligned":
                evidence["aligned_score"] = max(evidence.get("aligned_score", -1.0), m.value)
        pairs = []
        seen: set[tuple[int, int]] = set()
        for m in decisive:
            # One line per pair of files, whichever side the search queried from.
            if (min(m.i, m.j), max(m.i, m.j)) in seen or len(pairs) >= MAX_PAIRS:
                continue
            seen.add((min(m.i, m.j), max(m.i, m.j)))
            signals = _signals(m.i, m.j, m.orientation, sigs) if sigs.valid[m.i] and sigs.valid[m.j] else {}
            pairs.append(Pair(inv.records[m.i].path, inv.records[m.j].path, m.detector, m.value,
                              m.orientation, signals))
        out.append(Finding(
            id=finding_id(kind, [m.digest for m in members]),
            kind=kind,
            severity=severity,
            members=members,
            evidence=evidence,
            orientation=best.orientation,
            pairs=tuple(pairs),
            strength=round(_strength(best, policy), 4),
        ))
    return out


def _file_findings(inv: Inventory, sigs: Signatures, policy: Policy) -> list[Finding]:
    rules = policy.files
    out = []
    kinds = {"unassigned": "unassigned-file", "ambiguous": "ambiguous-file", "missing": "missing-file"}
    for issue in inv.issues:
        severity = getattr(rules, issue.kind)
        if severity == "off":
            continue
        kind = kinds[issue.kind]
        out.append(Finding(
            id=finding_id(kind, [issue.path]),
            kind=kind,
            severity=severity,
            members=(Member(issue.path, "+".join(issue.splits)),),
            message=issue.detail,
        ))
    if rules.unreadable != "off":
        for row, why in sorted(sigs.errors.items()):
            rec = inv.records[row]
            digest = sigs.digests[row].hex()
            out.append(Finding(
                id=finding_id("unreadable-image", [digest or rec.path]),
                kind="unreadable-image",
                severity=rules.unreadable,
                members=(Member(rec.path, rec.split, digest),),
                message=why,
            ))
    return out


def build(
    matches: Sequence[Match],
    inv: Inventory,
    sigs: Signatures,
    policy: Policy,
    *,
    stats: dict | None = None,
    warnings: Sequence[str] = (),
    focus: set[str] | None = None,
    extra: Sequence[Finding] = (),
) -> Report:
    """All findings, in a deterministic order: errors first, then the strongest.

    ``extra`` are findings other steps built (group rules).  With ``focus``
    only findings that involve one of those paths are kept.
    """
    findings = _clusters(matches, inv, sigs, policy) + _file_findings(inv, sigs, policy)
    findings += extra
    if focus is not None:
        findings = [f for f in findings if any(m.path in focus for m in f.members)]
    findings.sort(key=lambda f: (_RANK[f.severity], KINDS.index(f.kind), -f.strength,
                                 f.members[0].path if f.members else "", f.id))
    return Report(
        policy_path=str(policy.path),
        findings=tuple(findings),
        stats=dict(stats or {}),
        warnings=tuple(warnings),
    )
