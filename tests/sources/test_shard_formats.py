"""Shards as the libraries and users write them: many row groups, rows stored by path only, damaged tars."""

from __future__ import annotations

import io
import json
from pathlib import Path

from pytest_leakcheck import EXIT_LEAKS
from pytest_leakcheck.testing import photo

SMALL = (64, 48)


def _jpeg(seed: int) -> bytes:
    buf = io.BytesIO()
    photo(seed, SMALL).save(buf, "JPEG", quality=90)
    return buf.getvalue()


def _struct_parquet(path: Path, cells: list[dict], row_group_size: int) -> None:
    """An ``Image``-like struct column written by pyarrow itself (pandas users, older ``datasets``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"img": cells, "label": ["a"] * len(cells)}), path, row_group_size=row_group_size)


def test_an_image_struct_in_many_row_groups_is_recognised_and_checked(tmp_path: Path, run_cli) -> None:
    # Reading the struct's names across row groups at once fails in pyarrow: the shards were skipped by
    # init ("no splits recognised") and stopped the check.
    train = [{"bytes": _jpeg(i), "path": f"{i}.jpg"} for i in range(5)]
    test = [{"bytes": _jpeg(20 + i), "path": f"t{i}.jpg"} for i in range(3)] + [{"bytes": _jpeg(3), "path": "c.jpg"}]
    _struct_parquet(tmp_path / "train.parquet", train, row_group_size=2)
    _struct_parquet(tmp_path / "test.parquet", test, row_group_size=2)
    code, out, err = run_cli("init", str(tmp_path))
    assert code == 0, err
    assert "Hugging Face shards train*.parquet: 5 images in train" in out
    code, out, _ = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "-j", "1", "--format", "json")
    assert code == EXIT_LEAKS
    copies = [{m["path"] for m in f["members"]} for f in json.loads(out)["findings"] if f["kind"] == "identical-file"]
    assert copies == [{"train.parquet#row=000003/3.jpg", "test.parquet#row=000003/c.jpg"}]


def test_rows_stored_by_path_only_are_said_by_init_and_never_followed(tmp_path: Path, run_cli) -> None:
    # datasets' to_parquet keeps only the path of a local image file; init called such shards
    # "embedded, checked in place", and the fix it printed (cast_column Image(decode=True)) embeds nothing.
    from datasets import Dataset, Features
    from datasets import Image as HFImage

    outside, root = tmp_path / "outside", tmp_path / "repo"
    outside.mkdir()
    for i in (1, 2):
        (outside / f"{i}.jpg").write_bytes(_jpeg(1))  # the same picture: following the paths would find a copy
    for split, i in (("train", 1), ("test", 2)):
        (root / "data").mkdir(parents=True, exist_ok=True)
        Dataset.from_dict({"image": [str(outside / f"{i}.jpg")]}, features=Features({"image": HFImage()})).to_parquet(
            str(root / "data" / f"{split}-00000-of-00001.parquet"))
    code, out, err = run_cli("init", str(root))
    assert code == 0, err
    assert "1 images in train (1 stored by path only, not embedded)" in out
    assert "Warning: 2 of 2 rows of the Hugging Face shards store their image by path only" in out
    code, out, _ = run_cli("check", "--policy", str(root / "leakcheck.yaml"), "-j", "1", "--format", "json")
    findings = json.loads(out)["findings"]
    assert {f["kind"] for f in findings} == {"unreadable-image"}
    assert all("embed_table_storage" in f["message"] and "Image(decode=True)" not in f["message"] for f in findings)


def _tar(path: Path, n: int, seed: int, seeds: tuple[int, ...] = ()) -> None:
    import tarfile

    with tarfile.open(path, "w") as tf:
        for i in range(n):
            data = _jpeg(seeds[i] if seeds else seed + i)
            info = tarfile.TarInfo(f"{i:06d}.jpg")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))


def test_a_damaged_or_compressed_tar_shard_is_named_as_such_by_init_and_check(tmp_path: Path, run_cli) -> None:
    # A tar cut short was "not an uncompressed tar ... unpack a .tar.gz", and init hid it behind
    # "no splits recognised".
    import gzip

    from pytest_leakcheck import EXIT_USAGE

    _tar(tmp_path / "train-000000.tar", 3, 0)
    _tar(tmp_path / "test-000000.tar", 3, 10)
    code, _, err = run_cli("init", str(tmp_path))
    assert code == 0, err
    whole = (tmp_path / "test-000000.tar").read_bytes()
    (tmp_path / "test-000000.tar").write_bytes(whole[:1500])
    code, _, err = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "-j", "1")
    assert code == EXIT_USAGE and "test-000000.tar" in err and "damaged or cut short" in err
    (tmp_path / "leakcheck.yaml").unlink()
    code, _, err = run_cli("init", str(tmp_path))
    assert code == EXIT_USAGE and "test-000000.tar" in err and "damaged or cut short" in err
    (tmp_path / "test-000000.tar").write_bytes(gzip.compress(whole))
    code, _, err = run_cli("init", str(tmp_path))
    assert code == EXIT_USAGE and "test-000000.tar" in err and "a compressed tar" in err and "cut short" not in err


def _bytes_parquet(path: Path, images: list[bytes]) -> None:
    """A plain binary image column, two rows per row group."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"image_bytes": images}), path, row_group_size=2)


