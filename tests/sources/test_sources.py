"""Each split source on its own, and each kind of bad input it can meet (issue 25)."""

from __future__ import annotations

import re

import io
import json
import tarfile
from pathlib import Path

import pytest

from pytest_leakcheck import EXIT_LEAKS, EXIT_USAGE
from pytest_leakcheck.errors import PolicyError
from pytest_leakcheck.dataset.inventory import scan
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.testing import photo, save

from ..conftest import write_policy

SMALL = (64, 48)


def _check(run_cli, root: Path) -> tuple[int, dict, str]:
    code, out, err = run_cli("check", "--policy", str(root / "leakcheck.yaml"), "-j", "1", "--format", "json")
    return code, (json.loads(out) if out.strip().startswith("{") else {}), err


def _jpeg(seed: int) -> bytes:
    buf = io.BytesIO()
    photo(seed, SMALL).save(buf, "JPEG", quality=90)
    return buf.getvalue()


def _copies(report: dict) -> list[set[str]]:
    return [{m["path"] for m in f["members"]} for f in report["findings"] if f["kind"] == "identical-file"]


# --------------------------------------------------------------------------
# Tables


@pytest.mark.parametrize("suffix", ["csv", "tsv", "jsonl", "parquet"])
def test_a_table_maps_columns_and_names_its_image_folder(tmp_path: Path, suffix: str, run_cli) -> None:
    rows = [("a.jpg", "train", "p1"), ("b.jpg", "train", "p2"), ("c.jpg", "test", "p2"), ("d.jpg", "test", "p3")]
    for n, (name, _, _) in enumerate(rows):
        (tmp_path / "pics").mkdir(exist_ok=True)
        (tmp_path / "pics" / name).write_bytes(_jpeg(n if name != "d.jpg" else 0))  # d is a's copy
    if suffix == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"img": [r[0] for r in rows], "fold": [r[1] for r in rows],
                                 "patient": [r[2] for r in rows]}), tmp_path / "t.parquet")
    elif suffix == "jsonl":
        (tmp_path / "t.jsonl").write_text("".join(json.dumps({"img": a, "fold": b, "patient": c}) + "\n"
                                                  for a, b, c in rows))
    else:
        sep = "\t" if suffix == "tsv" else ","
        (tmp_path / f"t.{suffix}").write_text(f"img{sep}fold{sep}patient\n" + "".join(
            f"{a}{sep}{b}{sep}{c}\n" for a, b, c in rows))
    write_policy(tmp_path, f"version: 1\nsplits:\n  table:\n    file: t.{suffix}\n    images: pics\n"
                 "    columns: {file: img, split: fold, group: patient}\n")
    inv = scan(load(tmp_path / "leakcheck.yaml"))
    assert {(r.path, r.split, r.group) for r in inv.records} == {(f"pics/{a}", b, c) for a, b, c in rows}
    code, report, _ = _check(run_cli, tmp_path)
    assert code == EXIT_LEAKS
    assert _copies(report) == [{"pics/a.jpg", "pics/d.jpg"}]
    assert _pseudonyms(report, "patient") == 1


def test_one_table_per_split_without_a_split_column(tmp_path: Path) -> None:
    for split, seed in (("train", 1), ("test", 2)):
        save(photo(seed, SMALL), tmp_path / split / "x.jpg")
        (tmp_path / split / "metadata.csv").write_text("file_name,subject_id\nx.jpg,S1\n")
    write_policy(tmp_path, "version: 1\nsplits:\n  table:\n    train: train/metadata.csv\n"
                 "    test: {file: test/metadata.csv, images: test}\n    columns: {group: subject_id}\n")
    policy = load(tmp_path / "leakcheck.yaml")
    assert policy.split_names == ("train", "test")
    assert {(r.path, r.split, r.group) for r in scan(policy).records} == {
        ("train/x.jpg", "train", "S1"), ("test/x.jpg", "test", "S1")}


@pytest.mark.parametrize("body, line, message", [
    ("file,split\nok.jpg,train\n\"bad,train\nx\n", None, "malformed"),  # an unterminated quote
    ("file,split\nok.jpg,train\nb.jpg,test,extra\n", 3, "row has 3 cells, the header 2"),
    ("file,split\nok.jpg,train\n,test\n", 3, "row with an empty file"),
    ("file,split\nok.jpg,train\n" + "y" * 70_000 + ".jpg,test\n", 3, "a cell of 70,004 characters"),
])
def test_a_bad_table_row_is_exit_2_naming_file_and_line(tmp_path: Path, run_cli, body: str, line: int | None,
                                                        message: str) -> None:
    save(photo(1, SMALL), tmp_path / "ok.jpg")
    (tmp_path / "t.csv").write_text(body)
    write_policy(tmp_path, "version: 1\nsplits:\n  table: {file: t.csv, columns: {file: file, split: split}}\n")
    code, _, err = _check(run_cli, tmp_path)
    assert code == EXIT_USAGE
    assert message in err and "t.csv" in err
    if line is not None:
        assert f"t.csv:{line}" in err


