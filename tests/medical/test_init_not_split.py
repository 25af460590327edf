"""`leakcheck init` on DICOM slices not split yet names the patient rule in its fix.

Held-out probe 9 (issue 37): 100 Kaggle CT slices of 54 TCGA patients in one folder. `init` said
"not split yet: a leakcheck.yaml of `version: 1` and `splits: {manifest: splits.csv}`, then
`leakcheck split`"; done as said, the split put 11 of the 54 patients in train and test, as a policy
without a group rule keeps only copies together.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pydicom

from pytest_leakcheck import EXIT_USAGE
from pytest_leakcheck import testing_dicom as td

from .conftest import SECRET_ID, patient


def test_the_not_split_fix_names_the_patient_rule_and_split_then_keeps_patients_whole(tmp_path: Path, run_cli) -> None:
    people = [patient(0, SECRET_ID)] + [patient(k) for k in range(1, 6)]
    for k in range(18):  # 6 patients, 3 slices each, in one folder
        td.write(tmp_path / f"scans/s{k:02d}.dcm", td.ct_slice(40 + k, side=64), people[k % 6], instance=k + 1)
    code, out, err = run_cli("init", str(tmp_path))
    assert code == EXIT_USAGE and "no splits recognised" in err
    assert "`groups: [{dicom: PatientID}]` (patients from DICOM PatientID: 6 patients over 18 of 18" in err
    assert "keeps copies and groups together" in err and SECRET_ID not in out + err
    (tmp_path / "leakcheck.yaml").write_text(
        "version: 1\nsplits: {manifest: splits.csv}\ngroups: [{dicom: PatientID}]\n")
    code, _, err = run_cli("split", "--policy", str(tmp_path / "leakcheck.yaml"), "--test", "0.3", "-o",
                           str(tmp_path / "splits.csv"), "-j", "1")
    assert code == 0, err
    per: dict[str, set[str]] = {}
    for row in csv.DictReader((tmp_path / "splits.csv").open()):
        per.setdefault(str(pydicom.dcmread(tmp_path / row["path"]).PatientID), set()).add(row["split"])
    assert len(per) == 6 and all(len(s) == 1 for s in per.values()), per


def test_without_dicom_the_not_split_fix_is_unchanged(tmp_path: Path, run_cli) -> None:
    from pytest_leakcheck.testing import photo

    (tmp_path / "cats").mkdir()
    for k in range(4):
        photo(k).save(tmp_path / f"cats/c{k}.png")
    code, _, err = run_cli("init", str(tmp_path))
    assert code == EXIT_USAGE and "a leakcheck.yaml of `version: 1` and `splits: {manifest: splits.csv}`, then" in err


def test_the_not_split_fix_names_the_burst_rule_of_photos_in_bursts(tmp_path: Path, run_cli) -> None:
    from datetime import timedelta

    from .conftest import BASE_TIME, exif_photo

    for b in range(4):  # 4 bursts of 3 shots 0.4 s apart, 10 minutes between bursts
        for s in range(3):
            exif_photo(tmp_path / f"photos/p{b}{s}.jpg", 100 + 3 * b + s,
                       BASE_TIME + timedelta(minutes=10 * b, milliseconds=400 * s))
    code, _, err = run_cli("init", str(tmp_path))
    assert code == EXIT_USAGE and "`groups: [{burst: {gap: 1s}}]` (photo bursts from capture times" in err, err
