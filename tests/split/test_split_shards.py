"""`leakcheck split` on images inside shards: refused, not an empty manifest written as if done."""

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


def test_split_refuses_a_policy_of_shards_and_writes_nothing(tmp_path: Path, run_cli) -> None:
    # The pooled search walked files, found no row of the shards, and wrote a manifest of 0 files.
    _tar(tmp_path / "train-000000.tar", (0, 1, 2))
    _tar(tmp_path / "test-000000.tar", (1, 5))
    (tmp_path / "leakcheck.yaml").write_text("version: 1\nsplits:\n  webdataset: {train: train-*.tar, "
                                            "test: test-*.tar}\n")
    out_csv = tmp_path / "splits.csv"
    code, _, err = run_cli("split", "--policy", str(tmp_path / "leakcheck.yaml"), "--test", "0.2",
                           "-o", str(out_csv), "-j", "1")
    assert code == 2 and "inside webdataset shards" in err
    assert not out_csv.exists()
