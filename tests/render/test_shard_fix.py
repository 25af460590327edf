"""The Fix lines of copies inside shards: `leakcheck split` cannot move rows, so it is not offered."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from pytest_leakcheck.testing import photo


def _tar(path: Path, seeds: tuple[int, ...]) -> None:
    with tarfile.open(path, "w") as tf:
        for i in seeds:
            buf = io.BytesIO()
            photo(i, (64, 48)).save(buf, "JPEG")
            info = tarfile.TarInfo(f"{i:06d}.jpg")
            info.size = len(buf.getvalue())
            tf.addfile(info, io.BytesIO(buf.getvalue()))


def test_copies_inside_shards_are_fixed_in_the_shards_not_by_leakcheck_split(tmp_path: Path, run_cli) -> None:
    # The text told users of shards to "let `leakcheck split` plan it", which refuses shards.
    _tar(tmp_path / "train-000000.tar", (0, 1, 2))
    _tar(tmp_path / "test-000000.tar", (1, 5))
    (tmp_path / "leakcheck.yaml").write_text("version: 1\nsplits:\n  webdataset: {train: train-*.tar, "
                                            "test: test-*.tar}\n")
    code, out, _ = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "-j", "1", "-q")
    assert code == 1
    assert "when the shards are written again" in out and "leakcheck split" not in out


def test_rows_without_an_image_are_not_told_to_replace_a_damaged_file(tmp_path: Path, run_cli) -> None:
    # Rows stored by path only got "replace or delete the damaged file": there is no file to replace.
    import pyarrow as pa
    import pyarrow.parquet as pq

    for split in ("train", "test"):
        pq.write_table(pa.table({"image": [{"bytes": None, "path": f"/elsewhere/{split}.jpg"}]}),
                       tmp_path / f"{split}.parquet")
    (tmp_path / "leakcheck.yaml").write_text("version: 1\nsplits:\n  huggingface: {train: train.parquet, "
                                            "test: test.parquet}\n")
    code, out, _ = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "-j", "1", "-q")
    assert code == 1
    assert "Fix (unreadable-image): write the rows again" in out and "damaged file" not in out
