"""`leakcheck export` and export.table(): one row per image, joined with the report and the store."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
from pathlib import Path

import imagehash
import pyarrow.parquet as pq
import pytest
from PIL import Image

from pytest_leakcheck import EXIT_CLEAN, EXIT_USAGE, check
from pytest_leakcheck.integrations import export
from pytest_leakcheck.testing import photo, save

from ..conftest import expected_leaks, write_policy

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SMALL = (64, 48)


def _by_path(tab: export.Table) -> dict[str, dict[str, str]]:
    return {r["path"]: r for r in tab.records()}


def _distance(a: str, b: str) -> int:
    return bin(int(a, 16) ^ int(b, 16)).count("1")


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """A copy of the bundled example, so checks never write a store into the repository."""
    shutil.copytree(EXAMPLES / "data", tmp_path / "data")
    shutil.copy(EXAMPLES / "leakcheck.yaml", tmp_path / "leakcheck.yaml")
    return tmp_path / "leakcheck.yaml"


@pytest.mark.slow
def test_one_row_per_image_and_the_copy_cluster_of_each(leaky_dataset: Path) -> None:
    policy = leaky_dataset / "leakcheck.yaml"
    tab = export.table(policy)
    rows = _by_path(tab)
    on_disk = sorted(p.relative_to(leaky_dataset).as_posix() for p in leaky_dataset.rglob("*.*")
                     if p.suffix in (".jpg", ".png"))
    assert sorted(rows) == on_disk
    report = check(policy)
    for test_path, train_path in expected_leaks().items():
        cluster = rows[test_path]["cluster"]
        assert cluster and rows[train_path]["cluster"] == cluster, test_path
        finding = next(f for f in report.findings if f.id == cluster)
        assert {test_path, train_path} <= {m.path for m in finding.members}
        assert rows[test_path]["kind"] == finding.kind
        assert (rows[test_path]["severity"], rows[test_path]["status"]) == ("error", "new")
        assert rows[test_path]["findings"].split()[0] == cluster
        assert (rows[test_path]["split"], rows[train_path]["split"]) == ("test", "train")
    for i in range(10):
        row = rows[f"test/distinct_{i:02d}.jpg"]
        assert row["cluster"] == row["kind"] == row["severity"] == row["findings"] == ""


@pytest.mark.slow
def test_digests_and_hashes_are_those_of_the_files(leaky_dataset: Path) -> None:
    tab = export.table(leaky_dataset / "leakcheck.yaml")
    # The policy searches hflip and rot90, and rot90 brings its inverse.
    assert [c for c in tab.columns if c.startswith("phash_")] == [
        "phash_identity", "phash_hflip", "phash_rot90", "phash_rot270"]
    rows = _by_path(tab)
    for path, row in rows.items():
        data = (leaky_dataset / path).read_bytes()
        assert row["digest"] == hashlib.sha256(data).hexdigest()
        with Image.open(leaky_dataset / path) as img:
            # imagehash's own hex form, bit for bit up to the draft decode's few bits.
            assert _distance(row["phash_identity"], str(imagehash.phash(img))) <= 4, path
    assert rows["test/identical.jpg"]["phash_identity"] == rows["train/img_000.jpg"]["phash_identity"]
    # The flipped copy's identity hash is the original's hflip hash (and rot90 alike).
    assert _distance(rows["train/img_005.jpg"]["phash_hflip"], rows["test/hflip.jpg"]["phash_identity"]) <= 4
    assert _distance(rows["train/img_006.jpg"]["phash_rot90"], rows["test/rot90.jpg"]["phash_identity"]) <= 4
    assert _distance(rows["train/img_005.jpg"]["phash_identity"], rows["test/hflip.jpg"]["phash_identity"]) > 16


def test_pixel_digest_where_the_check_computed_one(example: Path) -> None:
    rows = _by_path(export.table(example))
    png, jpg = rows["data/test/scene_35.png"], rows["data/train/scene_05.jpg"]
    assert png["kind"] == "identical-pixels"
    assert len(png["pixel_digest"]) == 64 and png["pixel_digest"] == jpg["pixel_digest"]
    assert png["digest"] != jpg["digest"]
    # Files that were never a candidate for identical pixels were never fully decoded.
    assert rows["data/test/scene_25.jpg"]["pixel_digest"] == ""


def test_every_file_of_a_split_group_names_the_group_split_finding(tmp_path: Path) -> None:
    for i in range(5):
        save(photo(i, SMALL), tmp_path / f"train/part1_shot{i}.jpg")
        save(photo(10 + i, SMALL), tmp_path / f"train/part2_shot{i}.jpg")
    for i in range(4):
        save(photo(20 + i, SMALL), tmp_path / f"test/part1_shot{5 + i}.jpg")
    policy = write_policy(tmp_path, "version: 1\nsplits: {train: [train/**], test: [test/**]}\n"
                                    "groups:\n  - regex: '(?P<group>part\\d+)_shot'\n")
    tab = export.table(policy)
    split_group = next(f for f in check(policy).findings if f.kind == "group-split")
    # The finding lists all nine files, and the table marks each of them once.
    assert len(split_group.members) == 9
    rows = tab.records()
    part1 = [r for r in rows if r["group"] == "part1"]
    assert len(part1) == 9 and all(r["findings"] == split_group.id for r in part1)
    assert all(r["findings"] == "" and r["group"] == "part2" for r in rows if r not in part1)
    assert all(r["cluster"] == "" for r in rows)  # a group split is not a copy


@pytest.mark.slow
def test_a_table_after_a_check_reads_the_store_not_the_files(leaky_dataset: Path) -> None:
    policy = leaky_dataset / "leakcheck.yaml"
    report = check(policy)
    before = _by_path(export.table(policy, report=report))
    # Overwrite a file with zeros of the same size and keep its mtime: the store
    # trusts size and mtime, so only a table that re-read or decoded it would change.
    path = leaky_dataset / "test/hflip.jpg"
    st = path.stat()
    path.write_bytes(b"\0" * st.st_size)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = _by_path(export.table(policy, report=report))
    assert after == before
    assert after["test/hflip.jpg"]["digest"] != hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_writers_round_trip(example: Path, tmp_path: Path, suffix: str) -> None:
    tab = export.table(example)
    out = tmp_path / "out" / f"images{suffix}"
    assert export.write(tab, out) == suffix[1:]
    if suffix == ".csv":
        with open(out, newline="", encoding="utf-8") as fh:
            back = list(csv.DictReader(fh))
    elif suffix == ".jsonl":
        back = [json.loads(line) for line in out.read_text().splitlines()]
    else:
        back = pq.read_table(out).to_pylist()
    assert back == tab.records()
    assert out.stat().st_mode & 0o777 == 0o644
    assert [p.name for p in out.parent.iterdir()] == [out.name]  # no temporary file left behind


def test_export_command(example: Path, tmp_path: Path, run_cli) -> None:
    code, out, _ = run_cli("export", "--policy", str(example))
    assert code == EXIT_CLEAN
    lines = out.splitlines()
    assert lines[0].startswith("path,split,group,digest,pixel_digest,phash_identity,phash_hflip,cluster,")
    assert len(lines) == 1 + 37
    code, _, err = run_cli("export", "--policy", str(example), "-o", str(tmp_path / "t.jsonl"))
    assert code == EXIT_CLEAN and "37 images, 12 in copy clusters" in err
    assert len((tmp_path / "t.jsonl").read_text().splitlines()) == 37


@pytest.mark.parametrize(("args", "words"), [
    (["-o", "table.txt"], ["table.txt", "`--format`", ".parquet"]),
    (["--format", "parquet"], ["stdout", "-o FILE.parquet"]),
])
def test_export_usage_errors(example: Path, tmp_path: Path, run_cli, args: list[str], words: list[str]) -> None:
    args = [str(tmp_path / a) if a.endswith(".txt") else a for a in args]
    code, out, err = run_cli("export", "--policy", str(example), *args)
    assert code == EXIT_USAGE and out == ""
    assert all(w in err for w in words), err


@pytest.mark.slow
def test_a_cluster_the_baseline_accepts_is_known_and_a_false_alarm_has_none(example: Path, run_cli) -> None:
    assert run_cli("baseline", "--policy", str(example))[0] == EXIT_CLEAN
    assert run_cli("judge", "7207f23022fe", "distinct", "--reason", "test", "--policy", str(example))[0] == 0
    rows = _by_path(export.table(example))
    assert rows["data/test/scene_32.jpg"]["status"] == "known"  # recorded: a real copy, accepted for now
    assert rows["data/test/scene_31.jpg"]["cluster"] == ""  # judged distinct: not a copy at all
