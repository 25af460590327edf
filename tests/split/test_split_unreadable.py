"""`leakcheck split` says how many files it could not read (held-out probe 9 of issue 37).

`ctdwt` (CT slices as DICOM and as float64 TIFFs, not split yet): before float64 TIFFs were read, the
split placed all 100 TIFFs without a word, 28 of them in the other split from their own DICOM.
"""

from __future__ import annotations

from pathlib import Path

from pytest_leakcheck.cli import main
from pytest_leakcheck.testing import photo


def test_split_names_the_files_it_could_not_read(tmp_path: Path, capsys) -> None:
    for k in range(6):
        photo(k).save(tmp_path / f"img_{k}.png")
    (tmp_path / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 40)
    (tmp_path / "leakcheck.yaml").write_text("version: 1\nsplits: {manifest: splits.csv}\n")
    assert main(["split", "--policy", str(tmp_path / "leakcheck.yaml"), "--test", "0.3", "-j", "1",
                 "-o", str(tmp_path / "splits.csv")]) == 0
    out = capsys.readouterr().out
    assert "1 file could not be read: placed without any copy of theirs" in out, out
    assert "broken.png" in (tmp_path / "splits.csv").read_text()  # still placed: the check reports it
