"""A DICOM file whose pixels no decoder reads keeps its patient group: its header is read all the same.

Held-out looks of stop 50: a patient's slice in test whose pixel data is labelled MPEG-2 (or is
cut short) was an unreadable warning and no group, so with ``files.unreadable: warning`` the
patient in both splits passed with exit 0 and ``leakcheck split`` had nothing to move.
"""

from __future__ import annotations

import json
from pathlib import Path

import pydicom
import pytest

from pytest_leakcheck import EXIT_CLEAN, EXIT_LEAKS
from pytest_leakcheck import testing_dicom as td

from ..conftest import write_policy
from .conftest import SECRET_ID, SECRET_NAME, patient

FOLDERS = "version: 1\nsplits: {train: [train/**], test: [test/**]}\nfiles: {unreadable: warning}\n"
PATIENTS = FOLDERS + "groups: [{dicom: PatientID}]\nungrouped: warning\n"


def _cut_short(path: Path) -> None:
    """Pixel data a quarter of what Rows x Columns needs: the header is fine, the pixels are not."""
    ds = pydicom.dcmread(path)
    ds.PixelData = ds.PixelData[: len(ds.PixelData) // 4]
    ds.save_as(path, enforce_file_format=True)


def _tree(root: Path, broken: str) -> None:
    """The secret patient: two slices in train, one unreadable slice in test; another patient in test."""
    who = patient(7, SECRET_ID, SECRET_NAME)
    td.write(root / "train/a.dcm", td.ct_slice(1), who, instance=1)
    td.write(root / "train/a2.dcm", td.ct_slice(3), who, instance=2)
    if broken == "mpeg2":  # a video syntax with no still-image decoder; the header is readable
        td.write(root / "test/b.dcm", td.ct_slice(2), who, instance=3, syntax="1.2.840.10008.1.2.4.100")
    else:
        _cut_short(td.write(root / "test/b.dcm", td.ct_slice(2), who, instance=3))
    td.write(root / "test/c.dcm", td.ct_slice(4), patient(8))


def _check(run_cli, root: Path) -> tuple[int, list[dict], str]:
    code, out, err = run_cli("check", "--policy", str(root / "leakcheck.yaml"), "--format", "json", "-j", "1")
    return code, json.loads(out)["findings"], out + err


@pytest.mark.parametrize("broken", ["mpeg2", "cut-short"])
def test_an_unreadable_slice_keeps_its_patient_group(tmp_path: Path, run_cli, broken: str) -> None:
    _tree(tmp_path, broken)
    write_policy(tmp_path, PATIENTS)
    for _ in range(2):  # cold, then from the store
        code, findings, text = _check(run_cli, tmp_path)
        assert code == EXIT_LEAKS
        kinds = {(f["kind"], m["path"]) for f in findings for m in f["members"]}
        assert ("group-split", "test/b.dcm") in kinds and ("unreadable-image", "test/b.dcm") in kinds
        assert ("ungrouped-file", "test/b.dcm") not in kinds
        assert SECRET_ID not in text and SECRET_NAME.split("^")[0] not in text
    code, out, err = run_cli("split", "--policy", str(tmp_path / "leakcheck.yaml"), "-j", "1")
    assert code == EXIT_CLEAN, err
    assert [line for line in out.splitlines() if line.startswith("mv ")] == ["mv test/b.dcm train/b.dcm"]
    assert SECRET_ID not in out + err


def test_a_rule_added_later_reads_the_header_of_a_stored_unreadable_file(tmp_path: Path, run_cli) -> None:
    """The store knows the file is unreadable from a check without the rule (or an older version):
    its header is read then, without decoding any pixel again."""
    _tree(tmp_path, "mpeg2")
    write_policy(tmp_path, FOLDERS)
    assert _check(run_cli, tmp_path)[0] == EXIT_CLEAN
    write_policy(tmp_path, PATIENTS)
    code, findings, _ = _check(run_cli, tmp_path)
    assert code == EXIT_LEAKS
    assert [sorted(m["path"] for m in f["members"]) for f in findings if f["kind"] == "group-split"] == [
        ["test/b.dcm", "train/a.dcm", "train/a2.dcm"]]