def test_a_bad_jsonl_line_is_exit_2_naming_its_line(tmp_path: Path, run_cli) -> None:
    save(photo(1, SMALL), tmp_path / "a.jpg")
    (tmp_path / "m.jsonl").write_text('{"file_name": "a.jpg", "split": "train"}\n[1, 2]\n')
    write_policy(tmp_path, "version: 1\nsplits:\n  metadata: m.jsonl\n")
    code, _, err = _check(run_cli, tmp_path)
    assert code == EXIT_USAGE and "m.jsonl:2" in err and "not a JSON object" in err


def test_a_table_naming_files_that_do_not_exist_gives_missing_findings(tmp_path: Path, run_cli) -> None:
    save(photo(1, SMALL), tmp_path / "images/a.jpg")
    save(photo(2, SMALL), tmp_path / "images/b.jpg")
    (tmp_path / "labels.csv").write_text("filename,split\na.jpg,train\nb.jpg,test\ngone.jpg,test\n")
    write_policy(tmp_path, "version: 1\nsplits:\n  table: {file: labels.csv, images: images}\n")
    code, report, _ = _check(run_cli, tmp_path)
    assert code == EXIT_LEAKS
    assert [(f["kind"], f["members"][0]["path"]) for f in report["findings"]] == [("missing-file", "images/gone.jpg")]


@pytest.mark.parametrize("spec, key, message", [
    ("{file: nope.csv}", "splits.table.file", "table 'nope.csv' not found"),
    ("{file: labels.csv, columns: {file: fname, colour: x}}", "splits.table.columns.colour", "unknown key"),
    ("{file: labels.csv, images: ../elsewhere}", "splits.table.images", "outside the policy's folder"),
    ("{file: labels.csv, columns: {file: fname}}", None, "table has no column `fname`"),
])
def test_table_policy_errors_name_the_key(tmp_path: Path, spec: str, key: str | None, message: str) -> None:
    (tmp_path / "labels.csv").write_text("filename,split\n")
    write_policy(tmp_path, f"version: 1\nsplits:\n  table: {spec}\n")
    with pytest.raises(PolicyError) as err:
        scan(load(tmp_path / "leakcheck.yaml"))
    assert message in str(err.value)
    if key:
        assert key in str(err.value)


# --------------------------------------------------------------------------
# YOLO


def test_yolo_folders_txt_lists_and_lists_of_either_under_path(tmp_path: Path, run_cli) -> None:
    base = tmp_path / "ds"
    for name, seed in (("a", 1), ("b", 2), ("c", 3), ("d", 4)):
        save(photo(seed, SMALL), base / f"images/train/{name}.jpg")
    save(photo(5, SMALL), base / "images/extra/e.jpg")
    (base / "images/val").mkdir(parents=True)
    (base / "images/val/copy.jpg").write_bytes((base / "images/train/a.jpg").read_bytes())
    save(photo(6, SMALL), base / "images/test1/t.jpg")
    (base / "test.txt").write_text("./images/test1/t.jpg\n")
    (base / "data.yaml").write_text("path: .\ntrain: [images/train, images/extra]\nval: images/val\n"
                                    "test: [test.txt]\nnames: {0: thing}\n")
    write_policy(tmp_path, "version: 1\nsplits:\n  yolo: ds/data.yaml\n")
    policy = load(tmp_path / "leakcheck.yaml")
    assert policy.split_names == ("train", "val", "test")
    splits = {r.path: r.split for r in scan(policy).records}
    assert splits["ds/images/extra/e.jpg"] == "train" and splits["ds/images/test1/t.jpg"] == "test"
    code, report, _ = _check(run_cli, tmp_path)
    assert code == EXIT_LEAKS
    assert _copies(report) == [{"ds/images/train/a.jpg", "ds/images/val/copy.jpg"}]


def test_yolo_list_naming_a_file_outside_root_is_refused(tmp_path: Path) -> None:
    save(photo(1, SMALL), tmp_path / "images/train/a.jpg")
    (tmp_path / "val.txt").write_text("../../etc/passwd.jpg\n")
    (tmp_path / "data.yaml").write_text("train: images/train\nval: val.txt\n")
    write_policy(tmp_path, "version: 1\nsplits:\n  yolo: data.yaml\n")
    with pytest.raises(PolicyError) as err:
        scan(load(tmp_path / "leakcheck.yaml"))
    assert "outside root" in str(err.value) and "val.txt:1" in str(err.value)


