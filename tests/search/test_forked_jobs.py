"""When a detector's work may go to forked workers (``SearchRun.forked_jobs``)."""

from __future__ import annotations

import dataclasses
import multiprocessing
from pathlib import Path

import numpy as np

from pytest_leakcheck.search.run import SearchRun
from pytest_leakcheck.signals.families import Signatures
from pytest_leakcheck.store.db import open_store


def _run(tmp_path: Path, jobs: int) -> SearchRun:
    sigs = Signatures((b"a", b"b"), np.ones(2, bool), {}, np.ones((2, 2), np.int64))
    return SearchRun(sigs, ("train", "test"), ("train", "test"), (("train", "test"),), ("identity",),
                     open_store(tmp_path / "cache.sqlite"), tmp_path, ("a", "b"), 10**8, jobs=jobs)


def test_only_a_full_local_search_with_work_enough_forks(tmp_path: Path) -> None:
    run = _run(tmp_path, jobs=2)
    # Workers that are not forked would need every array sent to them: then the work stays here.
    assert run.forked_jobs(1000, 500) == (2 if multiprocessing.get_start_method() == "fork" else 0)
    assert run.forked_jobs(499, 500) == 0  # too little to pay for the fork
    assert dataclasses.replace(run, jobs=1).forked_jobs(1000, 500) == 0
    # A focus check (hook, pull request) stays in one process, as does a cluster's search.
    assert dataclasses.replace(run, focus=np.array([True, False])).forked_jobs(1000, 500) == 0
    assert dataclasses.replace(run, executor=object()).forked_jobs(1000, 500) == 0  # type: ignore[arg-type]
