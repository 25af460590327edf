"""DICOM trees and photo bursts written by the real libraries (pydicom, Pillow) for the medical tests."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pydicom")  # the [dicom] extra; CI installs it (.ci/run), so nothing is skipped there

from pytest_leakcheck import testing_dicom as td  # noqa: E402
from pytest_leakcheck.testing import photo  # noqa: E402

#: Distinctive strings no output may hold (tests/medical/test_no_patient_data.py).
SECRET_ID = "ZQX-PATIENT-7731"
SECRET_NAME = "Wolfhardt^Quillon"


def patient(k: int, pid: str | None = None, name: str | None = None) -> td.Patient:
    return td.Patient(pid or f"PID{k:04d}", name or f"Doe^P{k}", td.uid(f"study{k}"), td.uid(f"series{k}"))


def dicom_tree(root: Path) -> dict[str, object]:
    """train/val/test folders of UID-named slices: patients 0-3 train, 4 val, 5-6 test; patient 2 (the
    secret one) and patient 3 also have slices in test; a re-windowed copy of a train slice and a PNG
    export of another are in test; val holds one 3-frame file. Returns what was planted."""
    secret = patient(2, SECRET_ID, SECRET_NAME)
    people = [patient(0), patient(1), secret, patient(3), patient(4), patient(5), patient(6)]
    where = {0: "train", 1: "train", 2: "train", 3: "train", 4: "val", 5: "test", 6: "test"}
    paths: dict[tuple[int, int], str] = {}
    for k, who in enumerate(people):
        if k == 4:
            continue
        for s in range(3):
            rel = f"{where[k]}/{td.uid(f'{k}/{s}')}.dcm"
            td.write(root / rel, td.ct_slice(100 * k + s), who, instance=s + 1)
            paths[(k, s)] = rel
    for k in (2, 3):  # the planted cross-split patients: one more slice each, in test
        td.write(root / f"test/{td.uid(f'{k}/cross')}.dcm", td.ct_slice(100 * k + 50), people[k], instance=9)
    rewindowed = f"test/{td.uid('rewin')}.dcm"
    td.write(root / rewindowed, td.ct_slice(0), people[5], instance=7, window=td.LUNG)
    exported = "test/export_0001.png"
    td.png_export(td.ct_slice(101), root / exported)
    multi = f"val/{td.uid('multi')}.dcm"
    td.write(root / multi, np.stack([td.ct_slice(400 + f) for f in range(3)]), people[4])
    return {"cross": (people[2], people[3]), "rewindowed": (paths[(0, 0)], rewindowed),
            "exported": (paths[(1, 1)], exported), "multi": multi}


def exif_photo(path: Path, seed: int, when: datetime,
               camera: tuple[str, str, str] = ("Canon", "EOS R5", "0421")) -> None:
    """A JPEG with EXIF DateTimeOriginal (+ sub-seconds), make, model and body serial, written by Pillow."""
    from PIL import Image

    img = photo(seed, (96, 72))
    exif = Image.Exif()
    exif[0x010F], exif[0x0110] = camera[0], camera[1]
    ifd = exif.get_ifd(0x8769)
    ifd[0x9003] = when.strftime("%Y:%m:%d %H:%M:%S")
    ifd[0x9291] = f"{when.microsecond // 1000:03d}"
    ifd[0xA431] = camera[2]
    path.parent.mkdir(parents=True, exist_ok=True)
    img.save(path, quality=92, exif=exif)


BASE_TIME = datetime(2024, 5, 17, 10, 15, 0)


def burst_tree(root: Path) -> dict[str, object]:
    """Photos in bursts of 4 shots 0.4 s apart, bursts 10 minutes apart: burst 1 spans train and test.
    Two single photos of the same camera an hour apart sit in train and test."""
    k = 0
    for b in range(5):
        for s in range(4):
            split = "test" if (b == 1 and s == 3) or b == 4 else "train"
            when = BASE_TIME + timedelta(minutes=10 * b, milliseconds=400 * s)
            exif_photo(root / split / f"photo_{k:03d}.jpg", 1000 + k, when)
            k += 1
    exif_photo(root / "train" / "single_a.jpg", 7001, BASE_TIME + timedelta(hours=3))
    exif_photo(root / "test" / "single_b.jpg", 7002, BASE_TIME + timedelta(hours=4))
    return {"spanning": 1, "singles": ("train/single_a.jpg", "test/single_b.jpg")}


@pytest.fixture()
def dicom_set(tmp_path: Path) -> tuple[Path, dict[str, object]]:
    root = tmp_path / "ct"
    return root, dicom_tree(root)