# --------------------------------------------------------------------------
# Hugging Face shards


def _hf(rows: list[dict], path: Path) -> None:
    from datasets import Dataset, Features, Value
    from datasets import Image as HFImage

    features = Features({"image": HFImage(), "subject_id": Value("string")})
    path.parent.mkdir(parents=True, exist_ok=True)
    Dataset.from_dict({"image": [r["image"] for r in rows], "subject_id": [r["subject_id"] for r in rows]},
                      features=features).to_parquet(str(path))


def test_huggingface_parquet_is_checked_in_place_naming_shard_and_row(tmp_path: Path, run_cli) -> None:
    train = [{"image": {"bytes": _jpeg(i), "path": f"{i}.jpg"}, "subject_id": f"s{i}"} for i in range(4)]
    test = [{"image": {"bytes": _jpeg(10), "path": "x.jpg"}, "subject_id": "s9"},
            {"image": {"bytes": _jpeg(2), "path": "copy.jpg"}, "subject_id": "s1"}]
    _hf(train, tmp_path / "data/train-00000-of-00001.parquet")
    _hf(test, tmp_path / "data/test-00000-of-00001.parquet")
    write_policy(tmp_path, "version: 1\nsplits:\n  huggingface:\n    train: data/train-*.parquet\n"
                 "    test: data/test-*.parquet\n    columns: {group: subject_id}\n")
    code, report, _ = _check(run_cli, tmp_path)
    assert code == EXIT_LEAKS
    assert _copies(report) == [{"data/train-00000-of-00001.parquet#row=000002/2.jpg",
                                "data/test-00000-of-00001.parquet#row=000001/copy.jpg"}]
    assert _pseudonyms(report, "subject_id") == 1


def test_a_changed_shard_decodes_only_its_changed_rows(tmp_path: Path, run_cli) -> None:
    rows = [{"image": {"bytes": _jpeg(i), "path": f"{i}.jpg"}, "subject_id": f"s{i}"} for i in range(6)]
    _hf(rows, tmp_path / "data/train-0.parquet")
    _hf(rows[:1], tmp_path / "data/test-0.parquet")
    write_policy(tmp_path, "version: 1\nsplits:\n  huggingface: {train: data/train-*, test: data/test-*}\n")
    assert _check(run_cli, tmp_path)[1]["stats"]["decoded"] == 6
    rows[3] = {"image": {"bytes": _jpeg(33), "path": "3b.jpg"}, "subject_id": "s3"}  # one row changes
    _hf(rows + [{"image": {"bytes": _jpeg(44), "path": "n.jpg"}, "subject_id": "s4"}],  # one row is added
        tmp_path / "data/train-0.parquet")
    stats = _check(run_cli, tmp_path)[1]["stats"]
    assert (stats["files"], stats["decoded"]) == (8, 2)


def test_bytes_that_are_not_an_image_are_a_finding_naming_shard_and_row(tmp_path: Path, run_cli) -> None:
    rows = [{"image": {"bytes": _jpeg(1), "path": "a.jpg"}, "subject_id": "s1"},
            {"image": {"bytes": b"%PDF-1.4 not a picture", "path": "b.jpg"}, "subject_id": "s2"}]
    _hf(rows, tmp_path / "train.parquet")
    _hf(rows[:1], tmp_path / "test.parquet")
    write_policy(tmp_path, "version: 1\nsplits:\n  huggingface: {train: train.parquet, test: test.parquet}\n")
    code, report, _ = _check(run_cli, tmp_path)
    bad = [f for f in report["findings"] if f["kind"] == "unreadable-image"]
    assert code == EXIT_LEAKS
    assert [f["members"][0]["path"] for f in bad] == ["train.parquet#row=000001/b.jpg"]


def test_a_shard_that_is_not_parquet_is_exit_2_naming_it(tmp_path: Path, run_cli) -> None:
    (tmp_path / "train.parquet").write_bytes(b"PAR1 this is no parquet file")
    (tmp_path / "test.parquet").write_bytes(b"nor this")
    write_policy(tmp_path, "version: 1\nsplits:\n  huggingface: {train: train.parquet, test: test.parquet}\n")
    code, _, err = _check(run_cli, tmp_path)
    assert code == EXIT_USAGE and "train.parquet" in err and "not a readable Parquet shard" in err


