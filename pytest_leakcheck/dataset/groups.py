"""Resolve each file's group (part, session, video, patient) and check that no group spans splits.

Hashes cannot see the next frame of a video or a second photo of the same
part, but file names, folders and annotation files can.  The policy lists
group rules; the first rule that yields a group for a file wins, in policy
order.  This step sits between inventory and findings: ``resolve`` fills in
``FileRecord.group`` and ``findings`` turns groups in several splits (and
split shares outside their bounds) into findings.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from .. import sources
from ..files import exportnames
from ..policy import userregex
from ..policy.grouprules import METADATA, GroupRule, ShareRules, names_people, people_column, reads_people
from .inventory import Inventory
from ..report.model import Finding, Member, finding_id
from ..policy.load import Policy

if TYPE_CHECKING:
    from .metagroups import Values

#: Files of one folder no group rule matches from which they are one finding, and how many it lists:
#: an export whose frames a rule reads beside files named by bare numbers (a held-out microscopy
#: time-lapse: 272 such files) was a warning a file.
FOLD_UNGROUPED, UNGROUPED_SHOWN = 10, 5


# --------------------------------------------------------------------------
# Resolution


def _folder(paths: Sequence[str], depth: int) -> list[str | None]:
    out: list[str | None] = []
    for p in paths:
        parts = p.split("/")
        out.append(parts[depth - 1] if len(parts) > depth else None)
    return out


def _by_regex(paths: Sequence[str], pattern: str) -> list[str | None]:
    program = userregex.compile(pattern)  # RE2: linear in each name, whatever the pattern
    return [userregex.search_group(program, p) for p in paths]


def _lookup(paths: Sequence[str], table: dict[str, str]) -> list[str | None]:
    """Match by the whole relative path, else by its shorter suffixes: COCO names are
    relative to an image folder, not to the policy root."""
    out: list[str | None] = []
    for p in paths:
        hit = table.get(p)
        parts = p.split("/")
        for k in range(1, len(parts)):
            if hit is not None:
                break
            hit = table.get("/".join(parts[k:]))
        out.append(hit)
    return out


def _rule_groups(rule: GroupRule, paths: Sequence[str], policy: Policy,
                 meta: Values | None = None) -> list[str | None]:
    if rule.source in METADATA:  # read by the signature stage: nothing before it (metagroups.py)
        return [None] * len(paths) if meta is None else meta.groups(rule, paths)
    if rule.source == "regex":
        return _by_regex(paths, str(rule.value))
    if rule.source == "folder_depth":
        return _folder(paths, int(rule.value))
    if rule.source == "source_name":
        return [exportnames.source_name(str(rule.value), p) for p in paths]
    if rule.source == "manifest_column":
        if policy.manifest is None or not policy.manifest.is_file():
            return [None] * len(paths)
        table = sources.table.read_column(policy.manifest, str(rule.value))
        return [table.get(p) for p in paths]
    if rule.source == "csv":
        table = sources.table.read_column(Path(str(rule.value)), rule.field, "group CSV")
        return _lookup(paths, table)
    return _lookup(paths, sources.coco.field_of(Path(str(rule.value)), rule.field))


def _pseudonyms(column: str, ids: list[str | None], policy: Policy) -> list[str | None]:
    """People's names or ids read from ``column`` as keyed pseudonyms (``person-3f9a2c1b7d4e``), as
    DICOM ids are (``metagroups.py``): under the store's key, so stable while the store is, and no
    record, finding, export or split manifest holds the value."""
    from ..signals.metadata import pseudonym
    from ..store import pseudonyms
    from .metagroups import SHOWN

    key = pseudonyms.key(_store_beside(policy))
    return [None if g is None else f"{column}-{pseudonym(key, g).hex()[:SHOWN]}" for g in ids]


def _store_beside(policy: Policy) -> Path | None:
    """The policy's store when one is on disk (the run opened it, or an earlier run left it): its key
    then names people alike in every run.  Else None, the process's key: a check under ``--no-cache``
    writes no key file, as it writes no store, and a policy whose ``cache`` leaves the allowed folders
    fails where the store is opened, not here."""
    from ..errors import StoreError
    from ..store.storefile import locate

    try:
        path = locate(policy.cache, policy.store_folders)
    except StoreError:
        return None
    return path if path.is_file() else None


def group_of(paths: Sequence[str], policy: Policy, meta: Values | None = None) -> list[str | None]:
    """Each path's group by the policy's rules; the first rule with an answer wins.

    Metadata rules (``dicom``, ``exif``, ``burst``) answer only with ``meta``, the signature stage's values.
    """
    out: list[str | None] = [None] * len(paths)
    todo = list(range(len(paths)))
    for rule in policy.groups:
        if not todo:
            break
        found = _rule_groups(rule, [paths[i] for i in todo], policy, meta)
        if reads_people(rule):
            found = _pseudonyms(people_column(rule), found, policy)
        for i, g in zip(todo, found):
            out[i] = g
        todo = [i for i in todo if out[i] is None]
    return out


def resolve(inv: Inventory, meta: Values | None = None) -> Inventory:
    """Fill in every record's group; without rules, the manifest's ``group`` column stays.

    Called again with ``meta`` once signatures hold what metadata rules read (pipeline/run.py).
    """
    policy = inv.policy
    if not policy.groups:
        return _source_people(inv)
    return _with_groups(inv, group_of([r.path for r in inv.records], policy, meta))


def _with_groups(inv: Inventory, found: Sequence[str | None]) -> Inventory:
    return replace(inv, records=tuple(replace(r, group=g) for r, g in zip(inv.records, found)))


def _source_people(inv: Inventory) -> Inventory:
    """``inv`` with the groups its split table gave as pseudonyms when the table's group column names
    people (``columns: {group: person}``, or a ``subject_id`` column a table source maps itself)."""
    spec = inv.policy.split_sources
    column = spec.column("group") if spec is not None else None
    if column is None or not names_people(column):
        return inv
    return _with_groups(inv, _pseudonyms(column, [r.group for r in inv.records], inv.policy))


# --------------------------------------------------------------------------
# Findings


def _repair(policy: Policy) -> str:
    """The `leakcheck split` command that repairs a group split, for the way this policy names splits."""
    if policy.manifest is not None:
        name = getattr(policy.manifest, "name", "MANIFEST")
        return f"`leakcheck split --keep {name} -o {name}` moves as few rows as possible"
    folders = bool(policy.splits) and all(len(g) == 1 and g[0].endswith("/**") for _, g in policy.splits)
    if policy.split_sources is not None or not folders:
        return "`leakcheck split --test 0.2 -o splits.csv` writes a manifest without it"
    # One folder per split: `leakcheck split` repairs the tree itself (splitapply.split_folders).
    return "`leakcheck split` prints the moves that repair this; `--apply` makes them"


def findings(inv: Inventory) -> list[Finding]:
    """``group-split``, ``ungrouped-file`` and ``split-share`` findings for one inventory."""
    policy = inv.policy
    order = {s: n for n, s in enumerate(inv.splits)}
    out: list[Finding] = []
    by_group: dict[str, list[tuple[str, str]]] = {}
    for r in inv.records:
        if r.group is not None:
            by_group.setdefault(r.group, []).append((r.path, r.split))
    if policy.group_split != "off":
        for group in sorted(by_group):
            files = by_group[group]
            counts = Counter(split for _, split in files)
            if len(counts) < 2:
                continue
            splits = sorted(counts, key=lambda s: (order.get(s, 99), s))
            # Every file of the group, split by split: a CI job reading the JSON report must find each
            # leaking file (a held-out group of train 408 / test 102 listed 3 of each, JSON included).
            # The report grows by at most one member per file: a file is in one group.  The renderers
            # for people show a few of each split (render/_common.py).
            members = [Member(p, split) for split in splits for p, s in sorted(files) if s == split]
            spread = ", ".join(f"{s} {counts[s]}" for s in splits)
            out.append(
                Finding(
                    id=finding_id("group-split", [group]),
                    kind="group-split",
                    severity=policy.group_split,
                    members=tuple(members),
                    evidence={s: float(counts[s]) for s in splits},
                    message=f"group {group!r} has files in {len(splits)} splits ({spread}); "
                    f"keep it in one ({_repair(policy)})",
                )
            )
    if policy.groups and policy.ungrouped != "own-group":
        out += _ungrouped(inv, policy.ungrouped)
    if policy.split_share is not None:
        out += _share_findings(inv, policy.split_share)
    return out


def _ungrouped(inv: Inventory, severity: str) -> list[Finding]:
    """A finding per file no group rule matches; a folder holding more than FOLD_UNGROUPED of them is one
    finding, which lists a few (its message counts them all)."""
    by_folder: dict[str, list[tuple[str, str]]] = {}
    for r in inv.records:
        if r.group is None:
            by_folder.setdefault(r.path.rpartition("/")[0], []).append((r.path, r.split))
    out = []
    for folder, files in by_folder.items():
        for chunk in [files] if len(files) > FOLD_UNGROUPED else [[f] for f in files]:
            if len(chunk) == 1:
                message = "no group rule matches this file; it counts as a group of its own"
            else:
                spread = ", ".join(f"{s} {n}" for s, n in sorted(Counter(s for _, s in chunk).items()))
                message = (f"no group rule matches {len(chunk)} files in {folder or '.'}/ ({spread}); "
                           "each counts as a group of its own")
            out.append(Finding(
                id=finding_id("ungrouped-file", [p for p, _ in chunk]),
                kind="ungrouped-file",
                severity=severity,
                members=tuple(Member(p, split) for p, split in chunk[:UNGROUPED_SHOWN]),
                message=message,
            ))
    return out


def shares(inv: Inventory, by: str) -> tuple[dict[str, int], int]:
    """Files (or groups; an ungrouped file is a group of its own) per split, and the total."""
    if by == "files":
        counts = Counter(r.split for r in inv.records)
        return dict(counts), len(inv.records)
    units = {(r.group if r.group is not None else "\0" + r.path, r.split) for r in inv.records}
    counts = Counter(split for _, split in units)
    return dict(counts), len({u for u, _ in units})


def _share_findings(inv: Inventory, rules: ShareRules) -> list[Finding]:
    counts, total = shares(inv, rules.by)
    out = []
    if rules.severity == "off" or total == 0:
        return out
    for split, lo, hi in rules.bounds:
        share = counts.get(split, 0) / total
        if lo <= share <= hi:
            continue
        out.append(
            Finding(
                id=finding_id("split-share", [split, rules.by]),
                kind="split-share",
                severity=rules.severity,
                members=(),
                evidence={"share": round(share, 4), "min": lo, "max": hi},
                message=(
                    f"split {split!r} has {share:.1%} of {rules.by} ({counts.get(split, 0)} "
                    f"of {total}); the policy allows {lo:.0%} to {hi:.0%} (`split_share.{split}`)"
                ),
            )
        )
    return out