def test_a_damaged_row_group_spoils_its_rows_only(tmp_path: Path, run_cli) -> None:
    # One corrupt page made every row of the shard an unreadable image, so the copies in its
    # other row groups were never compared.
    import pyarrow.parquet as pq

    _bytes_parquet(tmp_path / "train.parquet", [_jpeg(0), _jpeg(1)])
    _bytes_parquet(tmp_path / "test.parquet", [_jpeg(30 + i) for i in range(5)] + [_jpeg(1)])
    chunk = pq.ParquetFile(tmp_path / "test.parquet").metadata.row_group(1).column(0)  # rows 2-3
    data = bytearray((tmp_path / "test.parquet").read_bytes())
    start = chunk.dictionary_page_offset or chunk.data_page_offset
    data[start:start + chunk.total_compressed_size] = b"A" * chunk.total_compressed_size
    (tmp_path / "test.parquet").write_bytes(bytes(data))
    (tmp_path / "leakcheck.yaml").write_text("version: 1\nsplits:\n  huggingface: {train: train.parquet, "
                                            "test: test.parquet}\n")
    code, out, _ = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "-j", "1", "--format", "json")
    findings = json.loads(out)["findings"]
    bad = sorted(f["members"][0]["path"] for f in findings if f["kind"] == "unreadable-image")
    assert bad == ["test.parquet#row=000002", "test.parquet#row=000003"]
    assert "row group 1 (rows 2-3)" in next(f["message"] for f in findings if f["kind"] == "unreadable-image")
    copies = [{m["path"] for m in f["members"]} for f in findings if f["kind"] == "identical-file"]
    assert copies == [{"train.parquet#row=000001", "test.parquet#row=000005"}]


POINTER = b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"ab" * 32 + b"\nsize 400423444\n"


def test_git_lfs_pointers_in_place_of_shards_and_images_say_git_lfs_pull(tmp_path: Path, run_cli) -> None:
    # A clone without git-lfs: init said "no splits recognised", the check "Parquet magic bytes not
    # found ... re-write it with datasets", an image "not an image Pillow can identify".
    (tmp_path / "data").mkdir()
    for split in ("train", "validation"):
        (tmp_path / "data" / f"{split}-00000-of-00001.parquet").write_bytes(POINTER)
    code, _, err = run_cli("init", str(tmp_path))
    assert code == 2 and "Git LFS pointers" in err and "git lfs pull" in err
    (tmp_path / "leakcheck.yaml").write_text("version: 1\nsplits:\n  huggingface: {train: data/train-*.parquet, "
                                            "val: data/validation-*.parquet}\n")
    code, _, err = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "-j", "1")
    assert code == 2 and "train-00000-of-00001.parquet" in err and "git lfs pull" in err
    files = tmp_path / "files"
    for split in ("train", "test"):
        (files / split).mkdir(parents=True)
        (files / split / "a.jpg").write_bytes(_jpeg(0 if split == "train" else 5))
    (files / "test" / "b.jpg").write_bytes(POINTER)
    (files / "leakcheck.yaml").write_text("version: 1\nsplits: {train: [train/**], test: [test/**]}\n")
    code, out, _ = run_cli("check", "--policy", str(files / "leakcheck.yaml"), "-j", "1", "--format", "json")
    bad = [f for f in json.loads(out)["findings"] if f["kind"] == "unreadable-image"]
    assert [f["members"][0]["path"] for f in bad] == ["test/b.jpg"] and "git lfs pull" in bad[0]["message"]


