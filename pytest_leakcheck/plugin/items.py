"""Split a report into named sections: one per split pair, plus ``groups`` and ``files``.

The pytest plugin shows each section as one test item, so a user sees
``leakcheck.yaml::train~test`` pass or fail on its own.  Sections come from the
policy alone, never from a check, so collecting them (``--co``, every xdist
worker) is cheap and always gives the same list.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..dataset.inventory import manifest_splits
from ..report.model import FILE_KINDS, GROUP_PREFIXES, Finding, Report
from ..policy.load import Policy, with_splits

GROUPS = "groups"
FILES = "files"


@dataclass(frozen=True)
class Section:
    """One named slice of the report; ``splits`` is set for split-pair sections."""

    name: str
    splits: tuple[str, ...] = ()


def resolved(policy: Policy) -> Policy:
    """The policy with split names and pairs filled in, reading a manifest if it has one."""
    if (policy.split_sources is not None) and not policy.split_names:
        return with_splits(policy, manifest_splits(policy))
    return policy


def sections(policy: Policy) -> tuple[Section, ...]:
    """Every configured split pair, each split on its own when duplicates inside it
    are errors, then ``groups`` and ``files``."""
    policy = resolved(policy)
    out = [Section(f"{a}~{b}", (a, b)) for a, b in policy.pairs]
    if policy.within_split == "error":
        out += [Section(f"{s}~{s}", (s,)) for s in policy.split_names]
    return (*out, Section(GROUPS), Section(FILES))


def route(finding: Finding, among: tuple[Section, ...]) -> tuple[str, ...]:
    """Names of the sections a finding belongs to.

    A cluster spanning three splits belongs to every pair section it covers.
    Anything no other section claims lands in ``files``, so no error-level
    finding can go unseen.
    """
    if finding.kind.startswith(GROUP_PREFIXES):
        return (GROUPS,)
    if finding.kind in FILE_KINDS:
        return (FILES,)
    splits = set(finding.splits)
    names = tuple(
        s.name for s in among
        if s.splits and (set(s.splits) == splits if len(s.splits) == 1 else set(s.splits) <= splits)
    )
    return names or (FILES,)


def select(report: Report, name: str, among: tuple[Section, ...], *, severity: str | None = None) -> Report:
    """The part of ``report`` that belongs to section ``name``, optionally one severity only.

    Store warnings stay with the whole report: they concern no one section.
    """
    kept = tuple(
        f for f in report.findings
        if name in route(f, among) and (severity is None or f.severity == severity)
    )
    return replace(report, findings=kept, warnings=())


def with_severity(report: Report, severity: str) -> Report:
    return replace(report, findings=tuple(f for f in report.findings if f.severity == severity))


def failing(report: Report, name: str, among: tuple[Section, ...]) -> Report:
    """What fails section ``name``: error-level findings the baseline does not already know."""
    errors = select(report, name, among, severity="error")
    return replace(errors, findings=errors.failing)
