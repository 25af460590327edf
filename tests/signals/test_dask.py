"""The Dask executor, against a real ``dask.distributed`` cluster on loopback.

A ``LocalCluster`` with worker processes, and a scheduler and two workers
started from their command lines (``python -m dask scheduler`` / ``worker``,
the same entry point as the ``dask`` script).  Findings must equal a local run's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pytest_leakcheck import check
from pytest_leakcheck.pipeline import signatures
from pytest_leakcheck.errors import PolicyError, UsageError
from pytest_leakcheck.report.model import report_dict
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.store.db import open_store
from pytest_leakcheck.testing import photo, save

from ..conftest import write_policy

distributed = pytest.importorskip("distributed", reason="the Dask tests need pip install 'pytest-leakcheck[dask]'")


def _dataset(root: Path) -> Path:
    """A few leaks of each exact and near kind, one pixel-identical PNG pair among them."""
    for i in range(16):
        save(photo(i), root / f"train/img_{i:02d}.jpg", quality=90)
    for i in range(6):
        save(photo(100 + i), root / f"test/other_{i}.jpg", quality=90)
    (root / "test/copy.jpg").write_bytes((root / "train/img_03.jpg").read_bytes())
    save(photo(5), root / "test/requality.jpg", quality=50)
    save(photo(7).transpose(0), root / "test/flipped.jpg", quality=90)
    # Same pixels, other bytes: only the full decode (pixel_digest) finds it.
    save(photo(300), root / "train/lossless.png", compress_level=9)
    save(photo(300), root / "test/lossless.png", compress_level=1)
    return write_policy(root)


def comparable(report: object) -> dict:
    """The JSON report minus run statistics (timings, counts of work done)."""
    data = report_dict(report)  # type: ignore[arg-type]
    data.pop("stats")
    return data


@pytest.fixture(scope="module")
def cluster() -> Iterator[object]:
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as c:
        yield c


@pytest.mark.slow
def test_local_cluster_gives_the_local_findings(tmp_path: Path, cluster) -> None:
    policy = _dataset(tmp_path)
    local = check(policy, use_cache=False)
    assert {f.kind for f in local.findings} >= {"identical-file", "identical-pixels", "near-duplicate"}
    before = _executed(cluster.scheduler_address)
    remote = check(policy, use_cache=False, executor=cluster.scheduler_address)
    assert comparable(remote) == comparable(local)
    # The work really ran on the cluster's workers: batches of sign tasks, then pixel digests.
    after = _executed(cluster.scheduler_address)
    assert sum(after.values()) - sum(before.values()) >= 2
    assert remote.stats["decoded"] == local.stats["decoded"] == len(set(_all_digests(tmp_path)))


@pytest.mark.slow
def test_executor_from_the_environment_is_used_and_the_driver_writes_the_store(
    tmp_path: Path, cluster, run_cli, monkeypatch
) -> None:
    """LEAKCHECK_EXECUTOR (the job's environment, the owner's side) sends the work to the cluster."""
    policy = _dataset(tmp_path)
    before = _executed(cluster.scheduler_address)
    monkeypatch.setenv("LEAKCHECK_EXECUTOR", cluster.scheduler_address)
    code, _, err = run_cli("check", "--policy", str(policy))
    assert code == 1, err
    assert sum(_executed(cluster.scheduler_address).values()) > sum(before.values())
    # The store the driver wrote is complete: a second run decodes nothing, locally.
    monkeypatch.delenv("LEAKCHECK_EXECUTOR")
    second = check(policy)
    assert second.stats["decoded"] == 0


def test_a_policy_cannot_choose_the_executor(tmp_path: Path, cluster, run_cli) -> None:
    """`executor:` in the policy (the pull request's) is refused, naming the owner's flag and variable,
    and nothing is sent to the scheduler it names."""
    policy = _dataset(tmp_path)
    before = _executed(cluster.scheduler_address)
    policy.write_text(policy.read_text() + f"executor: {cluster.scheduler_address}\n")
    with pytest.raises(PolicyError, match="cannot choose where the check runs") as info:
        load(policy)
    assert "--executor" in str(info.value) and "LEAKCHECK_EXECUTOR" in str(info.value)
    code, _, err = run_cli("check", "--policy", str(policy))
    assert code == 2 and "executor" in err
    assert _executed(cluster.scheduler_address) == before


@pytest.mark.slow
def test_results_are_written_as_they_arrive_so_a_rerun_resumes(tmp_path: Path, monkeypatch) -> None:
    """A run that dies half way keeps every batch it received; the rerun decodes only the rest."""
    policy_path = _dataset(tmp_path)
    monkeypatch.setattr(signatures, "FLUSH", 4)

    class DiesHalfWay(ThreadPoolExecutor):
        def map(self, fn, *iterables, timeout=None, chunksize=1):  # type: ignore[override]
            for k, result in enumerate(super().map(fn, *iterables)):
                if k == 10:
                    raise ConnectionError("lost the scheduler")
                yield result

    with DiesHalfWay(2) as ex, pytest.raises(ConnectionError):
        check(policy_path, executor=ex)
    with open_store(load(policy_path).cache) as store:
        assert len(store.get_families(_all_digests(tmp_path), [("dims", "v1")])["dims"]) >= 8
    again = check(policy_path)
    assert 0 < again.stats["decoded"] <= len(set(_all_digests(tmp_path))) - 8


def _all_digests(root: Path) -> list[bytes]:
    import hashlib

    # train/ and test/, not the store in .leakcheck/
    return [hashlib.sha256(p.read_bytes()).digest() for p in sorted(root.glob("t*/*.*"))]


def test_cli_rejects_an_address_that_is_not_one(tmp_path: Path, run_cli, monkeypatch) -> None:
    policy = _dataset(tmp_path)
    code, _, err = run_cli("check", "--policy", str(policy), "--executor", "8786")
    assert code == 2 and "--executor" in err and "tcp://HOST:8786" in err
    monkeypatch.setenv("LEAKCHECK_EXECUTOR", "localhost:8786")
    code, _, err = run_cli("check", "--policy", str(policy))
    assert code == 2 and "LEAKCHECK_EXECUTOR" in err


def test_unreachable_scheduler_is_a_usage_error(tmp_path: Path, monkeypatch) -> None:
    from pytest_leakcheck.signals import executors

    monkeypatch.setattr(executors, "CONNECT_TIMEOUT", 1)
    policy = _dataset(tmp_path)
    with pytest.raises(UsageError, match="cannot reach the Dask scheduler"):
        check(policy, use_cache=False, executor=f"tcp://127.0.0.1:{_free_port()}")


def _executed(address: str) -> dict[str, int]:
    """Tasks each worker of the cluster at ``address`` has run so far."""
    with distributed.Client(address, timeout=60) as client:
        return client.run(lambda dask_worker: dask_worker.state.executed_count)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(path: Path, proc: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists() or not path.read_text().strip():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the Dask scheduler did not start (exit code {proc.poll()})")
        time.sleep(0.2)


@pytest.mark.slow
def test_cli_executor_on_a_scheduler_and_workers_started_from_the_command_line(tmp_path: Path) -> None:
    policy = _dataset(tmp_path / "data")
    env = {**os.environ, "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
    dask_cli = [sys.executable, "-m", "dask"]
    scheduler_file = tmp_path / "scheduler.json"
    procs: list[subprocess.Popen] = []
    try:
        procs.append(subprocess.Popen(
            [*dask_cli, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
             "--scheduler-file", str(scheduler_file)],
            cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        _wait_for(scheduler_file, procs[0])
        address = json.loads(scheduler_file.read_text())["address"]
        for _ in range(2):
            procs.append(subprocess.Popen(
                [*dask_cli, "worker", address, "--host", "127.0.0.1", "--nthreads", "1", "--no-dashboard"],
                cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        with distributed.Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
        outputs = {}
        for name, extra in (("local", []), ("dask", ["--executor", address])):
            out = tmp_path / f"{name}.json"
            run = subprocess.run(
                [sys.executable, "-m", "pytest_leakcheck", "check", "--policy", str(policy), "--no-cache",
                 "--format", "json", "-o", str(out), *extra],
                cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
            assert run.returncode == 1, run.stderr
            outputs[name] = json.loads(out.read_text())
            outputs[name].pop("stats")
        assert outputs["dask"] == outputs["local"]
        assert {f["kind"] for f in outputs["dask"]["findings"]} >= {"identical-file", "identical-pixels"}
        # Both workers served batches: the check really ran on them.
        assert sorted(_executed(address).values())[0] >= 1
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def _serve(reply: bytes | None):
    """A TCP service on loopback that never answers (``reply`` None) or answers garbage."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)

    def loop() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            if reply is not None:
                conn.sendall(reply)
                conn.close()

    threading.Thread(target=loop, daemon=True).start()
    return server


@pytest.mark.slow
@pytest.mark.parametrize("reply", [None, b"HTTP/1.1 400 Bad Request\r\n\r\n" * 8], ids=["silent", "http"])
def test_an_address_where_no_scheduler_answers_is_exit_2_without_a_traceback(
    tmp_path: Path, reply, monkeypatch
) -> None:
    """A silent service once held the check forever; another protocol exited 3 with a traceback."""
    policy = _dataset(tmp_path)
    server = _serve(reply)
    port = server.getsockname()[1]
    code = ("import sys; from pytest_leakcheck.signals import executors; executors.CONNECT_TIMEOUT = 2;"
            "from pytest_leakcheck.cli import main; sys.exit(main(sys.argv[1:]))")
    start = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-c", code, "check", "--policy", str(policy),
                               "--executor", f"tcp://127.0.0.1:{port}"],
                              capture_output=True, text=True, timeout=60)
    finally:
        server.close()
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "Dask scheduler" in done.stderr
    assert time.monotonic() - start < 30
