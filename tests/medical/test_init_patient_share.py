"""`leakcheck init` proposes the patient rule when a clear majority of DICOM images carry a PatientID.

Held-out looks of stop 50: pydicom's and DICOMSamples' test files mixed with a patient set gave
"no patient rule proposed (PatientID in 61 of 68 files)" (a 90 % cut-off), and init never said
that 7 patients were already in two splits.
"""

from __future__ import annotations

from pathlib import Path

from pytest_leakcheck import EXIT_CLEAN, EXIT_LEAKS
from pytest_leakcheck import testing_dicom as td

from .conftest import SECRET_ID, patient


def _tree(root: Path, with_id: int, without_id: int) -> None:
    """``with_id`` slices of patients 0-3 (patients 0 and 1 in train and test), ``without_id`` anonymous ones."""
    people = [patient(0, SECRET_ID), patient(1), patient(2), patient(3)]
    for k in range(with_id):
        split = "train" if k % 4 == 2 or (k % 4 < 2 and k < 4) else "test"
        td.write(root / f"{split}/p{k:02d}.dcm", td.ct_slice(10 + k), people[k % 4], instance=k + 1)
    nobody = td.Patient("", "", td.uid("anon-study"), td.uid("anon-series"))
    for k in range(without_id):
        td.write(root / f"{('train', 'test')[k % 2]}/anon{k:02d}.dcm", td.ct_slice(500 + k), nobody)


def test_init_proposes_the_patient_rule_when_most_images_carry_the_id(tmp_path: Path, run_cli) -> None:
    _tree(tmp_path, with_id=8, without_id=2)  # 80 %: under the old 90 % cut-off
    code, out, err = run_cli("init", str(tmp_path))
    assert code == EXIT_CLEAN, err
    assert "patients from DICOM PatientID: 4 patients over 8 of 10 DICOM images" in out
    assert "2 patients in more than one split" in out
    assert "2 images without a PatientID are ungrouped (the check warns about each)" in out
    policy = (tmp_path / "leakcheck.yaml").read_text()
    assert "  - dicom: PatientID\n" in policy and "ungrouped: warning\n" in policy
    assert SECRET_ID not in out + err + policy
    code, out, _ = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "-j", "1")
    assert code == EXIT_LEAKS and out.count("ERROR group-split") == 2 and out.count("ungrouped-file") == 2


def test_without_a_majority_init_still_says_how_many_patients_span_splits(tmp_path: Path, run_cli) -> None:
    _tree(tmp_path, with_id=8, without_id=10)  # 8 of 18: no rule
    code, out, err = run_cli("init", str(tmp_path))
    assert code == EXIT_CLEAN, err
    assert "no patient rule proposed (PatientID in 8 of 18 files; 2 patients in more than one split)" in out
    assert "2 patients in more than one split by DICOM PatientID, which no proposed rule checks" in out + err
    assert "\n  - dicom: PatientID\n" not in (tmp_path / "leakcheck.yaml").read_text()
    assert SECRET_ID not in out + err
