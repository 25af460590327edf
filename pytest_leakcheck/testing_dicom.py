"""Synthetic DICOM files for tests and benchmarks: CT-like slices written by pydicom.

A slice is a body outline with organs, bone and noise in Hounsfield units,
stored as 12-bit unsigned values with a rescale intercept, and a soft-tissue
window in the header: what a CT export holds, so the decode's modality LUT,
window and raw values are all exercised.  pydicom is imported inside the
functions (the package imports this module only in tests and benchmarks).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: Stored value = HU + 1024 (RescaleIntercept -1024), 12 bits stored.
INTERCEPT = -1024.0
#: A soft-tissue window (centre, width) in HU, and a wide one for "re-windowed" copies.
SOFT_TISSUE = (40.0, 400.0)
LUNG = (-600.0, 1500.0)


@dataclass(frozen=True)
class Patient:
    """Who a file says it shows: the identifiers no output may print in clear."""

    patient_id: str
    name: str
    study_uid: str
    series_uid: str


def ct_slice(seed: int, side: int = 128) -> np.ndarray:
    """A distinct CT-like slice in HU (int16, side x side); the same seed gives the same slice."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:side, 0:side].astype(np.float32) / side - 0.5
    hu = np.full((side, side), -1000.0, np.float32)  # air
    body = (x / 0.42) ** 2 + (y / 0.34) ** 2 < 1
    hu[body] = 30.0
    for _ in range(int(rng.integers(4, 8))):  # organs and vessels: blobs of soft tissue or fat
        cx, cy, r = rng.uniform(-0.3, 0.3), rng.uniform(-0.22, 0.22), rng.uniform(0.03, 0.12)
        hu[((x - cx) ** 2 + (y - cy) ** 2 < r * r) & body] = float(rng.choice([-90.0, 55.0, 140.0, -700.0]))
    for _ in range(int(rng.integers(2, 5))):  # bone
        cx, cy, r = rng.uniform(-0.3, 0.3), rng.uniform(-0.25, 0.25), rng.uniform(0.02, 0.05)
        hu[((x - cx) ** 2 + (y - cy) ** 2 < r * r) & body] = 900.0
    coarse = rng.normal(0, 25, (8, 8)).astype(np.float32)
    hu += np.kron(coarse, np.ones((side // 8, side // 8), np.float32))[:side, :side] * body
    hu += rng.normal(0, 8, (side, side)).astype(np.float32)
    return np.clip(np.rint(hu), -1024, 3071).astype(np.int16)


def uid(text: str) -> str:
    """A deterministic UID for ``text`` (pydicom's root plus a digest)."""
    from pydicom.uid import generate_uid

    return str(generate_uid(entropy_srcs=[text]))


def write(path: Path, hu: np.ndarray, patient: Patient, *, instance: int = 1,
          window: tuple[float, float] = SOFT_TISSUE, syntax: str = "") -> Path:
    """Write a CT slice (or a stack of frames: ``hu`` of shape (frames, rows, cols)) as a DICOM file."""
    from pydicom.dataset import Dataset, FileMetaDataset
    from pydicom.uid import CTImageStorage, ExplicitVRLittleEndian

    stored = (hu.astype(np.int32) - int(INTERCEPT)).astype(np.uint16)
    sop = uid(f"{patient.series_uid}/{instance}/{path.name}")
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = CTImageStorage
    meta.MediaStorageSOPInstanceUID = sop
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = Dataset()
    ds.file_meta = meta
    _header(ds, patient, sop, instance, window)
    frames = stored.shape[0] if stored.ndim == 3 else 1
    ds.Rows, ds.Columns = stored.shape[-2], stored.shape[-1]
    if frames > 1:
        ds.NumberOfFrames = frames
    ds.PixelData = stored.tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    if syntax:
        ds.compress(syntax, encoding_plugin="pydicom") if syntax.endswith(".5") else _set_syntax(ds, syntax)
    ds.save_as(path, enforce_file_format=True)
    return path


def _header(ds: Any, patient: Patient, sop: str, instance: int, window: tuple[float, float]) -> None:
    from pydicom.uid import CTImageStorage

    ds.SOPClassUID, ds.SOPInstanceUID = CTImageStorage, sop
    ds.PatientID, ds.PatientName = patient.patient_id, patient.name
    ds.StudyInstanceUID, ds.SeriesInstanceUID = patient.study_uid, patient.series_uid
    ds.Modality, ds.InstanceNumber = "CT", instance
    ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, "MONOCHROME2"
    ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 12, 11, 0
    ds.RescaleIntercept, ds.RescaleSlope, ds.RescaleType = INTERCEPT, 1.0, "HU"
    ds.WindowCenter, ds.WindowWidth = window


def _set_syntax(ds: Any, syntax: str) -> None:
    """Label the file with another transfer syntax (bytes unchanged): an unreadable-syntax fixture."""
    from pydicom.encaps import encapsulate
    from pydicom.uid import UID

    ds.file_meta.TransferSyntaxUID = UID(syntax)
    ds.PixelData = encapsulate([ds.PixelData])
    ds["PixelData"].VR = "OB"


def png_export(hu: np.ndarray, path: Path, window: tuple[float, float] = SOFT_TISSUE) -> Path:
    """The slice as a viewer exports it: the window applied, 8-bit grey PNG."""
    from PIL import Image

    c, w = window
    grey = np.clip(np.rint(((hu.astype(np.float64) - (c - 0.5)) / (w - 1) + 0.5) * 255), 0, 255).astype(np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(grey, "L").save(path)
    return path