def test_save_to_disk_arrow_files_are_read(tmp_path: Path) -> None:
    from datasets import Dataset, DatasetDict, Features, Value
    from datasets import Image as HFImage

    features = Features({"image": HFImage(), "label": Value("int64")})
    parts = {s: Dataset.from_dict({"image": [{"bytes": _jpeg(i + k), "path": None} for i in range(3)],
                                   "label": [0, 1, 0]}, features=features) for k, s in enumerate(("train", "test"))}
    DatasetDict(parts).save_to_disk(str(tmp_path / "saved"))
    write_policy(tmp_path, "version: 1\nsplits:\n  huggingface:\n    train: saved/train/*.arrow\n"
                 "    test: saved/test/*.arrow\n")
    records = scan(load(tmp_path / "leakcheck.yaml")).records
    assert [r.path for r in records if r.split == "test"] == [
        f"saved/test/data-00000-of-00001.arrow#row={i:06d}" for i in range(3)]


# --------------------------------------------------------------------------
# WebDataset


def _tar(path: Path, members: dict[str, bytes]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))


def test_webdataset_members_are_checked_in_place_naming_shard_and_key(tmp_path: Path, run_cli) -> None:
    import webdataset as wds

    (tmp_path / "shards").mkdir()
    for split, seeds in (("train", (1, 2, 3)), ("test", (4, 2))):
        with wds.TarWriter(str(tmp_path / f"shards/{split}-000000.tar")) as sink:
            for k, seed in enumerate(seeds):
                sink.write({"__key__": f"{split}{k:03d}", "jpg": _jpeg(seed), "cls": b"1",
                            "json": json.dumps({"subject_id": f"p{seed}"}).encode()})
    write_policy(tmp_path, "version: 1\nsplits:\n  webdataset:\n    train: shards/train-*.tar\n"
                 "    test: shards/test-*.tar\n    columns: {group: subject_id}\n")
    code, report, _ = _check(run_cli, tmp_path)
    assert code == EXIT_LEAKS
    assert _copies(report) == [{"shards/train-000000.tar#train001.jpg", "shards/test-000000.tar#test001.jpg"}]
    assert _pseudonyms(report, "subject_id") == 1


def test_a_shard_that_is_not_a_tar_is_exit_2_naming_it(tmp_path: Path, run_cli) -> None:
    _tar(tmp_path / "train-0.tar", {"a.jpg": _jpeg(1)})
    (tmp_path / "test-0.tar").write_bytes(b"\x1f\x8b gzip, not a plain tar" * 40)
    write_policy(tmp_path, "version: 1\nsplits:\n  webdataset: {train: train-*.tar, test: test-*.tar}\n")
    code, _, err = _check(run_cli, tmp_path)
    assert code == EXIT_USAGE and "test-0.tar" in err and "uncompressed" in err


def test_a_glob_matching_no_shard_is_a_policy_error(tmp_path: Path) -> None:
    _tar(tmp_path / "train-0.tar", {"a.jpg": _jpeg(1)})
    write_policy(tmp_path, "version: 1\nsplits:\n  webdataset: {train: train-*.tar, test: tst-*.tar}\n")
    with pytest.raises(PolicyError) as err:
        load(tmp_path / "leakcheck.yaml")
    assert "splits.webdataset.test" in str(err.value) and "no .tar shard" in str(err.value)


def test_member_paths_keep_real_files_with_a_hash_in_their_name(tmp_path: Path) -> None:
    from pytest_leakcheck.files import members
    from pytest_leakcheck.files.remote import read_bytes

    save(photo(1, SMALL), tmp_path / "odd.tar#1.jpg")
    assert members.split("odd.tar#1.jpg") == ("odd.tar", "1.jpg")
    assert read_bytes(str(tmp_path / "odd.tar#1.jpg"))[:2] == b"\xff\xd8"


def test_a_shard_linked_outside_root_is_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "data", tmp_path / "elsewhere"
    _tar(outside / "secret.tar", {"a.jpg": _jpeg(1)})
    _tar(root / "test-0.tar", {"b.jpg": _jpeg(2)})
    (root / "train-0.tar").symlink_to(outside / "secret.tar")
    write_policy(root, "version: 1\nsplits:\n  webdataset: {train: train-*.tar, test: test-*.tar}\n")
    with pytest.raises(PolicyError) as err:
        load(root / "leakcheck.yaml")
    assert "outside the policy's folder" in str(err.value) and "splits.webdataset.train" in str(err.value)


def _pseudonyms(report: dict, column: str) -> int:
    """How many group-split findings there are, each naming its group by a keyed pseudonym of ``column``
    (a patient or subject column names people: docs/policy-groups.md), never by the value."""
    names = [f["message"].split("'")[1] for f in report["findings"] if f["kind"] == "group-split"]
    assert all(re.fullmatch(rf"{column}-[0-9a-f]{{12}}", n) for n in names), names
    return len(names)
