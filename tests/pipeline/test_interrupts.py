"""Crashes, races and signals (issue 10, classes 8 and 9).

A bug exits 3 with one line, never 1 ("leaks found"); a file deleted or
replaced while it is being checked is a finding, not a KeyError; a check
killed by SIGTERM or Ctrl-C stops its workers, keeps the store consistent and
says it was interrupted (143 / 130).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from pytest_leakcheck import EXIT_LEAKS, check
from pytest_leakcheck.pipeline import matches, signatures
from pytest_leakcheck.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_TERMINATED
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.store.db import open_store
from pytest_leakcheck.testing import photo, save

from ..conftest import write_policy

POLICY = "version: 1\nsplits: {train: [train/**], test: [test/**]}\n"
SMALL = (64, 48)


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    for i in range(6):
        save(photo(i, SMALL), tmp_path / f"train/{i}.jpg", quality=90)
    for i in range(3):
        save(photo(100 + i, SMALL), tmp_path / f"test/{i}.jpg", quality=90)
    shutil.copyfile(tmp_path / "train/0.jpg", tmp_path / "test/copy.jpg")
    write_policy(tmp_path, POLICY)
    return tmp_path


# --------------------------------------------------------------------------
# Class 8: an unexpected exception is exit 3 and one line


def _boom(*args, **kwargs):
    raise RuntimeError("boom\n::error file=x::\x1b[31mred")


@pytest.mark.slow
@pytest.mark.parametrize("command", ["check", "hook", "report", "baseline"])
def test_crash_exits_3_with_one_line(command: str, dataset: Path, run_cli, monkeypatch) -> None:
    """Any way in through the CLI: exit 3 (not 1), one neutralised line naming what failed and --debug."""
    monkeypatch.setattr(matches, "_incremental", _boom)
    monkeypatch.setattr(matches, "find", _boom)
    monkeypatch.delenv("LEAKCHECK_DEBUG", raising=False)
    args = {"check": ["-j", "1"], "hook": ["test/copy.jpg"], "report": ["--html", str(dataset / "r.html")],
            "baseline": []}[command]
    monkeypatch.chdir(dataset)
    code, out, err = run_cli(command, "--policy", str(dataset / "leakcheck.yaml"), *args)
    assert code == EXIT_INTERNAL == 3
    assert out == ""
    assert err.count("\n") == 1 and err.endswith("\n")
    assert err.startswith(f"Error: internal error in `leakcheck {command}`: ")
    assert "RuntimeError: boom" in err
    assert "run with --debug or LEAKCHECK_DEBUG=1 for the traceback" in err
    assert "\x1b" not in err and "Traceback" not in err


@pytest.mark.parametrize("how", ["--debug after the command", "--debug before it", "LEAKCHECK_DEBUG=1"])
def test_debug_shows_the_traceback(how: str, dataset: Path, run_cli, monkeypatch) -> None:
    monkeypatch.setattr(matches, "_incremental", _boom)
    policy = ["--policy", str(dataset / "leakcheck.yaml"), "-j", "1"]
    if how == "LEAKCHECK_DEBUG=1":
        monkeypatch.setenv("LEAKCHECK_DEBUG", "1")
        argv = ["check", *policy]
    elif how == "--debug before it":
        argv = ["--debug", "check", *policy]
    else:
        argv = ["check", *policy, "--debug"]
    code, _, err = run_cli(*argv)
    assert code == EXIT_INTERNAL
    assert "Traceback (most recent call last)" in err and "in _boom" in err


# --------------------------------------------------------------------------
# Class 9: files that vanish or change while being checked


def _meddle_before_decoding(monkeypatch, target: str, action) -> None:
    """Run ``action`` just before ``target`` is read for decoding (after it was listed and hashed)."""
    real = signatures.sign

    def sign(task):
        if Path(task.path).as_posix().endswith("/" + target):
            action(Path(task.path))
        return real(task)

    monkeypatch.setattr(signatures, "sign", sign)


def test_file_deleted_between_hashing_and_decoding_is_a_finding(dataset: Path, monkeypatch) -> None:
    _meddle_before_decoding(monkeypatch, "train/2.jpg", lambda path: path.unlink())
    report = check(dataset / "leakcheck.yaml", jobs=1)
    gone = [f for f in report.findings if f.kind == "unreadable-image"]
    assert [m.path for f in gone for m in f.members] == ["train/2.jpg"]
    assert "No such file" in gone[0].message
    assert "identical-file" in {f.kind for f in report.findings}
    assert report.exit_code == EXIT_LEAKS
    monkeypatch.undo()
    # Nothing about the vanished file was cached: the next run is as if it never existed.
    again = check(dataset / "leakcheck.yaml", jobs=1)
    assert "unreadable-image" not in {f.kind for f in again.findings}


@pytest.mark.parametrize("meddle", ["delete", "replace"])
def test_copy_that_vanishes_hands_its_decode_to_the_other_copy(meddle: str, dataset: Path, monkeypatch) -> None:
    """Copies share one decode; when the copy chosen for it vanishes or changes, the other copy is decoded instead."""
    def act(path: Path) -> None:
        if meddle == "delete":
            path.unlink()
        else:
            save(photo(4242, SMALL), path, quality=90)

    # test/copy.jpg sorts before train/0.jpg, so it is the one decoded for their shared content.
    _meddle_before_decoding(monkeypatch, "test/copy.jpg", act)
    report = check(dataset / "leakcheck.yaml", jobs=1)
    monkeypatch.undo()
    assert [f.kind for f in report.findings if "train/0.jpg" in {m.path for m in f.members}] == []
    assert check(dataset / "leakcheck.yaml", jobs=1).findings == check(
        dataset / "leakcheck.yaml", use_cache=False, jobs=1).findings


def test_file_replaced_between_hashing_and_decoding(dataset: Path, monkeypatch) -> None:
    """Judged by the bytes decoded when all their signals are known; else unreadable for now, never a crash."""
    def replace(path: Path) -> None:
        save(photo(555, SMALL), path.with_name("tmp.jpg"), quality=90)
        os.replace(path.with_name("tmp.jpg"), path)

    # Cold store: every signal of the new bytes is computed, so they are judged.
    _meddle_before_decoding(monkeypatch, "train/1.jpg", replace)
    report = check(dataset / "leakcheck.yaml", jobs=1)
    assert "unreadable-image" not in {f.kind for f in report.findings}
    # Warm store, new thumbnail size: only thumbnails are computed, so the
    # replacement's hashes are unknown and the file is reported, not misread.
    monkeypatch.undo()
    write_policy(dataset, POLICY + "detectors: {thumbnail: {size: 8}}\n")
    _meddle_before_decoding(monkeypatch, "train/1.jpg", lambda path: save(photo(777, SMALL), path, quality=90))
    report = check(dataset / "leakcheck.yaml", jobs=1)
    changed = [f for f in report.findings if f.kind == "unreadable-image"]
    assert [m.path for f in changed for m in f.members] == ["train/1.jpg"]
    assert "changed while being checked" in changed[0].message
    monkeypatch.undo()
    assert "unreadable-image" not in {f.kind for f in check(dataset / "leakcheck.yaml", jobs=1).findings}


def test_pixel_digest_of_a_vanished_or_changed_file_is_not_cached(dataset: Path) -> None:
    """A full decode of bytes that are no longer the hashed ones says nothing about that content."""
    policy = load(dataset / "leakcheck.yaml")
    from pytest_leakcheck.dataset.inventory import scan

    records = scan(policy).records
    rows = [i for i, r in enumerate(records) if r.path in ("train/3.jpg", "train/4.jpg")]
    from pytest_leakcheck.signals.decode import PIXELS_PARAMS
    from pytest_leakcheck.detectors.identical_pixels import _pixel_digests
    from pytest_leakcheck.pipeline.matches import new_run
    from pytest_leakcheck.pipeline.run import RunOptions

    with open_store(None) as store:
        sigs = signatures.compute(records, policy, store, RunOptions(jobs=1))
        run = new_run(scan(policy), sigs, policy, store, RunOptions(jobs=1))
        (dataset / "train/3.jpg").unlink()
        save(photo(999, SMALL), dataset / "train/4.jpg", quality=90)
        assert _pixel_digests(run, rows) == {}
        assert store.get_signatures([sigs.digests[i] for i in rows], "pixels", PIXELS_PARAMS) == {}


# --------------------------------------------------------------------------
# Class 9: SIGTERM and Ctrl-C in a real subprocess

# Each decode sleeps a little, in the forked workers too, and the first one
# leaves a mark (argv[1], taken off before the CLI reads argv): the test waits
# for the mark, not for a guessed time, so the signal lands while the pool is
# decoding on a machine of any speed or load.
_SLOW = (
    "import os, sys, time\n"
    "from pytest_leakcheck.signals import families as signals\n"
    "mark = sys.argv.pop(1)\n"
    "real = signals._thumb\n"
    "def slow(*args):\n"
    "    if not os.path.exists(mark):\n"
    "        open(mark, 'a').close()\n"
    "    time.sleep(0.05)\n"
    "    return real(*args)\n"
    "signals._thumb = slow\n"
    "from pytest_leakcheck.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 images, two of them planted copies."""
    root = tmp_path_factory.mktemp("big")
    for i in range(270):
        save(photo(i, SMALL), root / f"train/{i:03d}.jpg", quality=90)
    for i in range(28):
        save(photo(1000 + i, SMALL), root / f"test/{i:03d}.jpg", quality=90)
    shutil.copyfile(root / "train/007.jpg", root / "test/copy_a.jpg")
    shutil.copyfile(root / "train/123.jpg", root / "test/copy_b.jpg")
    write_policy(root, POLICY)
    return root


