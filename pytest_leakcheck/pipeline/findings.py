"""Turn matches and file-level issues into findings a person can act on.

Matches that chain (test A ~ train B ~ val C) become one finding: fixing a
leak means moving or deleting the whole cluster, not one pair of it.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Sequence

from .. import detectors
from ..dataset.inventory import FileIssue, Inventory
from ..search.kernels import Match
from ..search.unionfind import UnionFind
from ..report.model import EXACT_KINDS, KINDS, Finding, Link, Member, Pair, Report, finding_id
from ..policy.load import Policy
from ..orientation import inverse
from ..files import members as shards
from ..signals import heif
from ..signals.families import Signatures
from . import clusters, grouplinks, scenenames, unseen
from .unassigned import unassigned_findings

_RANK = {"error": 0, "warning": 1, "off": 2}
# A cluster of a thousand blank frames is one finding; listing every edge
# would bury the report, so evidence keeps the strongest few.
MAX_PAIRS = 20
#: Members a shared-scene note lists per split: it stands for the scene, it does not list it.
SCENE_SAMPLE = 3


def _severity(match: Match, same_split: bool, policy: Policy) -> str:
    sev = policy.detectors.of(detectors.get(match.detector)).severity
    if same_split:
        sev = max(sev, policy.within_split, key=_RANK.__getitem__)
    return sev


def _strength(match: Match, policy: Policy) -> float:
    det = detectors.get(match.detector)
    return det.strength(match, policy.detectors.of(det))


def _signals(i: int, j: int, orientation: str, sigs: Signatures, policy: Policy) -> dict[str, float]:
    """Every cheap signal for one pair, so a reader sees more than the one that fired."""
    out: dict[str, float] = {}
    for det in detectors.registry():
        out.update(det.pair_signals(sigs, i, j, orientation, policy.detectors.of(det)))
    return out


def _evidence(decisive: Sequence[Match]) -> dict[str, float]:
    """The strongest value of each detector's evidence over a cluster's decisive matches."""
    evidence: dict[str, float] = {}
    for m in decisive:
        det = detectors.get(m.detector)
        key = det.evidence_key
        if key is None:
            continue
        if key not in evidence:
            evidence[key] = m.value
        else:
            evidence[key] = min(evidence[key], m.value) if det.lower_is_stronger else max(evidence[key], m.value)
    return evidence


def _level(m: Match, sigs: Signatures, policy: Policy) -> str:
    """A link's own level: its detector's severity, and ``warning`` for a weak match."""
    det = detectors.get(m.detector)
    sev = policy.detectors.of(det).severity
    return "warning" if sev == "error" and det.weak(m, sigs, policy) else sev


def _clusters(matches: Sequence[Match], inv: Inventory, sigs: Signatures, policy: Policy,
              tally: grouplinks.Tally) -> list[Finding]:
    # A copy needs two images: a file that does not decode (zero bytes, corrupt,
    # a bomb, gone) is an unreadable-image finding and never a copy, whichever
    # detector linked it.  Equal bytes of two empty or equally broken files say
    # nothing about leaked content, only that neither can be trained on.
    matches = [m for m in matches if sigs.valid[m.i] and sigs.valid[m.j]]
    level = {id(m): _level(m, sigs, policy) for m in matches}
    matches = [m for m in matches if level[id(m)] != "off"]
    if tally.split_ids:
        matches = grouplinks.fold(matches, level, inv, tally)
    rank = _ranks()
    judge = clusters.Judge(
        warning=lambda m: level[id(m)] == "warning",
        exact=lambda m: detectors.get(m.detector).kind in EXACT_KINDS,
        order=lambda m: _merge_order(m, policy, rank, inv),
        crossing=lambda m: inv.records[m.i].split != inv.records[m.j].split,
        stands=lambda m: detectors.get(m.detector).stands_out_of_scene,
    )
    grouping = clusters.group(matches, judge, int(sum(bool(v) for v in sigs.valid)))
    out = [f for root in sorted(grouping.clusters)
           if (f := _finding(grouping.clusters[root], inv, sigs, policy)) is not None]
    out += [f for m, warning in grouping.bridges
            if (f := _finding([m], inv, sigs, policy, weak=warning)) is not None]
    held = scenenames.sizes([r.path for r in inv.records]) if grouping.scenes else Counter()
    return out + [_scene(s, inv, sigs, policy, held) for s in grouping.scenes]


def _merge_order(m: Match, policy: Policy, rank: dict[str, int], inv: Inventory) -> tuple:
    """The order links merge into clusters of at most ``clusters.MAX_MEMBERS`` files (and the bridge kept
    between two clusters): as :func:`_link_order`, but of one kind and detector, a link between two
    files of one group of the policy first.  It matters only where the cap binds: a web of copies
    across groups (one slice uploaded under many numbers, ``tumor`` of ``benchmarks/field.py``) filled
    its clusters by pHash 0 links between groups first, and a test file's link to its own group's
    train version, at pHash 2, was left between two full clusters, behind a stronger link."""
    kind, detector, *rest = _link_order(m, policy, rank)
    group = inv.records[m.i].group
    return (kind, detector, group is None or group != inv.records[m.j].group, *rest)


def _ranks() -> dict[str, int]:
    return {n: k for k, n in enumerate(detectors.names())}


def _link_order(m: Match, policy: Policy, rank: dict[str, int]) -> tuple:
    """Strongest link first: by the kind it makes, then detector rank, then strength."""
    return (KINDS.index(detectors.get(m.detector).kind), rank[m.detector], -_strength(m, policy), m.i, m.j)


def _finding(group: list[Match], inv: Inventory, sigs: Signatures, policy: Policy, *,
             weak: bool = False) -> Finding | None:
    """One cluster (or one weak link, ``weak``) as a finding; None when its severity is off."""
    split_order = {s: n for n, s in enumerate(inv.splits)}
    cross = [m for m in group if inv.records[m.i].split != inv.records[m.j].split]
    decisive = cross or group
    sev_of = {id(m): _severity(m, not cross, policy) for m in decisive}
    severity = min(sev_of.values(), key=_RANK.__getitem__)
    if weak and severity == "error":
        severity = "warning"  # a weak link is "please look", never a failed build
    if severity == "off":
        return None
    decisive = [m for m in decisive if sev_of[id(m)] != "off"]
    rank = _ranks()
    decisive.sort(key=lambda m: (-_strength(m, policy), rank[m.detector], m.i, m.j))
    best = decisive[0]
    rows = sorted({r for m in group for r in (m.i, m.j)},
                  key=lambda r: (split_order.get(inv.records[r].split, 99), inv.records[r].path))
    links = _tree(group, rows, policy, rank)
    # The headline is never stronger than the weakest link holding the cluster
    # together: a distinct image chained to a pair of exact copies by a
    # near-duplicate match makes the whole finding a near-duplicate.
    kind = max((detectors.get(m.detector).kind for m, _ in links.values()), key=KINDS.index)
    members = tuple(
        Member(inv.records[r].path, inv.records[r].split, sigs.digests[r].hex(), _member_link(r, links, inv, weak))
        for r in rows
    )
    keys = [m.digest for m in members] + (["weak-link"] if weak else [])
    return Finding(
        id=finding_id(kind, keys),
        kind=kind,
        severity=severity,
        members=members,
        evidence=_evidence(decisive),
        orientation=best.orientation,
        pairs=_pairs(decisive, inv, sigs, policy),
        strength=round(_strength(best, policy), 4),
    )


def _scene(scene: clusters.Scene, inv: Inventory, sigs: Signatures, policy: Policy,
           held: Counter[str]) -> Finding:
    """A web of near links over many files, once: counted, a few members and its strongest pairs shown."""
    split_order = {sp: n for n, sp in enumerate(inv.splits)}
    per_split = Counter(inv.records[r].split for r in scene.rows)
    by_detector = Counter(m.detector for m in scene.links)
    splits = ", ".join(f"{sp} {per_split[sp]}" for sp in sorted(per_split, key=lambda x: split_order.get(x, 99)))
    detectors_text = ", ".join(f"{n} {d}" for d, n in by_detector.most_common())
    if scene.whole:
        what = (f"{len(scene.rows)} images ({splits}) look like one scene (a fixed camera, one subject shot "
                f"again and again): {len(scene.links)} near links among them ({detectors_text}) are what other "
                "shots of this scene reach, so none is reported as a copy; exact copies, and copies that stand out "
                "from the scene, still are")
    else:
        what = (f"{len(scene.rows)} images ({splits}) are alike (one scene, or one kind of subject shot the "
                f"same way): {len(scene.links)} near links among them ({detectors_text}), too many to be "
                "copies, are not reported one by one; exact copies still are")
    rank = _ranks()
    # Links across splits first: a leak is one, and a copy folded into a note of look-alikes
    # (a stock invoice among one template's siblings, ``invoices`` of ``benchmarks/field.py``)
    # is found by looking at them, not at the within-split pairs of augmented copies.
    within = {id(m): inv.records[m.i].split == inv.records[m.j].split for m in scene.links}
    strongest = sorted(scene.links, key=lambda m: (within[id(m)], _link_order(m, policy, rank)))
    crossing = sum(not w for w in within.values())
    if crossing:
        what += f"; {crossing} of them cross splits, the strongest listed first"
    one = scenenames.joined(scene.links, lambda r: inv.records[r].path, lambda r: inv.records[r].split, held)
    if one is not None:
        what += one.clause()
    near = None
    if one is None and crossing:  # one recording holding the dataset: its neighbouring frames still say a leak
        near = scenenames.neighbours(strongest[:min(crossing, MAX_PAIRS)], lambda r: inv.records[r].path)
        what += near.clause() if near is not None else ""

    # A few members from each split stand for the scene; the JSON's pairs give its strongest links.
    sample: list[int] = []
    for sp in sorted(per_split, key=lambda x: split_order.get(x, 99)):
        sample += sorted((r for r in scene.rows if inv.records[r].split == sp),
                         key=lambda r: inv.records[r].path)[:SCENE_SAMPLE]
    return Finding(
        id=finding_id("shared-scene", [sigs.digests[r].hex() for r in scene.rows]),
        kind="shared-scene",
        severity="warning",
        members=tuple(Member(inv.records[r].path, inv.records[r].split, sigs.digests[r].hex()) for r in sample),
        pairs=_pairs(strongest, inv, sigs, policy),
        message=what,
        strength=0.0,
        # Counted for the report's note: the text report lists 50 findings, and a note comes last.
        evidence=({"recording_links": float(one.links)} if one is not None
                  else {"neighbour_links": float(near.links)} if near is not None else {}),
    )


def _tree(group: Sequence[Match], rows: Sequence[int], policy: Policy,
          rank: dict[str, int]) -> dict[int, tuple[Match, int]]:
    """Each member but the first -> (the match linking it, the member it links to).

    The links form a maximum spanning tree (strongest links first, Kruskal),
    so every member is stated by the strongest chain that reaches it.
    """
    ordered = sorted(group, key=lambda m: _link_order(m, policy, rank))
    uf = UnionFind()
    adjacent: dict[int, list[tuple[int, Match]]] = {}
    for m in ordered:
        if uf.find(m.i) != uf.find(m.j):
            uf.union(m.i, m.j)
            adjacent.setdefault(m.i, []).append((m.j, m))
            adjacent.setdefault(m.j, []).append((m.i, m))
    links: dict[int, tuple[Match, int]] = {}
    # Rooted at the first member as listed (the earliest split), so every file
    # after it says how it joined.  Which links form the tree does not depend
    # on the root, so files swapping splits only turns some links around.
    todo, seen = deque([rows[0]]), {rows[0]}
    while todo:
        node = todo.popleft()
        for other, m in adjacent.get(node, ()):
            if other not in seen:
                seen.add(other)
                links[other] = (m, node)
                todo.append(other)
    return links


def _member_link(row: int, links: dict[int, tuple[Match, int]], inv: Inventory, weak: bool) -> Link | None:
    if row not in links:
        return None
    m, to = links[row]
    # A match says "file i after o is file j"; from j's side that is the inverse.
    orientation = m.orientation if m.i == row else inverse(m.orientation)
    return Link(inv.records[to].path, m.detector, m.value, orientation, weak or m.weak)


def _pairs(decisive: Sequence[Match], inv: Inventory, sigs: Signatures, policy: Policy) -> tuple[Pair, ...]:
    pairs = []
    seen: set[tuple[int, int]] = set()
    for m in decisive:
        # One line per pair of files, whichever side the search queried from.
        if (min(m.i, m.j), max(m.i, m.j)) in seen or len(pairs) >= MAX_PAIRS:
            continue
        seen.add((min(m.i, m.j), max(m.i, m.j)))
        signals = _signals(m.i, m.j, m.orientation, sigs, policy) if sigs.valid[m.i] and sigs.valid[m.j] else {}
        pairs.append(Pair(inv.records[m.i].path, inv.records[m.j].path, m.detector, m.value,
                          m.orientation, signals))
    return tuple(pairs)


def _file_findings(inv: Inventory, sigs: Signatures, policy: Policy) -> list[Finding]:
    rules = policy.files
    out = []
    unassigned: list[FileIssue] = []
    kinds = {"unassigned": "unassigned-file", "ambiguous": "ambiguous-file", "missing": "missing-file",
             "outside_root": "outside-root", "not_examined": "not-examined", "pages": "not-examined"}
    for issue in inv.issues:
        if issue.kind == "pages":
            # The first page is checked, and many pipelines read no other: said, never failing.
            severity = "off" if rules.unreadable == "off" else "warning"
        elif issue.kind == "not_examined":
            # Unseen is never clean: in a split it may hide a leak, so it counts as an unreadable
            # image would (`files.unreadable`); outside every split it is a warning.
            severity = rules.unreadable if issue.splits or rules.unreadable == "off" else "warning"
        else:
            severity = getattr(rules, issue.kind)
        if severity == "off":
            continue
        if issue.kind == "unassigned":
            unassigned.append(issue)
            continue
        kind = kinds[issue.kind]
        out.append(Finding(
            id=finding_id(kind, [issue.path]),
            kind=kind,
            severity=severity,
            members=(Member(issue.path, "+".join(issue.splits)),),
            message=issue.detail,
        ))
    out += unassigned_findings(unassigned, rules.unassigned, inv)
    if rules.unreadable != "off":
        out += _unreadable(inv, sigs, rules.unreadable)
    return out + _left_out(inv, policy) + unseen.blind_spots(inv)


def _left_out(inv: Inventory, policy: Policy) -> list[Finding]:
    """A warning per split that `pairs.compare` leaves out of every pair: a copy there is never seen."""
    paired = {s for pair in policy.pairs for s in pair}
    if len(inv.splits) < 2:
        return []
    per_split = Counter(r.split for r in inv.records)
    out = []
    for split in inv.splits:
        if split in paired or not per_split[split]:
            continue
        out.append(Finding(
            id=finding_id("not-examined", [f"split:{split}"]),
            kind="not-examined",
            severity="warning",
            members=(),
            message=(f"split {split} ({per_split[split]} images) is in no pair of `pairs.compare`: copies between "
                     "it and the other splits are not searched"),
        ))
    return out


def _unreadable(inv: Inventory, sigs: Signatures, severity: str) -> list[Finding]:
    """One finding per distinct unreadable content: equal broken files (two empty
    ones) are listed together, so ids stay unique, as for a cluster of copies."""
    by_key: dict[str, list[int]] = {}
    for row in sorted(sigs.errors):
        # A file that could not be read has no digest; its path keys it.  Files no installed decoder
        # reads (HEIC without pillow-heif) are one finding: one reason, one fix.
        # Rows of a shard stored by path only are one finding per shard: one cause, one fix.
        key = ("reason:" + sigs.errors[row] if sigs.errors[row] == heif.NEEDS
               else "path-only:" + shards.shard_of(inv.records[row].path) if _path_only(inv, sigs, row)
               else sigs.digests[row].hex() or "path:" + inv.records[row].path)
        by_key.setdefault(key, []).append(row)
    split_order = {s: n for n, s in enumerate(inv.splits)}
    out = []
    for key, rows in by_key.items():
        rows.sort(key=lambda r: (split_order.get(inv.records[r].split, 99), inv.records[r].path))
        members = tuple(Member(inv.records[r].path, inv.records[r].split, sigs.digests[r].hex()) for r in rows)
        message = sigs.errors[rows[0]]
        if key.startswith("path-only:") and len(rows) > 1:
            shard, member = shards.split(members[0].path) or (members[0].path, "")
            message = shards.path_only_rows(shard, len(rows), member)
        out.append(Finding(
            id=finding_id("unreadable-image", [m.digest or m.path for m in members]),
            kind="unreadable-image",
            severity=severity,
            members=members,
            message=message,
        ))
    return out


def _path_only(inv: Inventory, sigs: Signatures, row: int) -> bool:
    return shards.PATH_ONLY in sigs.errors[row] and shards.is_member(inv.records[row].path)


def build(
    matches: Sequence[Match],
    inv: Inventory,
    sigs: Signatures,
    policy: Policy,
    *,
    focus: set[str] | None = None,
    extra: Sequence[Finding] = (),
) -> Report:
    """All findings, in a deterministic order: errors first, then the strongest.

    ``extra`` are findings other steps built (group rules).  With ``focus``
    only findings that involve one of those paths are kept.  The report's
    ``stats`` and ``warnings`` are the run's to fill in (run.py).
    """
    tally = grouplinks.Tally(frozenset(f.id for f in extra if f.kind == "group-split"))
    findings = _clusters(matches, inv, sigs, policy, tally) + _file_findings(inv, sigs, policy)
    findings += grouplinks.noted(extra, tally, grouplinks.searched(inv, sigs, policy, focus is not None))
    if focus is not None:
        # What was not examined may hide a change of this focus, and a finding about the policy
        # as a whole (no member) holds for any focus: both are kept.
        findings = [f for f in findings
                    if f.kind == "not-examined" or not f.members or any(m.path in focus for m in f.members)]
    return Report(
        policy_path=str(policy.path),
        findings=ordered(findings),
    )


def ordered(findings: Sequence[Finding]) -> tuple[Finding, ...]:
    """The report's order: errors first, copies inside one split last of their severity, then by kind
    (``KINDS``), then the strongest.

    Every step that changes a finding's kind or severity after ``build`` orders them again
    (``conflicts.apply``): the text report lists only the first findings in full, so a finding left
    in its old place can push others out of sight.  A duplicate inside one split is no leak: ordered
    by kind alone, 598 of them (a converter's byte copies beside a Roboflow export, held-out probe 11)
    filled the 50 findings shown and hid every warning across splits."""
    return tuple(sorted(findings, key=lambda f: (_RANK[f.severity], _within(f), KINDS.index(f.kind), -f.strength,
                                                 f.members[0].path if f.members else "", f.id)))


def _within(f: Finding) -> bool:
    """Whether ``f`` is copies inside one split (a label conflict is a cluster inside one split too, and
    no duplicate: it keeps its place)."""
    return f.is_copy and f.kind != "label-conflict" and len(f.splits) == 1
