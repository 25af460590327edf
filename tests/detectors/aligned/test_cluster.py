"""The aligned search's blocks on a real Dask ``LocalCluster`` (2 worker processes on loopback).

A check with the cluster as its executor must report what a local check
reports, with the same aligned pairs, scores and levels, and every block of
the search and the calibration must have run as a task on the workers.  A
cluster that goes away mid-search is a :class:`ClusterLost`, not a traceback.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from pytest_leakcheck import check
from pytest_leakcheck.detectors.aligned import levels, pairs
from pytest_leakcheck.errors import ClusterLost, LeakcheckError
from pytest_leakcheck.testing import photo, save

from ...conftest import write_policy
from ...signals.test_dask import comparable
from .test_detector import ALIGNED, _disguised

distributed = pytest.importorskip("distributed", reason="the Dask tests need pip install 'pytest-leakcheck[dask]'")

#: Query rows per block here: 84 rows make several verification and calibration blocks.
BLOCK = 16


@pytest.fixture(scope="module")
def cluster() -> Iterator[object]:
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as c:
        yield c


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    """60 train and 20 test photos, a disguised copy across the splits and one within train."""
    for i in range(60):
        save(photo(i), tmp_path / f"train/img_{i:03d}.jpg", quality=92)
    for i in range(20):
        save(photo(2000 + i), tmp_path / f"test/distinct_{i}.jpg", quality=92)
    save(_disguised(photo(3)), tmp_path / "test/disguised.jpg", quality=90)
    save(_disguised(photo(7)), tmp_path / "train/disguised7.jpg", quality=90)
    return write_policy(tmp_path, ALIGNED)


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[tuple[pairs.Pairs, dict]]:
    """Small blocks, and each full search's pairs and levels as the detector got them."""
    monkeypatch.setattr(pairs, "_BLOCK", BLOCK)
    monkeypatch.setattr(pairs, "_IMPOSTOR_BLOCK", BLOCK)
    got: list[tuple[pairs.Pairs, dict]] = []
    real_search, real_cal = pairs.search, levels.calibration

    def search(*args, **kwargs):
        got.append((real_search(*args, **kwargs), {}))
        return got[-1][0]

    def calibration(*args, **kwargs):
        got[-1][1].update(real_cal(*args, **kwargs))
        return got[-1][1]

    monkeypatch.setattr(pairs, "search", search)
    monkeypatch.setattr(levels, "calibration", calibration)
    return got


def _blocks(address: str, since: float) -> dict[str, list[str]]:
    """Workers that ran each kind of aligned block task since ``since`` (from the scheduler's task stream)."""
    out: dict[str, list[str]] = {}
    with distributed.Client(address, timeout=60) as client:
        for task in client.get_task_stream(start=since):
            kind = task["key"].rsplit("-", 1)[0] if isinstance(task["key"], str) else ""
            if kind.startswith("aligned-"):
                out.setdefault(kind, []).append(task["worker"])
    return out


@pytest.mark.slow
def test_cluster_runs_every_block_and_gives_the_local_pairs_levels_and_findings(
        planted: Path, cluster, recorded: list) -> None:
    t0 = time.time()
    local = check(planted, use_cache=False)
    assert _blocks(cluster.scheduler_address, t0) == {}  # without an executor nothing goes out
    t1 = time.time()
    remote = check(planted, use_cache=False, executor=cluster.scheduler_address)
    ran = _blocks(cluster.scheduler_address, t1)

    assert len(recorded) == 2
    (found, cal), (rfound, rcal) = recorded
    assert len(found.i) > 0
    for field in ("i", "j", "score", "flipped"):
        assert np.array_equal(getattr(rfound, field), getattr(found, field)), field
    assert rcal == cal
    assert comparable(remote) == comparable(local)
    assert {f.kind for f in remote.findings} >= {"near-duplicate"}
    paths = {m.path for f in remote.findings for m in f.members}
    assert {"test/disguised.jpg", "train/img_003.jpg", "train/disguised7.jpg", "train/img_007.jpg"} <= paths
    stats = {k: v for k, v in remote.stats["aligned"].items() if not k.endswith("_at")}
    assert stats == {k: v for k, v in local.stats["aligned"].items() if not k.endswith("_at")}

    # Every block ran as a task on the cluster: 80+ rows in blocks of 16, per split.
    rows = {"train": 61, "test": 21}
    expect = sum(-(-n // BLOCK) for n in rows.values())
    assert len(ran.get("aligned-verify_block", [])) == expect
    assert len(ran.get("aligned-impostor_block", [])) == expect  # under 8,000 rows: every row is sampled
    workers = {w for kind in ran.values() for w in kind}
    assert workers <= set(cluster.scheduler_info["workers"]) and workers


class _CloseOnFirstBlock:
    """A progress that shuts the cluster down when the aligned search reports its first block."""

    def __init__(self, cluster) -> None:
        self.cluster, self.unit, self.closed = cluster, "", False

    def start(self, stage: str, total: int | None = None, unit: str = "file") -> None:
        self.unit = unit

    def resize(self, total: int | None, unit: str = "file") -> None:
        self.unit = unit

    def advance(self, n: int = 1) -> None:
        if self.unit == "block" and not self.closed:
            self.closed = True
            self.cluster.close()

    def done(self) -> None:
        pass


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:Port 8787 is already in use")  # the module's cluster holds it
def test_a_cluster_lost_mid_search_is_a_leakcheck_error(planted: Path, recorded: list) -> None:
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as lost:
        progress = _CloseOnFirstBlock(lost)
        with pytest.raises(ClusterLost, match="lost the Dask cluster") as info:
            check(planted, use_cache=False, executor=lost.scheduler_address, progress=progress)
        assert progress.closed
        assert isinstance(info.value, LeakcheckError) and "--executor" in str(info.value)
