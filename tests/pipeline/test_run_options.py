"""One RunOptions (pipeline/options.py) carries check()'s keywords to every stage."""

from __future__ import annotations

import inspect
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import pytest_leakcheck
from pytest_leakcheck.pipeline import matches, signatures
from pytest_leakcheck.pipeline.run import RunOptions, check
from pytest_leakcheck.testing import photo, save

from ..conftest import write_policy


class _Heard:
    def __init__(self) -> None:
        self.stages: list[str] = []

    def start(self, stage: str, total: int | None = None, unit: str = "file") -> None:
        self.stages.append(stage)

    def advance(self, n: int = 1) -> None:
        pass

    def done(self) -> None:
        pass


def test_public_check_keeps_its_keywords() -> None:
    """`pytest_leakcheck.check` is run.check, with the keywords it always had."""
    assert pytest_leakcheck.check is check
    params = inspect.signature(check).parameters
    assert list(params) == ["policy_path", "policy", "store", "jobs", "use_cache", "focus", "progress", "executor"]


def test_check_keywords_reach_the_stages_as_one_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(2):
        save(photo(i, (32, 32)), tmp_path / "train" / f"{i}.png")
    save(photo(0, (32, 32)), tmp_path / "test" / "copy.png")
    policy = write_policy(tmp_path)
    seen: dict[str, RunOptions] = {}
    real_compute, real_search = signatures.compute, matches.search

    def compute(records, policy, store, opts, **kw):  # type: ignore[no-untyped-def]
        seen["signatures"] = opts
        return real_compute(records, policy, store, opts, **kw)

    def search(inv, sigs, policy, store, opts, **kw):  # type: ignore[no-untyped-def]
        seen["matches"] = opts
        return real_search(inv, sigs, policy, store, opts, **kw)

    monkeypatch.setattr(signatures, "compute", compute)
    monkeypatch.setattr(matches, "search", search)
    heard = _Heard()
    with ThreadPoolExecutor(1) as pool:
        report = check(policy, jobs=1, use_cache=False, progress=heard, executor=pool)
    assert report.failing  # the copy is found through the wrapped stages
    want = RunOptions(jobs=1, executor=pool, progress=heard, use_cache=False)
    assert seen == {"signatures": want, "matches": want}
    assert "decoding" in heard.stages


def test_an_address_is_connected_before_a_stage_uses_it() -> None:
    assert RunOptions().pool is None
    with pytest.raises(TypeError, match="address"):
        RunOptions(executor="tcp://127.0.0.1:8786").pool
