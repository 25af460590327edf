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
