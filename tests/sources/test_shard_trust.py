"""Shards a pull request writes (issue 34, classes 2, 3, 7 and 12): every member is checked or
the shard is refused naming it; a shard path and a member name never stand for each other; a
Parquet bomb is refused by its declared sizes or read in bounded memory; no shard gives exit 3."""

from __future__ import annotations

import io
import json
import os
import resource
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from pytest_leakcheck import EXIT_LEAKS, EXIT_USAGE
from pytest_leakcheck.testing import photo

from ..conftest import write_policy

SMALL = (64, 48)
PACKAGE = str(Path(__file__).resolve().parents[2])


def _jpeg(seed: int) -> bytes:
    buf = io.BytesIO()
    photo(seed, SMALL).save(buf, "JPEG", quality=90)
    return buf.getvalue()


def _tar(path: Path, members: list[tuple[str, bytes]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w") as tf:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))


def _check(run_cli, root: Path) -> tuple[int, str, str]:
    return run_cli("check", "--policy", str(root / "leakcheck.yaml"), "-j", "1", "--no-cache")


def _train(root: Path) -> None:
    _tar(root / "shards/train-0.tar", [(f"t{k}.jpg", _jpeg(k)) for k in range(3)])


def test_a_tar_with_two_members_of_one_name_is_refused_naming_it(tmp_path: Path, run_cli) -> None:
    """The first `x.jpg` is a copy of a train image; the second, which extraction keeps, is not."""
    _train(tmp_path)
    _tar(tmp_path / "shards/test-0.tar", [("x.jpg", _jpeg(1)), ("y.jpg", _jpeg(20)), ("x.jpg", _jpeg(21))])
    write_policy(tmp_path, "version: 1\nsplits:\n  webdataset: {train: shards/train-*.tar, test: shards/test-*.tar}\n")
    code, _, err = _check(run_cli, tmp_path)
    assert code == EXIT_USAGE, err
    assert "test-0.tar" in err and "two members are named 'x.jpg'" in err and "Traceback" not in err


def test_a_folder_named_like_a_shard_cannot_stand_in_for_it(tmp_path: Path, run_cli) -> None:
    """`shards/x.tar#d/real.tar` holds a copy; a decoy `shards/x.tar` holds, under the member name
    `d/real.tar#c.jpg`, a distinct picture. The member path must never be read from the decoy."""
    _train(tmp_path)
    _tar(tmp_path / "shards/x.tar#d/real.tar", [("c.jpg", _jpeg(2))])
    _tar(tmp_path / "decoy/x.tar", [("d/real.tar#c.jpg", _jpeg(30))])
    os.rename(tmp_path / "decoy/x.tar", tmp_path / "shards/x.tar")
    write_policy(tmp_path, "version: 1\nsplits:\n  webdataset: {train: shards/train-*.tar, test: 'shards/x.tar#d/*.tar'}\n")
    code, _, err = _check(run_cli, tmp_path)
    assert code == EXIT_USAGE, err
    assert "x.tar#d/real.tar" in err and "named like a shard" in err


def test_a_parquet_shard_below_a_folder_named_like_a_shard_is_refused(tmp_path: Path, run_cli) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    def table(seeds: list[int]) -> pa.Table:
        return pa.table({"image": pa.array([_jpeg(s) for s in seeds], pa.binary())})

    (tmp_path / "data/x.parquet#d").mkdir(parents=True)
    pq.write_table(table([1, 2]), tmp_path / "data/train.parquet")
    pq.write_table(table([2]), tmp_path / "data/x.parquet#d/test.parquet")
    pq.write_table(table([40]), tmp_path / "data/x.parquet")
    write_policy(tmp_path, "version: 1\nsplits:\n  huggingface: {train: data/train.parquet, "
                           "test: 'data/x.parquet#d/*.parquet'}\n")
    code, _, err = _check(run_cli, tmp_path)
    assert code == EXIT_USAGE, err
    assert "named like a shard" in err


def test_a_file_beside_a_shard_named_like_its_member_is_refused(tmp_path: Path, run_cli) -> None:
    _train(tmp_path)
    _tar(tmp_path / "shards/test-0.tar", [("c.jpg", _jpeg(1))])
    (tmp_path / "shards/test-0.tar#c.jpg").write_bytes(_jpeg(50))  # a decoy for the member
    write_policy(tmp_path, "version: 1\nsplits:\n  webdataset: {train: shards/train-*.tar, test: shards/test-*.tar}\n")
    code, _, err = _check(run_cli, tmp_path)
    assert code == EXIT_USAGE and "named like one of its members" in err, err


def test_a_deeply_nested_json_member_is_exit_2_naming_it(tmp_path: Path, run_cli) -> None:
    _train(tmp_path)
    _tar(tmp_path / "shards/test-0.tar", [("k.jpg", _jpeg(9)), ("k.json", b"[" * 200_000 + b"]" * 200_000)])
    write_policy(tmp_path, "version: 1\nsplits:\n  webdataset: {train: shards/train-*.tar, test: shards/test-*.tar,"
                           " columns: {group: subject}}\n")
    code, _, err = _check(run_cli, tmp_path)
    assert code == EXIT_USAGE, err
    assert "k.json" in err and "not valid JSON" in err and "Traceback" not in err


def _bomb(path: Path, rows: int, cell: int) -> None:
    """``rows`` rows of one ``cell``-byte value, compressed to almost nothing.  Written by a child:
    writing takes gigabytes, and a process's peak memory is inherited by the children it starts."""
    code = ("import pyarrow as pa, pyarrow.parquet as pq, sys; "
            "kind = pa.struct([('bytes', pa.binary()), ('path', pa.string())]); "
            "one = pa.table({'image': pa.array([{'bytes': b'\\0' * %d, 'path': 'a.jpg'}], kind)}); "
            "pq.write_table(one.take(pa.array([0] * %d)), sys.argv[1], compression='zstd', row_group_size=%d)"
            % (cell, rows, rows))
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, timeout=300)


def test_a_parquet_dictionary_bomb_is_read_in_bounded_memory(tmp_path: Path) -> None:
    """1,500 rows of one 1 MB value: about 22 kB on disk, 1.5 GB read plainly.  In a child under a
    3 GB address-space limit it is a finding (the cells are no image), not exit 3, and the
    child's peak memory stays far below what the rows would take."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "data").mkdir()
    pq.write_table(pa.table({"image": pa.array([_jpeg(1), _jpeg(2)], pa.binary())}), tmp_path / "data/train.parquet")
    _bomb(tmp_path / "data/test.parquet", 1500, 1 << 20)
    assert (tmp_path / "data/test.parquet").stat().st_size < 64 << 10
    write_policy(tmp_path, "version: 1\nsplits:\n  huggingface: {train: data/train.parquet, test: data/test.parquet}\n")
    limit = 3 << 30
    # The child's own high-water mark (VmHWM, of its own address space): ru_maxrss also counts the
    # peak it inherits from this pytest process, which grows with the tests run before it.
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (%d, %d)); "
            "from pytest_leakcheck.cli import main; rc = main(sys.argv[1:]); "
            "hwm = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')]; "
            "print('PEAK', hwm[0] if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); "
            "sys.exit(rc)" % (limit, limit))
    proc = subprocess.run([sys.executable, "-c", code, "check", "--policy", str(tmp_path / "leakcheck.yaml"),
                           "-j", "1", "--no-cache"], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": PACKAGE})
    assert proc.returncode == EXIT_LEAKS, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    peak_mb = int(proc.stderr.rsplit("PEAK", 1)[1].split()[0]) / 1024
    assert peak_mb < 1000, peak_mb  # one row group's declared bytes (parquet.MAX_ROW_GROUP) at most


def test_a_parquet_row_group_declared_past_the_bound_is_exit_2_naming_it(tmp_path: Path, run_cli,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A compressed bomb is refused from its metadata, before a page is read (the bound is lowered
    here so the bomb can be small: 8 MB of zeros, 1 kB compressed)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pytest_leakcheck.files import parquet

    monkeypatch.setattr(parquet, "MAX_ROW_GROUP", 4 << 20)
    (tmp_path / "data").mkdir()
    pq.write_table(pa.table({"image": pa.array([_jpeg(1), _jpeg(2)], pa.binary())}), tmp_path / "data/train.parquet")
    pq.write_table(pa.table({"image": pa.array([b"\0" * (8 << 20)], pa.binary())}), tmp_path / "data/test.parquet",
                   compression="zstd", use_dictionary=False)
    assert (tmp_path / "data/test.parquet").stat().st_size < 4096
    write_policy(tmp_path, "version: 1\nsplits:\n  huggingface: {train: data/train.parquet, test: data/test.parquet}\n")
    code, _, err = _check(run_cli, tmp_path)
    assert code == EXIT_USAGE, err
    assert "test.parquet" in err and "row group 0 inflates to" in err