def _children(pid: int) -> set[int]:
    """Every live descendant of ``pid``, from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if fields[0] != "Z":
                parents[int(entry.name)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _decoding(proc: subprocess.Popen, mark: Path) -> set[int]:
    """Wait until the check's pool has started decoding (the first slowed decode's mark); its workers."""
    deadline = time.monotonic() + 300  # a hang guard only: reaching it fails the test
    while not mark.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert mark.exists(), "the check never started decoding"
    workers = _children(proc.pid)
    assert len(workers) >= 2, "the check decodes without its pool"
    return workers


def _as_from_a_terminal() -> None:
    """SIGINT as a terminal's Ctrl-C meets it: a suite started in the background by a shell without job
    control (``nohup bash .ci/run &``) inherits SIGINT ignored, and Python keeps an ignored SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.slow
@pytest.mark.parametrize(
    ("sig", "target", "code"),
    [
        (signal.SIGTERM, "process", EXIT_TERMINATED),  # a cancelled CI job
        (signal.SIGTERM, "group", EXIT_TERMINATED),  # a runner stopping the whole group
        (signal.SIGINT, "group", EXIT_INTERRUPTED),  # Ctrl-C in a terminal
    ],
)
def test_signal_stops_workers_and_exits_with_its_code(big: Path, sig: int, target: str, code: int,
                                                     tmp_path: Path) -> None:
    store = big / ".leakcheck/cache.sqlite"
    if store.exists():  # each case starts cold, so the signal lands while decoding
        shutil.rmtree(store.parent)
    mark = tmp_path / "decoding"
    cmd = [sys.executable, "-c", _SLOW, str(mark), "check", "--policy", str(big / "leakcheck.yaml"), "--jobs", "2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=_as_from_a_terminal)
    try:
        workers = _decoding(proc, mark)  # 300 files at 50 ms each over 2 workers: 7 s left to decode
        if target == "group":
            os.killpg(proc.pid, sig)
        else:
            os.kill(proc.pid, sig)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == code, err
    assert "Traceback" not in err
    assert err.strip().splitlines() == ["Error: interrupted" if sig == signal.SIGINT else "Error: terminated (SIGTERM)"]
    assert [p for p in workers if _alive(p)] == []
    # The store is consistent, and the next run finishes with the right findings.
    if store.exists():
        with closing(sqlite3.connect(store)) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    done = subprocess.run([sys.executable, "-m", "pytest_leakcheck", "check", "--policy", str(big / "leakcheck.yaml"),
                           "--jobs", "2", "--format", "json"], capture_output=True, text=True, timeout=600)
    assert done.returncode == EXIT_LEAKS, done.stderr
    found = json.loads(done.stdout)["findings"]
    assert sorted((f["kind"], tuple(m["path"] for m in f["members"])) for f in found) == [
        ("identical-file", ("train/007.jpg", "test/copy_a.jpg")),
        ("identical-file", ("train/123.jpg", "test/copy_b.jpg")),
    ]
    assert list(store.parent.glob("*.corrupt-*")) == []


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_workers_exit_when_the_check_is_killed_outright(big: Path, tmp_path: Path) -> None:
    """SIGKILL leaves no handler to run: the workers notice their parent is gone and exit by themselves."""
    store = big / ".leakcheck/cache.sqlite"
    if store.exists():
        shutil.rmtree(store.parent)
    mark = tmp_path / "decoding"
    cmd = [sys.executable, "-c", _SLOW, str(mark), "check", "--policy", str(big / "leakcheck.yaml"), "--jobs", "2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    workers: set[int] = set()
    try:
        workers = _decoding(proc, mark)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        deadline = time.monotonic() + 60
        while any(_alive(p) for p in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [p for p in workers if _alive(p)] == []
    finally:
        for p in workers:
            if _alive(p):
                os.kill(p, signal.SIGKILL)
