"""Listing counts a DICOM file's frames from its head, reading more only when the head does not say."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pydicom = pytest.importorskip("pydicom")

from pytest_leakcheck.files import frames  # noqa: E402
from pytest_leakcheck.testing_dicom import Patient, ct_slice, write  # noqa: E402


def _patient() -> Patient:
    return Patient("PAT-1", "Doe^Jane", "1.2.3", "1.2.3.4")


def test_a_plain_slice_and_a_stack_are_counted(tmp_path: Path) -> None:
    one = write(tmp_path / "one.dcm", ct_slice(1, 64), _patient())
    stack = write(tmp_path / "stack.dcm", np.stack([ct_slice(k, 64) for k in range(3)]), _patient())
    assert frames.frame_count(str(one)) == 1
    assert frames.frame_count(str(stack)) == 3


def test_a_frame_count_past_a_large_private_element_is_still_found(tmp_path: Path) -> None:
    """Number of Frames after 6 KiB of header: past the first read, within the second."""
    path = write(tmp_path / "stack.dcm", np.stack([ct_slice(k, 64) for k in range(4)]), _patient())
    ds = pydicom.dcmread(path)
    ds.add_new((0x0009, 0x0010), "LO", "PRIVATE")
    ds.add_new((0x0009, 0x1001), "OB", bytes(6000))  # sorts before (0028,0008)
    ds.save_as(path, enforce_file_format=True)
    at = path.read_bytes().find(b"\x28\x00\x08\x00")
    assert at > frames._FIRST  # the precondition: not in the first read
    assert frames.frame_count(str(path)) == 4
