"""A check computes with one BLAS thread per process, and leaves the caller's setting as it was.

The check's parallelism is its worker processes; BLAS threads on top made
the fine verdict's small products many times slower on a busy machine
(``signals/threads.py``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from pytest_leakcheck import check
from pytest_leakcheck.pipeline import signatures
from pytest_leakcheck.testing import photo


def _blas_threads() -> int:
    return max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")


def test_the_check_computes_with_one_blas_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert np.ones((4, 4)) @ np.ones((4, 4)) is not None  # BLAS loaded
    for split in ("train", "test"):
        (tmp_path / split).mkdir()
        for k in range(3):
            photo(10 * len(split) + k, (96, 72)).save(tmp_path / split / f"{k}.png")
    (tmp_path / "leakcheck.yaml").write_text("version: 1\nsplits:\n  train: [train/**]\n  test: [test/**]\n")
    seen: list[int] = []
    compute = signatures.compute

    def watched(*args: object, **kwargs: object) -> object:
        seen.append(_blas_threads())
        return compute(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(signatures, "compute", watched)
    with threadpool_limits(limits=2, user_api="blas"):  # as on a 2-core machine, whatever this one has
        before = _blas_threads()
        if before < 2:
            pytest.skip("this BLAS runs one thread at most: nothing to limit")
        check(tmp_path / "leakcheck.yaml", use_cache=False, jobs=1)
        after = _blas_threads()
    assert seen == [1]
    assert before == after == 2