def test_a_process_keeps_one_row_group_of_images_not_one_per_open_shard(tmp_path: Path) -> None:
    # Train and test shards are read in turn; each kept its last row group (100 MB for large photos
    # in datasets 5), so a worker held one per open shard: 758 MB peak for two 64 MB shards, 640 MB after.
    from pytest_leakcheck.files import members

    paths = []
    for name, seed in (("a.parquet", 0), ("b.parquet", 10)):
        _bytes_parquet(tmp_path / name, [_jpeg(seed), _jpeg(seed + 1)])
        paths.append(str(tmp_path / name))
    assert members.read(f"{paths[0]}#row=000000") == _jpeg(0)
    assert members.read(f"{paths[1]}#row=000001") == _jpeg(11)
    kept = [value for key, (_, value) in members._open.items() if key in paths]
    assert [t._values is not None for t in kept] == [False, True]
    assert members.read(f"{paths[0]}#row=000001") == _jpeg(1)  # read again when asked


def test_a_binary_image_column_is_named_by_its_file_name_column(tmp_path: Path, run_cli) -> None:
    # A finding named only `test.parquet#row=000001`: the row's own file_name was left out.
    import pyarrow as pa
    import pyarrow.parquet as pq

    for split, images, names in (("train", [_jpeg(0), _jpeg(1)], ["a.jpg", "b.jpg"]),
                                 ("test", [_jpeg(5), _jpeg(1)], ["x.jpg", "copy.jpg"])):
        pq.write_table(pa.table({"file_name": names, "image_bytes": images}), tmp_path / f"{split}.parquet")
    (tmp_path / "leakcheck.yaml").write_text("version: 1\nsplits:\n  huggingface: {train: train.parquet, "
                                            "test: test.parquet}\n")
    code, out, _ = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "-j", "1", "--format", "json")
    copies = [{m["path"] for m in f["members"]} for f in json.loads(out)["findings"] if f["kind"] == "identical-file"]
    assert copies == [{"train.parquet#row=000001/b.jpg", "test.parquet#row=000001/copy.jpg"}]


def _mask() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("L", SMALL, 0).save(buf, "PNG")
    return buf.getvalue()


def test_a_segmentation_shard_is_checked_by_its_image_column_not_its_masks(tmp_path: Path, run_cli) -> None:
    # The first Image column was read: every empty mask the same, so different photos made one
    # identical-file error across splits; `columns: {image: ...}` was accepted and ignored.
    import pyarrow as pa
    import pyarrow.parquet as pq

    for split, seeds in (("train", (0, 1, 2)), ("test", (10, 11, 12))):
        pq.write_table(pa.table({"annotation": [{"bytes": _mask(), "path": "m.png"} for _ in seeds],
                                 "image": [{"bytes": _jpeg(i), "path": f"{i}.jpg"} for i in seeds]}),
                       tmp_path / f"{split}.parquet")
    code, out, err = run_cli("init", str(tmp_path))
    assert code == 0, err
    assert "image column `image` of annotation, image" in out
    code, out, _ = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "-j", "1", "--format", "json")
    assert json.loads(out)["findings"] == []
    (tmp_path / "leakcheck.yaml").write_text("version: 1\nsplits:\n  huggingface: {train: train.parquet, "
                                            "test: test.parquet, columns: {image: annotation}}\n")
    code, _, err = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "-j", "1")
    assert code == 2 and "the images read are column `image`" in err


