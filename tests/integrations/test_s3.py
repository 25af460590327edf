"""Datasets in object storage, against a real S3-compatible server on loopback (moto in server mode).

Credentials and the endpoint reach s3fs through the standard AWS environment
variables, as they would in production; reads are counted by the server's own
request recorder.
"""

from __future__ import annotations

import json
import shutil
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_leakcheck import check
from pytest_leakcheck.errors import PolicyError
from pytest_leakcheck.report.model import report_dict
from pytest_leakcheck.testing import photo, save

from ..conftest import expected_leaks, write_policy

pytest.importorskip("s3fs", reason="the S3 tests need pip install 'pytest-leakcheck[s3]'")
moto_server = pytest.importorskip("moto.server", reason="the S3 tests need moto[server] (the test extra)")

BUCKET = "datasets"
PREFIX = "cifar/v3"


@pytest.fixture
def s3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A moto S3 server on 127.0.0.1 with one empty bucket; yields its endpoint URL."""
    import s3fs
    from moto.moto_api import recorder

    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    for key in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    # The job's owner enables the bucket; a policy alone cannot (docs/security.md).
    monkeypatch.setenv("LEAKCHECK_ALLOW_REMOTE", f"s3://{BUCKET} s3://no-such-bucket")
    # The server's request log goes to our tmp folder, not the current one.
    monkeypatch.setattr(recorder, "_location", str(tmp_path / "moto-requests.jsonl"))
    s3fs.S3FileSystem.clear_instance_cache()  # a cached client would still point at the last server
    try:
        _recording(endpoint, "../reset")  # moto keeps its buckets per process, across servers
        s3fs.S3FileSystem().mkdir(BUCKET)
        yield endpoint
    finally:
        s3fs.S3FileSystem.clear_instance_cache()
        server.stop()


def _upload(local: Path, url: str) -> None:
    import s3fs

    fs = s3fs.S3FileSystem()
    for path in sorted(local.rglob("*")):
        if path.is_file() and ".leakcheck" not in path.parts and path.name != "leakcheck.yaml":
            fs.pipe_file(f"{url}/{path.relative_to(local).as_posix()}", path.read_bytes())
    fs.invalidate_cache()


def _s3_policy(folder: Path, root: str, splits: str = "  train: [train/**]\n  test: [test/**]\n") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return write_policy(folder, f"version: 1\nroot: {root}\nsplits:\n{splits}augmentations: [hflip, rot90]\n")


def _without_stats(report: object) -> dict:
    data = report_dict(report)  # type: ignore[arg-type]
    data.pop("stats")
    data.pop("policy")
    return data


def _recording(endpoint: str, action: str) -> None:
    url = f"{endpoint}/moto-api/recorder/{action}".replace("/recorder/../", "/")
    urllib.request.urlopen(urllib.request.Request(url, method="POST")).close()


def _object_reads(log: Path) -> list[str]:
    """Keys whose bytes the server sent (GET on an object, not a listing)."""
    keys = []
    for line in log.read_text().splitlines() if log.exists() else []:
        entry = json.loads(line)
        path, _, query = entry["url"].partition("?")
        path = path.split("://", 1)[-1].partition("/")[2]  # drop scheme and host
        if entry["method"] == "GET" and "list-type" not in query and "/" in path:
            keys.append(path.split("/", 1)[1])
    return keys


@pytest.mark.slow
def test_s3_root_gives_the_findings_of_the_same_files_on_disk(leaky_dataset: Path, tmp_path: Path, s3: str) -> None:
    url = f"s3://{BUCKET}/{PREFIX}"
    _upload(leaky_dataset, url)
    on_disk = check(leaky_dataset / "leakcheck.yaml", use_cache=False)
    in_s3 = check(_s3_policy(tmp_path / "remote", url + "/"), use_cache=False)
    assert _without_stats(in_s3) == _without_stats(on_disk)
    leaked = {m.path for f in in_s3.errors for m in f.members if m.split == "test"}
    assert leaked >= set(expected_leaks())
    assert in_s3.stats["files"] == on_disk.stats["files"] > 70


@pytest.mark.slow
def test_incremental_check_reads_only_the_new_object(tmp_path: Path, s3: str) -> None:
    data = tmp_path / "data"
    for i in range(10):
        save(photo(i), data / f"train/img_{i}.jpg", quality=90)
    for i in range(3):
        save(photo(50 + i), data / f"test/other_{i}.jpg", quality=90)
    url = f"s3://{BUCKET}/{PREFIX}"
    _upload(data, url)
    policy = _s3_policy(tmp_path / "remote", url)
    _recording(s3, "start-recording")
    first = check(policy)
    _recording(s3, "stop-recording")
    assert not first.errors and first.stats["decoded"] == 13
    # Cold: each object read exactly once, by its decode (no separate hashing pass).
    keys = sorted(f"{PREFIX}/{p.relative_to(data).as_posix()}" for p in data.glob("t*/*.jpg"))
    assert sorted(_object_reads(tmp_path / "moto-requests.jsonl")) == keys
    _recording(s3, "reset-recording")

    # A resized copy of a training image lands in test; nothing else changes.
    save(photo(4).resize((80, 60)), data / "test/new.jpg", quality=85)
    import s3fs

    s3fs.S3FileSystem().pipe_file(f"{url}/test/new.jpg", (data / "test/new.jpg").read_bytes())
    _recording(s3, "start-recording")
    second = check(policy)
    _recording(s3, "stop-recording")
    assert _object_reads(tmp_path / "moto-requests.jsonl") == [f"{PREFIX}/test/new.jpg"]
    assert second.stats["decoded"] == 1
    assert [sorted(m.path for m in f.members) for f in second.errors] == [["test/new.jpg", "train/img_4.jpg"]]

    # An unchanged bucket: not one object read, the same report.
    _recording(s3, "reset-recording")
    _recording(s3, "start-recording")
    third = check(policy)
    _recording(s3, "stop-recording")
    assert _object_reads(tmp_path / "moto-requests.jsonl") == []
    assert _without_stats(third) == _without_stats(second)


@pytest.mark.slow
def test_manifest_in_the_bucket(leaky_dataset: Path, tmp_path: Path, s3: str) -> None:
    url = f"s3://{BUCKET}/{PREFIX}"
    rows = ["path,split"] + [f"{p.relative_to(leaky_dataset).as_posix()},{p.parent.name}"
                             for p in sorted(leaky_dataset.glob("t*/*.*"))]
    (leaky_dataset / "splits.csv").write_text("\n".join(rows) + "\n")
    _upload(leaky_dataset, url)
    shutil.rmtree(leaky_dataset / "test")  # the run below must read the bucket, not this folder
    report = check(_s3_policy(tmp_path / "remote", url, "  manifest: splits.csv\n"), use_cache=False)
    assert {m.path for f in report.errors for m in f.members if m.split == "test"} >= set(expected_leaks())


@pytest.mark.slow
def test_missing_bucket_is_a_policy_error_naming_root(tmp_path: Path, s3: str) -> None:
    policy = _s3_policy(tmp_path / "remote", "s3://no-such-bucket/x")
    with pytest.raises(PolicyError, match="root"):
        check(policy, use_cache=False)


def test_url_root_with_dotdot_is_rejected(tmp_path: Path) -> None:
    from pytest_leakcheck.policy.load import load

    with pytest.raises(PolicyError, match="root"):
        load(_s3_policy(tmp_path, "s3://bucket/../x"))


@pytest.mark.slow
def test_cli_sarif_and_html_review_over_an_s3_root(leaky_dataset: Path, tmp_path: Path, s3: str, run_cli) -> None:
    url = f"s3://{BUCKET}/{PREFIX}"
    _upload(leaky_dataset, url)
    policy = _s3_policy(tmp_path / "remote", url)
    code, _, err = run_cli("check", "--policy", str(policy), "--format", "sarif", "-o", str(tmp_path / "r.sarif"))
    assert code == 1, err
    uris = {loc["physicalLocation"]["artifactLocation"]["uri"]
            for r in json.loads((tmp_path / "r.sarif").read_text())["runs"][0]["results"] for loc in r["locations"]}
    assert "test/identical.jpg" in uris
    code, _, err = run_cli("report", "--policy", str(policy), "--html", str(tmp_path / "review.html"))
    assert code == 1, err
    # Thumbnails are read from the bucket and embedded as images.
    assert (tmp_path / "review.html").read_text().count("data:image/") >= 2 * len(expected_leaks())


@pytest.mark.slow
def test_dask_workers_read_the_bucket(leaky_dataset: Path, tmp_path: Path, s3: str) -> None:
    """Workers started with the same AWS_* environment read and decode the objects themselves."""
    distributed = pytest.importorskip("distributed", reason="needs pip install 'pytest-leakcheck[dask]'")
    url = f"s3://{BUCKET}/{PREFIX}"
    _upload(leaky_dataset, url)
    policy = _s3_policy(tmp_path / "remote", url)
    local = check(policy, use_cache=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        remote = check(policy, use_cache=False, executor=cluster.scheduler_address)
    assert _without_stats(remote) == _without_stats(local)
    assert remote.stats["decoded"] == local.stats["decoded"] > 70


@pytest.mark.slow
def test_a_bucket_the_job_has_not_enabled_is_refused_before_any_request(
    leaky_dataset: Path, tmp_path: Path, s3: str, monkeypatch
) -> None:
    """Issue 22, class 2: the policy names the bucket, the job's owner enables it; without
    LEAKCHECK_ALLOW_REMOTE covering the root, no request reaches the server."""
    url = f"s3://{BUCKET}/{PREFIX}"
    _upload(leaky_dataset, url)
    log = tmp_path / "moto-requests.jsonl"
    _recording(s3, "start-recording")
    try:
        monkeypatch.setenv("LEAKCHECK_ALLOW_REMOTE", f"s3://{BUCKET}/other-prefix")
        with pytest.raises(PolicyError, match="LEAKCHECK_ALLOW_REMOTE"):
            check(_s3_policy(tmp_path / "remote", url), use_cache=False)
    finally:
        _recording(s3, "stop-recording")
    assert not log.exists() or log.read_text().strip() == ""
    monkeypatch.setenv("LEAKCHECK_ALLOW_REMOTE", f"s3://{BUCKET}/{PREFIX}")
    assert check(_s3_policy(tmp_path / "remote", url), use_cache=False).errors


@pytest.mark.slow
def test_hidden_objects_are_examined_as_hidden_files_on_disk(tmp_path: Path, s3: str) -> None:
    local = tmp_path / "local"
    for rel, seed in (("train/a.jpg", 1), ("train/b.jpg", 2), ("train/c.jpg", 3),
                      ("test/.a-copy.jpg", 1), ("test/.cache/b-copy.jpg", 2), ("test/.git/c-copy.jpg", 3)):
        save(photo(seed), local / rel)
    write_policy(local, "version: 1\nsplits:\n  train: [train/**]\n  test: [test/**]\n")
    url = f"s3://{BUCKET}/hidden"
    _upload(local, url)
    on_disk = check(local / "leakcheck.yaml", use_cache=False)
    in_s3 = check(_s3_policy(tmp_path / "remote", url + "/"), use_cache=False)
    leaked = {m.path for f in in_s3.errors for m in f.members if m.split == "test"}
    # Hidden files are copies like any other; version-control folders are never data.
    assert leaked == {"test/.a-copy.jpg", "test/.cache/b-copy.jpg"}
    assert in_s3.stats["files"] == on_disk.stats["files"] == 5
    assert {m.path for f in on_disk.errors for m in f.members if m.split == "test"} == leaked
