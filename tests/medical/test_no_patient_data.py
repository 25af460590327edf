"""No patient data out (issue 36): a DICOM set whose PatientID and PatientName are distinctive strings,
rendered in every format, exported in every format, baselined and judged: neither string appears in any
output, log or error message; the pseudonym key never appears in the report."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from ..conftest import write_policy
from .conftest import SECRET_ID, SECRET_NAME, dicom_tree

GLOBS = "version: 1\nsplits: {train: [train/**], val: [val/**], test: [test/**]}\n"
POLICY = GLOBS + ("detectors: {aligned: {severity: 'off'}, same_scene: {severity: 'off'}}\n"
                  "groups: [{dicom: PatientID}, {dicom: PatientName}]\nungrouped: warning\n"
                  "baseline: baseline.yaml\n")
NEEDLES = (SECRET_ID, SECRET_NAME, SECRET_NAME.replace("^", " "), SECRET_ID.lower(), SECRET_NAME.split("^")[0])


def _texts(path: Path) -> list[str]:
    """Every text an output file holds: its bytes as text, and for Parquet each cell, read back."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return [json.dumps(pq.read_table(path).to_pylist())]
    return [path.read_bytes().decode("utf-8", "replace")]


def _malformed(root: Path) -> None:
    """Slices whose NumberOfFrames and SOP class hold the patient id as text: pydicom's error quotes
    the value it cannot convert, and unreadable findings once carried it into every output (held out,
    as pydicom's own badVR.dcm, whose NumberOfFrames is '1A')."""
    import pydicom
    from pydicom.dataelem import DataElement

    from pytest_leakcheck import testing_dicom as td

    for k, (tag, vr) in enumerate(((0x00280008, "LO"), (0x00080016, "UI"))):
        path = root / f"test/malformed_{k}.dcm"
        td.write(path, td.ct_slice(90 + k), td.Patient(f"OTHER{k}", "Other^One", td.uid(f"m{k}"), td.uid(f"n{k}")))
        ds = pydicom.dcmread(path)
        with warnings.catch_warnings():  # pydicom warns that the value is invalid: that is the point
            warnings.simplefilter("ignore")
            ds[tag] = DataElement(tag, vr, SECRET_ID)
        if tag == 0x00080016:
            del ds.PixelData  # "without pixel data (its SOP class)": the class is named only if it is one
        ds.save_as(path, enforce_file_format=True)


@pytest.mark.slow
def test_no_output_holds_the_patient_id_or_name(tmp_path: Path, run_cli) -> None:
    root = tmp_path / "ct"
    dicom_tree(root)
    _malformed(root)
    policy = str(write_policy(root, POLICY))
    outputs: list[str] = []
    files: list[Path] = []

    def run(*argv: str) -> tuple[int, str, str]:
        code, out, err = run_cli(*argv)
        outputs.extend((out, err))
        return code, out, err

    code, out, _ = run("check", "--policy", policy, "--format", "json", "-o", str(tmp_path / "r.json"))
    assert code == 1
    report = json.loads((tmp_path / "r.json").read_text())
    splits = [f for f in report["findings"] if f["kind"] == "group-split"]
    assert len(splits) >= 2  # the secret patient is found, as a pseudonym: the test can see it
    files.append(tmp_path / "r.json")
    run("check", "--policy", policy)  # the terminal text, and its log lines
    for fmt, suffix in (("text", "txt"), ("annotations", "txt"), ("html", "html"), ("markdown", "md"),
                        ("sarif", "sarif")):
        out_file = tmp_path / f"r.{fmt}.{suffix}"
        run("check", "--policy", policy, "--format", fmt, "-o", str(out_file))
        run("render", str(tmp_path / "r.json"), "--format", fmt, "-o", str(out_file.with_suffix(".render")))
        files += [out_file, out_file.with_suffix(".render")]
    run("report", "--policy", policy, "--html", str(tmp_path / "review.html"))
    files.append(tmp_path / "review.html")
    for suffix in ("csv", "jsonl", "parquet"):
        run("export", "--policy", policy, "-o", str(tmp_path / f"images.{suffix}"))
        files.append(tmp_path / f"images.{suffix}")
    run("baseline", "--policy", policy)
    run("judge", splits[0]["id"], "distinct", "--reason", "checked by hand", "--policy", policy)
    files.append(root / "baseline.yaml")
    run("split", "--policy", policy, "--test", "0.3", "-o", str(tmp_path / "splits.csv"))
    files += [p for p in [tmp_path / "splits.csv"] if p.exists()]
    # An error message about the set: a broken policy next to it.
    write_policy(root, POLICY + "groups_typo: 1\n")
    run("check", "--policy", policy, "--debug")
    assert all(f.exists() for f in files), ([f for f in files if not f.exists()], outputs)
    texts = outputs + [t for f in files for t in _texts(f)]
    for needle in NEEDLES:
        hits = [t[max(0, t.find(needle) - 80):t.find(needle) + 80] for t in texts if needle in t]
        assert not hits, (needle, hits[:2])
    key = (root / ".leakcheck/pseudonym.key").read_bytes()
    assert all(key.hex() not in t for t in texts)
