"""Findings reach the item of every section they concern, and never no item at all."""

from __future__ import annotations

from pathlib import Path

from pytest_leakcheck.report.model import Finding, Member, Report
from pytest_leakcheck.policy.load import Policy
from pytest_leakcheck.plugin.items import FILES, GROUPS, route, sections, select

POLICY = Policy(path=Path("leakcheck.yaml"), root=Path("."), split_names=("train", "val", "test"),
                pairs=(("train", "val"), ("train", "test"), ("val", "test")))


def finding(kind: str, *splits: str, severity: str = "error") -> Finding:
    members = tuple(Member(f"{s}/{n}.jpg", s) for n, s in enumerate(splits))
    return Finding(id=kind + "".join(splits), kind=kind, severity=severity, members=members)


def test_section_names_follow_the_policy() -> None:
    """One section per configured pair, then groups and files."""
    assert [s.name for s in sections(POLICY)] == ["train~val", "train~test", "val~test", GROUPS, FILES]


def test_cluster_over_three_splits_belongs_to_each_pair_it_covers() -> None:
    """train~val~test fails all three pair items."""
    among = sections(POLICY)
    assert route(finding("near-duplicate", "train", "val", "test"), among) == ("train~val", "train~test", "val~test")
    assert route(finding("identical-file", "train", "test"), among) == ("train~test",)


def test_kinds_route_to_groups_and_files() -> None:
    """Group rules go to groups, file problems to files, and an unclaimed finding falls back to files."""
    among = sections(POLICY)
    assert route(finding("group-split", "train", "test"), among) == (GROUPS,)
    assert route(finding("split-share", "train"), among) == (GROUPS,)
    assert route(finding("ungrouped-file", "train"), among) == (GROUPS,)
    assert route(finding("unreadable-image", "train"), among) == (FILES,)
    assert route(finding("near-duplicate", "train"), among) == (FILES,)


def test_within_split_sections_only_when_errors() -> None:
    """within_split: error adds train~train and friends; a same-split cluster routes there."""
    from dataclasses import replace

    among = sections(replace(POLICY, within_split="error"))
    assert "train~train" in [s.name for s in among]
    assert route(finding("near-duplicate", "train", "train"), among) == ("train~train",)


def test_select_keeps_one_section_and_severity() -> None:
    """select filters by section and severity and leaves store warnings out."""
    report = Report("p", (finding("identical-file", "train", "test"),
                          finding("identical-file", "val", "test", severity="warning"),
                          finding("missing-file", "test")), warnings=("store moved aside",))
    among = sections(POLICY)
    picked = select(report, "val~test", among, severity="error")
    assert picked.findings == () and picked.warnings == ()
    assert [f.kind for f in select(report, FILES, among).findings] == ["missing-file"]
