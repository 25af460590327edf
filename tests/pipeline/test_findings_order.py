"""The report's order (held-out probe 11): a duplicate inside one split is no leak, so it never
hides a finding across splits from the findings the text report shows in full."""

from __future__ import annotations

from pytest_leakcheck.pipeline.findings import ordered
from pytest_leakcheck.render import text
from pytest_leakcheck.report.model import Finding, Link, Member, Report


def _copy(fid: str, kind: str, severity: str, a: tuple[str, str], b: tuple[str, str]) -> Finding:
    return Finding(fid, kind, severity, (Member(a[0], a[1]), Member(b[0], b[1], link=Link(a[0], kind, 0.0))))


def _within(n: int) -> list[Finding]:
    """``n`` byte copies inside train, as a converter writing ``img<N>.jpg`` beside each export file leaves."""
    return [_copy(f"w{k:04d}", "identical-file", "warning", (f"train/c{k:03d}.jpg", "train"),
                  (f"train/img{k}.jpg", "train")) for k in range(n)]


def test_warnings_across_splits_come_before_copies_inside_one_split() -> None:
    across = _copy("x0001", "same-scene", "warning", ("train/x.jpg", "train"), ("test/x.jpg", "test"))
    got = ordered([*_within(60), across])
    assert got[0] is across


def test_an_error_inside_one_split_still_comes_before_every_warning() -> None:
    inside = _copy("e0001", "near-duplicate", "error", ("train/e.jpg", "train"), ("train/f.jpg", "train"))
    across = _copy("x0001", "same-scene", "warning", ("train/x.jpg", "train"), ("test/x.jpg", "test"))
    assert ordered([across, inside])[0] is inside


def test_a_label_conflict_inside_one_split_keeps_its_place_before_a_shared_scene_note() -> None:
    conflict = _copy("l0001", "label-conflict", "warning", ("train/a/p.jpg", "train"), ("train/b/p.jpg", "train"))
    note = Finding("s0001", "shared-scene", "warning", (Member("train/x.jpg", "train"), Member("test/y.jpg", "test")))
    assert ordered([note, conflict])[0] is conflict


def test_the_text_report_shows_the_warning_across_splits_in_full() -> None:
    across = _copy("x0001", "same-scene", "warning", ("train/x.jpg", "train"), ("test/x.jpg", "test"))
    out = text.render(Report(policy_path="leakcheck.yaml", findings=ordered([*_within(60), across])))
    assert "WARNING same-scene  train~test  [x0001]" in out.split("more warnings")[0]
