"""`leakcheck split` on multi-frame DICOM files: a file is one unit, planned and moved whole.

Held-out looks of stop 50 (pydicom's ``MR_Explicit_Little_MultiFrame.dcm``, a cine beside
its patient's slices): the frames of one file went to two splits of a manifest, and
``split --apply`` tried to move each frame as if it were a file.
"""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path

import numpy as np

from pytest_leakcheck import EXIT_CLEAN
from pytest_leakcheck import testing_dicom as td
from pytest_leakcheck.split.clusters import shard_units

from ..conftest import write_policy
from .conftest import patient

FOLDERS = "version: 1\nsplits: {train: [train/**], test: [test/**]}\n"
PATIENTS = FOLDERS + "groups: [{dicom: PatientID}]\nungrouped: own-group\n"


def _cine(path: Path, who: td.Patient, first_seed: int, frames: int = 8) -> Path:
    """A multi-frame file whose frames are unlike each other: only the file holds them together."""
    return td.write(path, np.stack([td.ct_slice(first_seed + 37 * f) for f in range(frames)]), who)


def _digests(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*.dcm"))}


def _manifest_splits(run_cli, root: Path, policy: str) -> dict[str, set[str]]:
    write_policy(root, policy)
    code, _, err = run_cli("split", "--policy", str(root / "leakcheck.yaml"), "--test", "0.5", "-j", "1",
                           "--no-cache", "-o", str(root / "splits.csv"))
    assert code == EXIT_CLEAN, err
    per: dict[str, set[str]] = {}
    for row in csv.DictReader((root / "splits.csv").open()):
        per.setdefault(row["path"].split("#")[0], set()).add(row["split"])
    return per


def test_a_manifest_keeps_the_frames_of_one_file_in_one_split(tmp_path: Path, run_cli) -> None:
    """Without a patient id (pydicom's multi-frame MR has none) and with one: the file's frames stay together."""
    nobody = td.Patient("", "", td.uid("study-x"), td.uid("series-x"))
    _cine(tmp_path / "train/cine.dcm", nobody, 10)
    for k in range(6):
        td.write(tmp_path / f"train/slice{k}.dcm", td.ct_slice(900 + k), patient(k))
    for policy in (FOLDERS, PATIENTS):
        per = _manifest_splits(run_cli, tmp_path, policy)
        assert len(per["train/cine.dcm"]) == 1, (policy, per["train/cine.dcm"])


def test_split_moves_a_multi_frame_file_once_and_apply_moves_it(tmp_path: Path, run_cli) -> None:
    """A cine in train of a patient whose slices are in test: one `mv` of the file, not one per frame."""
    who = patient(1)
    _cine(tmp_path / "train/cine.dcm", who, 20, frames=4)
    for k in range(5):
        td.write(tmp_path / f"test/p1_{k}.dcm", td.ct_slice(300 + k), who, instance=k + 1)
    for k in range(6):
        td.write(tmp_path / f"train/other{k}.dcm", td.ct_slice(600 + k), patient(10 + k))
    write_policy(tmp_path, PATIENTS)
    args = ("split", "--policy", str(tmp_path / "leakcheck.yaml"), "-j", "1", "--no-cache")
    code, out, err = run_cli(*args)
    assert code == EXIT_CLEAN, err
    assert [line for line in out.splitlines() if line.startswith("mv ")] == ["mv train/cine.dcm test/cine.dcm"]
    before = _digests(tmp_path)
    code, out, err = run_cli(*args, "--apply")
    assert code == EXIT_CLEAN, err
    assert "moved 1 files" in out
    after = _digests(tmp_path)
    assert after.pop("test/cine.dcm") == before.pop("train/cine.dcm") and after == before
    code, out, _ = run_cli(*args)
    assert code == EXIT_CLEAN and "nothing to move" in out


def test_shard_units_tie_frames_always_and_other_members_only_when_files_move() -> None:
    paths = ["a/cine.dcm#frame=0001", "a/cine.dcm#frame=0002", "a/x.dcm", "s/0.tar#1.jpg", "s/0.tar#2.jpg",
             "s/t.parquet#row=000000", "s/t.parquet#row=000001", "a/one.dcm#frame=0001"]
    assert shard_units(paths, every_shard=False) == [[0, 1]]
    assert shard_units(paths, every_shard=True) == [[0, 1], [3, 4], [5, 6]]
