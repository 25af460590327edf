"""Properties of the baseline reader, `judge` ids and the hook's file sorting, over any input:
an answer or a LeakcheckError, never another exception (hardening, classes 10 and 11)."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
import yaml

pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_leakcheck.report import baseline
from pytest_leakcheck.errors import BaselineError, UsageError
from pytest_leakcheck.report.model import Finding, Member
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.ci.hook import classify

EXAMPLES = 200
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=8)
hex_ids = st.text("0123456789abcdef", min_size=12, max_size=12)
entries = st.fixed_dictionaries({}, optional={
    "kind": values, "verdict": st.sampled_from(["duplicate", "distinct", "maybe", None]) | values,
    "reason": values, "splits": st.lists(st.text(max_size=5), max_size=3) | values,
    "paths": values, "digests": st.lists(st.text("0123456789abcdef", min_size=64, max_size=64), max_size=2) | values,
})


@SETTINGS
@pytest.mark.slow
@given(version=st.sampled_from([1, 2]) | values,
       findings=st.dictionaries(hex_ids | st.text(max_size=12), entries, max_size=3))
def test_any_baseline_document_loads_or_is_a_baseline_error(tmp_path: Path, version, findings) -> None:
    """Whatever the entries hold, `load` gives a Baseline or a BaselineError naming the file."""
    path = tmp_path / "b.yaml"
    path.write_text(yaml.safe_dump({"version": version, "findings": findings}))
    try:
        loaded = baseline.load(path)
    except BaselineError as exc:
        assert str(path) in str(exc)
        return
    for e in loaded.entries:
        assert e.splits is None or all(isinstance(s, str) and s for s in e.splits)
    # What we write reads back as the same entries: splits survive the round trip.
    path.write_text(baseline.dumps(loaded))
    assert baseline.load(path).entries == loaded.entries


@SETTINGS
@given(prefix=st.text(max_size=16) | st.text("0123456789abcdefABCDEF ", max_size=14))
def test_any_judge_id_is_a_prefix_or_a_usage_error(prefix: str) -> None:
    """`check_prefix` accepts exactly 6 to 12 hex digits (any case, outer spaces), else a usage error."""
    text = prefix.strip().lower()
    ok = 6 <= len(text) <= 12 and all(c in string.hexdigits for c in text)
    try:
        assert baseline.check_prefix(prefix) == text and ok
    except UsageError:
        assert not ok


@SETTINGS
@pytest.mark.slow
@given(judged=st.sets(st.sampled_from(["train", "val", "test", "extra"]), max_size=3),
       now=st.sets(st.sampled_from(["train", "val", "test", "extra"]), min_size=1, max_size=3))
def test_an_entry_holds_exactly_for_subsets_of_its_splits(judged: set[str], now: set[str]) -> None:
    """Same content, members in ``now``: accepted iff ``now`` is within the judged splits."""
    members = tuple(Member(f"{s}/x.jpg", s, "ab" * 32) for s in sorted(now))
    finding = Finding("0123456789ab", "identical-file", "error", members)
    entry = baseline.Entry("0123456789ab", "identical-file", tuple(m.digest for m in members),
                           verdict="duplicate", splits=tuple(sorted(judged)))
    assert (baseline.Baseline(None, (entry,)).match(finding) is not None) == (now <= judged)


names = st.lists(st.text(min_size=1, max_size=12).filter(lambda n: "\0" not in n), max_size=6)


@pytest.mark.slow
@SETTINGS
@given(files=names)
def test_hook_sorts_any_file_names_without_raising(tmp_path: Path, files: list[str]) -> None:
    """Any staged names (control characters, `..`, absolute paths) sort into focus and inputs."""
    root = tmp_path / "data"
    root.mkdir(exist_ok=True)
    (root / "leakcheck.yaml").write_text("version: 1\nsplits:\n  train: [train/**]\n")
    staged = classify(load(root / "leakcheck.yaml"), [*files, "data/leakcheck.yaml"], cwd=tmp_path)
    assert staged.inputs[-1] == "data/leakcheck.yaml"
    assert all(not f.startswith("../") for f in staged.focus)
