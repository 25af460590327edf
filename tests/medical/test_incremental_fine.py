"""A check after a check (issue 36): aligned's fine verdicts are kept by content, so pairs whose two
files are unchanged are not judged again, and the findings are those of a cold check."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pytest_leakcheck import check, testing_dicom as td
from pytest_leakcheck.detectors.aligned import hires
from pytest_leakcheck.report.model import report_dict
from pytest_leakcheck.store.db import open_store

from ..conftest import write_policy
from .conftest import dicom_tree

GLOBS = "version: 1\nsplits: {train: [train/**], val: [val/**], test: [test/**]}\n"
STORE = ".leakcheck/cache.sqlite"


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, dict[str, object]]:
    planted = dicom_tree(tmp_path)
    write_policy(tmp_path, GLOBS)
    return tmp_path, planted


@pytest.fixture
def judged(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many pairs each call of the fine arithmetic judged (the work a kept verdict saves)."""
    calls: list[int] = []
    real = hires.passed_both_ways

    def counting(q32: np.ndarray, *args: object, **kwargs: object) -> np.ndarray:
        calls.append(len(q32))
        return real(q32, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(hires, "passed_both_ways", counting)
    return calls


def _seen(report: object) -> tuple[list[dict], list]:
    """The findings and the fine verdicts, as a report states them."""
    data = report_dict(report)  # type: ignore[arg-type]
    return data["findings"], data["stats"].get("aligned", {}).get("fine_pairs", [])


def test_a_warm_check_judges_nothing_again_and_finds_what_a_cold_one_finds(
        tree: tuple[Path, dict[str, object]], judged: list[int]) -> None:
    root, _ = tree
    policy = root / "leakcheck.yaml"
    cold = check(policy, jobs=1)
    findings, fine = _seen(cold)
    assert fine, "the set must give the fine verdict pairs to judge, or this test shows nothing"
    assert sum(judged) >= len(fine)
    judged.clear()
    warm = check(policy, jobs=1)
    assert sum(judged) == 0
    assert _seen(warm) == (findings, fine)


def test_a_stored_verdict_is_not_reused_when_a_file_changes(
        tree: tuple[Path, dict[str, object]], judged: list[int]) -> None:
    root, planted = tree
    policy = root / "leakcheck.yaml"
    _, before = _seen(check(policy, jobs=1))
    _, copy = planted["exported"]  # type: ignore[misc]
    assert any(copy in (a, b) for a, b, _ in before), before
    # The export again, of the slice moved by a pixel and noisier: a copy to every detector, with
    # other fine detail.
    hu = np.roll(td.ct_slice(101), (1, 1), (0, 1)) + np.random.default_rng(1).normal(0, 20, (128, 128))
    td.png_export(hu.astype(np.int16), root / copy)
    judged.clear()
    changed = check(policy, jobs=1)
    assert sum(judged) >= 1  # the changed file's pairs, judged afresh
    fresh = check(policy, use_cache=False, jobs=1)
    assert _seen(changed) == _seen(fresh)
    old = {(a, b): v for a, b, v in before}
    now = {(a, b): v for a, b, v in _seen(changed)[1]}
    moved = [k for k in old if copy in k and k in now and now[k] != old[k]]
    assert moved, "the changed copy's verdict must be judged again, not taken from the store"


def _tamper(root: Path, value: float) -> None:
    with open_store(root / STORE) as store:
        keys = [k for (k,) in store.conn.execute("SELECT key FROM snapshots") if k.startswith("aligned-fine:")]
        assert keys
        for key in keys:
            arrays = store.load_snapshot(key)
            assert arrays is not None and len(arrays["score"])
            arrays["score"] = np.full_like(arrays["score"], value)
            store.save_snapshot(key, arrays, kind="aligned-fine")


def test_fine_scores_no_check_writes_are_set_aside(tree: tuple[Path, dict[str, object]], run_cli) -> None:
    root, _ = tree
    policy = root / "leakcheck.yaml"
    clean = check(policy, use_cache=False, jobs=1)
    check(policy, jobs=1)
    _tamper(root, 5.0)  # valid checksums, a correlation no check writes
    code, out, err = run_cli("check", "--policy", str(policy), "-j", "1", "--format", "json")
    assert "Traceback" not in err and "internal error" not in err
    assert "inconsistent" in out and "set aside" in out
    assert [f["id"] for f in json.loads(out)["findings"]] == [f.id for f in clean.findings]