def test_shards_named_after_their_dataset_get_a_glob_and_a_shard_no_glob_matches_is_reported(
        tmp_path: Path, run_cli) -> None:
    # `mydata-train-000000.tar` was listed by name (the glob stopped before the split word and matched
    # every split), so `mydata-train-000001.tar` added later was in no split and silently unchecked.
    (tmp_path / "shards").mkdir()
    _tar(tmp_path / "shards" / "mydata-train-000000.tar", 2, 0)
    _tar(tmp_path / "shards" / "mydata-test-000000.tar", 2, 10)
    code, out, err = run_cli("init", str(tmp_path))
    assert code == 0, err
    assert "WebDataset shards shards/mydata-train*.tar: 2 images in train" in out
    (tmp_path / "leakcheck.yaml").write_text("version: 1\nsplits:\n  webdataset:\n"
                                            "    train: [shards/mydata-train-000000.tar]\n"
                                            "    test: [shards/mydata-test-000000.tar]\n")
    _tar(tmp_path / "shards" / "mydata-train-000001.tar", 2, 20)
    code, out, _ = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "-j", "1", "--format", "json")
    unassigned = [f["members"][0]["path"] for f in json.loads(out)["findings"] if f["kind"] == "unassigned-file"]
    assert unassigned == ["shards/mydata-train-000001.tar"]


def test_a_tar_damaged_after_its_first_member_stops_the_check_instead_of_passing(tmp_path: Path, run_cli) -> None:
    # tarfile stops without a word at a bad header after the first: the members behind it were never
    # listed, and the check passed (exit 0) over a copy it had not seen.
    from pytest_leakcheck import EXIT_USAGE

    _tar(tmp_path / "train-000000.tar", 3, 0)
    _tar(tmp_path / "test-000000.tar", 3, 10)
    code, _, err = run_cli("init", str(tmp_path))
    assert code == 0, err
    _tar(tmp_path / "test-000000.tar", 3, 0, seeds=(50, 1, 2))  # the second and third copy train's
    shard = tmp_path / "test-000000.tar"
    whole = bytearray(shard.read_bytes())
    second = 512 + (len(_jpeg(50)) + 511) // 512 * 512  # the second member's header
    assert whole[second:second + 10].startswith(b"000001.jpg")
    whole[second:second + 100] = b"\xff" * 100  # its name and mode: the checksum no longer holds
    shard.write_bytes(bytes(whole))
    code, _, err = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "-j", "1")
    assert code == EXIT_USAGE, err
    assert "test-000000.tar" in err and "damaged" in err and "000000.jpg" in err and f"byte {second}" in err


def test_a_tar_with_data_after_its_end_marker_is_named(tmp_path: Path, run_cli) -> None:
    # Two tars joined with `cat`: a loader stops at the first end marker, and so did the check,
    # without saying that it had not looked at the rest.
    from pytest_leakcheck import EXIT_USAGE

    _tar(tmp_path / "train-000000.tar", 2, 0)
    _tar(tmp_path / "test-000000.tar", 2, 10)
    code, _, err = run_cli("init", str(tmp_path))
    assert code == 0, err
    import tarfile

    extra = io.BytesIO()
    with tarfile.open(fileobj=extra, mode="w") as tf:  # copies of train's, under names of their own
        for i in (0, 1):
            data = _jpeg(i)
            info = tarfile.TarInfo(f"{i + 2:06d}.jpg")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    shard = tmp_path / "test-000000.tar"
    shard.write_bytes(shard.read_bytes() + extra.getvalue())
    code, _, err = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "-j", "1")
    assert code == EXIT_USAGE, err
    assert "test-000000.tar" in err and "after its end" in err


def test_rows_stored_by_path_only_are_one_finding_per_shard(tmp_path: Path, run_cli) -> None:
    # Every such row was a finding of its own: a shard of 10,000 rows written without embedding
    # gave 10,000 findings saying one thing.
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = {"train": 2, "test": 3}
    for split, n in rows.items():
        cells = [{"bytes": None, "path": f"/elsewhere/{split}{i}.jpg"} for i in range(n)]
        pq.write_table(pa.table({"image": cells + [{"bytes": _jpeg(7 if split == "train" else 8), "path": None}]}),
                       tmp_path / f"{split}.parquet")
    (tmp_path / "leakcheck.yaml").write_text("version: 1\nsplits:\n  huggingface: {train: train.parquet, "
                                            "test: test.parquet}\n")
    code, out, _ = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "-j", "1", "--format", "json")
    assert code == EXIT_LEAKS
    found = [f for f in json.loads(out)["findings"] if f["kind"] == "unreadable-image"]
    assert sorted(len(f["members"]) for f in found) == [2, 3]
    test = next(f for f in found if len(f["members"]) == 3)
    assert test["message"].startswith("test.parquet: 3 rows") and "by path only" in test["message"]
    assert "embed_table_storage" in test["message"]
