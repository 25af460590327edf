"""The signature store: unchanged files are never decoded again, and a broken store is rebuilt."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from collections import Counter
from contextlib import closing
from pathlib import Path

import pytest

from pytest_leakcheck import EXIT_USAGE, check
from pytest_leakcheck.signals import decode, families as signals
from pytest_leakcheck.pipeline import digests, signatures
from pytest_leakcheck.errors import StoreError
from pytest_leakcheck.store.db import SCHEMA_VERSION, open_store
from pytest_leakcheck.testing import photo, save

from ..conftest import write_policy

SMALL = (64, 48)
POLICY = "version: 1\nsplits: {train: [train/**], test: [test/**]}\n"


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """Five train images, two test images, one of them a copy of a train image."""
    for i in range(5):
        save(photo(i, SMALL), tmp_path / f"train/{i}.jpg", quality=90)
    save(photo(10, SMALL), tmp_path / "test/10.jpg", quality=90)
    shutil.copyfile(tmp_path / "train/0.jpg", tmp_path / "test/copy.jpg")
    write_policy(tmp_path, POLICY)
    return tmp_path


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Counter:
    """Count what the pipeline really does: files hashed, files decoded, families computed."""
    calls: Counter = Counter()

    def wrap(module, name: str, key) -> None:
        real = getattr(module, name)

        def counted(*args, **kwargs):
            calls[key(*args)] += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)

    wrap(digests, "_file_digest", lambda path: ("hashed", Path(path).name))
    wrap(signatures, "sign", lambda task: ("signed", Path(task.path).name))
    wrap(decode, "decode", lambda data, max_pixels, colour=0: "decode")

    def wrap_compute(name: str, key: str) -> None:
        real = getattr(signals, name)

        def counted(decoded, family):
            # Hashes are computed once per searched orientation; count images.
            if family.name in ("thumb", "hash:identity"):
                calls[key] += 1
            return real(decoded, family)

        monkeypatch.setattr(signals, name, counted)

    wrap_compute("_hash", "phash")
    wrap_compute("_thumb", "thumb")
    return calls


def _run(root: Path):
    return check(root / "leakcheck.yaml", jobs=1)


def _names(calls: Counter, what: str) -> list[str]:
    return sorted(k[1] for k in calls.elements() if isinstance(k, tuple) and k[0] == what)


def test_second_run_decodes_nothing(dataset: Path, spy: Counter) -> None:
    """An unchanged tree is neither hashed nor decoded again, and the findings are the same."""
    first = _run(dataset)
    assert spy["decode"] == 6  # the byte copy shares its content digest with train/0.jpg
    assert first.stats["decoded"] == 6
    spy.clear()
    second = _run(dataset)
    assert spy["decode"] == 0
    assert _names(spy, "hashed") == []
    assert second.stats["decoded"] == 0
    assert second.stats["hashed"] == 0
    assert second.stats["reused"] == 7
    assert [f.id for f in second.findings] == [f.id for f in first.findings] != []


def test_first_check_reads_a_file_of_its_own_size_once(dataset: Path, spy: Counter) -> None:
    """With nothing stored, only files that share a size (possible copies) are hashed before the
    decode; the rest are read once, by the decode that digests them.  Copies still share one
    decode, and the findings are those of a check whose files were all hashed first."""
    sizes = Counter(p.stat().st_size for p in dataset.rglob("*.jpg"))
    shared = sorted(p.name for p in dataset.rglob("*.jpg") if sizes[p.stat().st_size] > 1)
    assert {"0.jpg", "copy.jpg"} <= set(shared) and len(shared) < 7
    first = _run(dataset)
    assert _names(spy, "hashed") == shared
    assert spy["decode"] == 6 and first.stats["decoded"] == 6
    assert first.stats["hashed"] == 7  # each file's digest is known and stored, by whichever read it
    spy.clear()
    second = _run(dataset)
    assert spy["decode"] == 0 and _names(spy, "hashed") == []
    # A store that holds signatures reads every unknown file's digest first, as before.
    (dataset / "test/10.jpg").write_bytes((dataset / "test/10.jpg").read_bytes() + b"\0")
    spy.clear()
    third = _run(dataset)
    assert _names(spy, "hashed") == ["10.jpg"] and spy["decode"] == 1
    assert [f.id for f in second.findings] == [f.id for f in first.findings] == [f.id for f in third.findings] != []


def test_touched_file_is_rehashed_only(dataset: Path, spy: Counter) -> None:
    """A new mtime re-hashes that file alone, no decode; new content decodes that file alone."""
    _run(dataset)
    spy.clear()
    st = os.stat(dataset / "train/2.jpg")
    os.utime(dataset / "train/2.jpg", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    report = _run(dataset)
    assert _names(spy, "hashed") == ["2.jpg"]
    assert spy["decode"] == 0
    assert (report.stats["hashed"], report.stats["decoded"]) == (1, 0)
    spy.clear()
    save(photo(99, SMALL), dataset / "train/3.jpg", quality=90)
    report = _run(dataset)
    assert _names(spy, "hashed") == ["3.jpg"]
    assert _names(spy, "signed") == ["3.jpg"]
    assert spy["decode"] == 1
    spy.clear()
    assert _run(dataset).stats["decoded"] == 0
    assert _names(spy, "hashed") == []


def test_renamed_and_copied_files_reuse_signatures(dataset: Path, spy: Counter) -> None:
    """Same content under a new path costs a hash and no decode."""
    _run(dataset)
    spy.clear()
    os.rename(dataset / "train/1.jpg", dataset / "train/renamed.jpg")
    shutil.copy(dataset / "train/4.jpg", dataset / "train/copied.jpg")
    report = _run(dataset)
    assert _names(spy, "hashed") == ["copied.jpg", "renamed.jpg"]
    assert spy["decode"] == 0
    assert report.stats["decoded"] == 0
    # The copy is a new within-split duplicate, found from cached signatures alone.
    assert any(
        {m.path for m in f.members} == {"train/4.jpg", "train/copied.jpg"} for f in report.findings
    )


def test_new_thumbnail_size_recomputes_thumbnails_only(dataset: Path, spy: Counter) -> None:
    """Changing `thumbnail.size` decodes again for thumbnails but reuses the perceptual hashes."""
    _run(dataset)
    assert (spy["phash"], spy["thumb"]) == (6, 6)
    spy.clear()
    write_policy(dataset, POLICY + "detectors: {thumbnail: {size: 8}}\n")
    _run(dataset)
    assert (spy["phash"], spy["thumb"]) == (0, 6)
    with closing(sqlite3.connect(dataset / ".leakcheck/cache.sqlite")) as conn:
        rows = dict(
            conn.execute("SELECT family || ' ' || params, count(*) FROM signatures GROUP BY 1")
        )
    thumbs = sorted(n for key, n in rows.items() if key.startswith("thumb "))
    phashes = [n for key, n in rows.items() if key.startswith("hash:identity ")]
    assert thumbs == [6, 6]
    assert phashes == [6]
    spy.clear()
    write_policy(dataset, POLICY + "detectors: {phash: {kind: dhash}}\n")
    _run(dataset)
    assert (spy["phash"], spy["thumb"]) == (6, 0)


def test_no_pixels_are_stored(dataset: Path) -> None:
    """Store rows hold hashes, tiny thumbnails and descriptors only: no blob near the size of an image."""
    for i in range(20):
        save(photo(200 + i), dataset / f"train/big_{i}.png")
    report = _run(dataset)
    n = report.stats["files"]
    cache = dataset / ".leakcheck/cache.sqlite"
    with closing(sqlite3.connect(cache)) as conn:
        biggest = conn.execute("SELECT max(length(data)) FROM signatures "
                               "WHERE family NOT IN ('fine', 'scene', 'scene_grey')").fetchone()[0]
        fine = conn.execute("SELECT max(length(data)) FROM signatures WHERE family = 'fine'").fetchone()[0]
        scene = conn.execute("SELECT max(length(data)) FROM signatures WHERE family = 'scene'").fetchone()[0]
        grey = conn.execute("SELECT max(length(data)) FROM signatures WHERE family = 'scene_grey'").fetchone()[0]
        rows = conn.execute("SELECT count(*) FROM files").fetchone()[0]
    assert rows == n
    # The largest row is the aligned detector's descriptors (on by default): a 32x32 grey
    # square and 128 gradient bins, 1,280 bytes.
    assert biggest <= 1500
    # Large images (these 160 x 120 ones) also keep aligned's 96 px grey square, packed: at most
    # its 9,216 bytes and a few more, a sixth of the picture's pixels.
    assert fine <= 1 + 96 * 96 + 64
    # Images of 96 px and more also keep same-scene's keypoints (position and descriptor, 36 bytes
    # each, at most FEATURES) and turned-copy's grey image of at most 128 px, deflated: no colour.
    assert scene <= 6 + 36 * 384 and grey <= 5 + 128 * 128 + 64
    # A 160x120 RGB image is 57,600 bytes of pixels; the store keeps under 12 kB per image
    # (8.5 kB measured at this size with the aligned descriptors, SQLite pages included),
    # and under 10 kB more for each large image's fine square (two 4 kB pages and its cell),
    # plus aligned's stored model (its retrieval index and levels), a fixed cost per store.
    assert cache.stat().st_size < 12_000 * n + 10_000 * 20 + 64_000 + 32_000 * 20


def test_garbage_at_the_store_path_is_left_alone(dataset: Path) -> None:
    """A file at the store path that is not a leakcheck store is never moved: a store error naming `cache`.

    (Until issue 10 any unreadable file there was renamed and replaced, whatever it was.)
    """
    cache = dataset / ".leakcheck/cache.sqlite"
    cache.parent.mkdir()
    cache.write_bytes(b"definitely not sqlite " * 500)
    with pytest.raises(StoreError, match="`cache`: is a file, not a signature store made by leakcheck"):
        _run(dataset)
    assert cache.read_bytes() == b"definitely not sqlite " * 500
    assert sorted(p.name for p in cache.parent.iterdir()) == ["cache.sqlite"]


def test_damaged_store_is_moved_aside_and_rebuilt(dataset: Path) -> None:
    """Our store, damaged past its header, becomes `*.corrupt-<time>` with a warning, and a new one is built."""
    _run(dataset)
    cache = dataset / ".leakcheck/cache.sqlite"
    damaged = cache.read_bytes()[:100] + b"\xff" * (cache.stat().st_size - 100)
    cache.write_bytes(damaged)
    report = _run(dataset)
    assert len(report.warnings) == 1
    assert "unreadable signature store" in report.warnings[0]
    assert "store set aside" in report.warnings[0] and "rebuilt" in report.warnings[0]
    aside = list(cache.parent.glob("cache.sqlite.corrupt-*"))
    assert len(aside) == 1
    assert aside[0].read_bytes() == damaged
    assert aside[0].name in report.warnings[0]
    assert report.stats["decoded"] == 6
    again = _run(dataset)
    assert again.warnings == ()
    assert again.stats["decoded"] == 0


def test_store_of_another_schema_is_rebuilt(dataset: Path) -> None:
    """A store written by another schema version is set aside, not misread."""
    _run(dataset)
    cache = dataset / ".leakcheck/cache.sqlite"
    with closing(sqlite3.connect(cache)) as conn, conn:
        conn.execute(
            "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),)
        )
    report = _run(dataset)
    assert len(report.warnings) == 1
    assert f"schema version {SCHEMA_VERSION + 1}" in report.warnings[0]
    assert len(list(cache.parent.glob("cache.sqlite.corrupt-*"))) == 1
    assert report.stats["decoded"] == 6


def test_warning_is_shown_in_text_report(dataset: Path, run_cli) -> None:
    """The CLI prints the store warning in its report and still checks."""
    _run(dataset)
    cache = dataset / ".leakcheck/cache.sqlite"
    cache.write_bytes(cache.read_bytes()[:100] + b"\0" * 8192)
    code, out, err = run_cli("check", "--policy", str(dataset / "leakcheck.yaml"), "-j", "1")
    assert code == 1
    assert "warning: " in out and "unreadable signature store" in out
    assert "Traceback" not in err


def test_unwritable_cache_location_exits_2(dataset: Path, run_cli) -> None:
    """A cache path under a regular file is a store error: exit 2 naming the folder and the key."""
    (dataset / "blocker").write_text("a file, not a folder")
    write_policy(dataset, POLICY + "cache: blocker/cache.sqlite\n")
    code, _, err = run_cli("check", "--policy", str(dataset / "leakcheck.yaml"), "-j", "1")
    assert code == EXIT_USAGE
    assert err.startswith(f"Error: {dataset / 'blocker'}: `cache`: cannot create the cache folder")
    assert "Traceback" not in err


def test_store_round_trip_in_memory() -> None:
    """Rows written to a store come back unchanged, keyed by digest, family and params."""
    with open_store(None) as store:
        store.put_signatures(
            [
                (b"d" * 32, "thumb", "p1", True, b"\x01\x02"),
                (b"e" * 32, "error", "p1", False, b"why"),
            ]
        )
        store.put_files([("a/b.jpg", 10, 123, b"d" * 32)])
        assert store.get_signatures([b"d" * 32, b"e" * 32], "thumb", "p1") == {
            b"d" * 32: (True, b"\x01\x02")
        }
        assert store.get_signatures([b"e" * 32], "error", "p1") == {b"e" * 32: (False, b"why")}
        assert store.get_signatures([b"d" * 32], "thumb", "p2") == {}
        assert store.lookup_files(["a/b.jpg", "x.jpg"]) == {"a/b.jpg": (10, 123, b"d" * 32)}


def _sqlite_memory_used() -> int | None:
    """Bytes SQLite holds in this process (``sqlite3_memory_used``), None where it cannot be asked."""
    import ctypes
    import _sqlite3

    try:
        used = ctypes.CDLL(_sqlite3.__file__).sqlite3_memory_used
    except (OSError, AttributeError):
        return None
    used.restype = ctypes.c_int64
    return int(used())


def test_store_without_a_path_keeps_its_rows_out_of_memory() -> None:
    """`--no-cache`'s store (no path) is a temporary file: 40 MB of rows leave SQLite's memory near
    its page cache, where ``:memory:`` held them all (600 MB of a 12,887-image check)."""
    if _sqlite_memory_used() is None:
        pytest.skip("this SQLite does not say how much memory it uses")
    row = os.urandom(40_000)
    with open_store(None) as store:
        before = _sqlite_memory_used()
        for k in range(10):
            store.put_signatures([(k.to_bytes(2, "big") + i.to_bytes(30, "big"), "scene", "p", True, row)
                                  for i in range(100)])
        grown = _sqlite_memory_used() - before
        got = store.get_signatures([(9).to_bytes(2, "big") + (99).to_bytes(30, "big")], "scene", "p")
    assert got == {(9).to_bytes(2, "big") + (99).to_bytes(30, "big"): (True, row)}
    assert grown < 10_000_000, grown


@pytest.mark.slow
def test_two_concurrent_runs_share_one_store(dataset: Path) -> None:
    """Two `leakcheck check` processes on one store at once both succeed; the store stays intact."""
    for i in range(12):
        save(photo(300 + i, SMALL), dataset / f"test/more_{i}.jpg", quality=90)
    cmd = [
        sys.executable,
        "-m",
        "pytest_leakcheck",
        "check",
        "--policy",
        str(dataset / "leakcheck.yaml"),
        "--format",
        "json",
        "-j",
        "1",
    ]
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=300) for p in procs]
    # stderr holds nothing but the one-line timing summary (issue 15).
    quiet = [[line for line in err.splitlines() if not line.startswith("leakcheck: 19 images in ")]
             for _, err in outputs]
    assert [(p.returncode, q) for p, q in zip(procs, quiet)] == [(1, []), (1, [])]
    assert outputs[0][0].count('"kind"') == outputs[1][0].count('"kind"') > 0
    cache = dataset / ".leakcheck/cache.sqlite"
    with closing(sqlite3.connect(cache)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT count(*) FROM files").fetchone()[0] == 19
    assert list(cache.parent.glob("*.corrupt-*")) == []
    assert _run(dataset).stats["decoded"] == 0


def test_snapshot_gives_the_same_signatures_as_the_tables(dataset: Path) -> None:
    """A warm check from the snapshot equals one rebuilt from the per-file tables."""
    from pytest_leakcheck.detectors import families
    from pytest_leakcheck.dataset.inventory import scan
    from pytest_leakcheck.policy.load import load
    from pytest_leakcheck.pipeline.run import RunOptions
    from pytest_leakcheck.pipeline.signatures import compute
    from pytest_leakcheck.store.keys import signatures as key
    from pytest_leakcheck.store.db import open_store

    policy = load(dataset / "leakcheck.yaml")

    def snapshot_key(policy):
        return key(families(policy), policy.files.max_pixels)

    first = _run(dataset)
    with open_store(policy.cache) as store:
        assert store.load_snapshot(snapshot_key(policy)) is not None
        records = scan(policy).records
        from_snapshot = compute(records, policy, store, RunOptions(jobs=1), update_snapshot=False)
        store.conn.execute("DELETE FROM snapshots")
        from_tables = compute(records, policy, store, RunOptions(jobs=1), update_snapshot=False)
        assert store.load_snapshot(snapshot_key(policy)) is None
    assert from_snapshot.digests == from_tables.digests
    for name in ("valid", "dims"):
        assert (getattr(from_snapshot, name) == getattr(from_tables, name)).all()
    assert from_snapshot.arrays.keys() == from_tables.arrays.keys() >= {"hash:identity", "thumb"}
    for name, arr in from_tables.arrays.items():
        assert (from_snapshot.arrays[name] == arr).all()
    assert from_snapshot.errors == from_tables.errors
    assert (from_snapshot.stats["decoded"], from_tables.stats["decoded"]) == (0, 0)
    assert [f.id for f in _run(dataset).findings] == [f.id for f in first.findings]


def test_corrupt_snapshot_sets_the_store_aside(dataset: Path) -> None:
    """A snapshot row that does not decode is damage like any other: store set aside, check rerun, never a failure.

    (Until issue 10 it was silently rebuilt from the tables, whatever else the damage had hit.)
    """
    first = _run(dataset)
    with closing(sqlite3.connect(dataset / ".leakcheck/cache.sqlite")) as conn, conn:
        conn.execute("UPDATE snapshots SET data = ?", (b"not a zip file",))
    again = _run(dataset)
    assert len(again.warnings) == 1 and "store set aside" in again.warnings[0]
    assert "a stored snapshot cannot be read" in again.warnings[0]
    assert again.stats["decoded"] == 6
    assert [f.id for f in again.findings] == [f.id for f in first.findings]
    with closing(sqlite3.connect(dataset / ".leakcheck/cache.sqlite")) as conn:
        (data,) = conn.execute("SELECT data FROM snapshots WHERE key LIKE 'signatures:%'").fetchone()
    assert data[:8] == b"LKSNAP1\n"
    assert _run(dataset).stats["decoded"] == 0


def test_garbage_inside_a_snapshot_array_is_damage_not_data(dataset: Path) -> None:
    """Bytes changed inside an array (the header intact) fail its checksum: the store is set aside
    and the findings are those of a fresh check, never signatures read from garbage."""
    first = _run(dataset)
    path = dataset / ".leakcheck/cache.sqlite"
    with closing(sqlite3.connect(path)) as conn, conn:
        (rowid, data) = conn.execute("SELECT rowid, data FROM snapshots WHERE key LIKE 'signatures:%'").fetchone()
        spoilt = bytearray(data)
        spoilt[-40:-20] = bytes(b ^ 0xA5 for b in spoilt[-40:-20])  # inside the last array, far from the header
        assert spoilt != data
        conn.execute("UPDATE snapshots SET data = ? WHERE rowid = ?", (bytes(spoilt), rowid))
    again = _run(dataset)
    assert len(again.warnings) == 1 and "does not match its checksum" in again.warnings[0]
    assert [f.id for f in again.findings] == [f.id for f in first.findings]


def test_version_1_store_is_upgraded_in_place(dataset: Path) -> None:
    """A store written by schema version 1 keeps its signatures and gains the snapshot table."""
    _run(dataset)
    path = dataset / ".leakcheck/cache.sqlite"
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("DROP TABLE snapshots")
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    report = _run(dataset)
    assert report.stats["decoded"] == 0
    assert report.warnings == ()
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("2",)
        assert conn.execute("SELECT count(*) FROM snapshots WHERE key LIKE 'signatures:%'").fetchone() == (1,)
