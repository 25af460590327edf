"""64-bit float TIFFs (numpy arrays saved by tifffile), which Pillow cannot open, are read.

Held-out probe 9 (issue 37): the Kaggle CT set ships each slice as DICOM and as a float64 TIFF of
its Hounsfield units; all 100 TIFFs were `unreadable-image` errors, compared with nothing.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pytest_leakcheck import check
from pytest_leakcheck.testing import scan

from ..conftest import write_policy


def float64_tiff(values: np.ndarray, path: Path, *, order: str = "<", deflate: bool = False) -> Path:
    """``values`` as tifffile writes a float64 array: one strip, one sample per pixel."""
    h, w = values.shape
    pixels = values.astype(order + "f8").tobytes()
    pixels = zlib.compress(pixels) if deflate else pixels
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(tiff_bytes(w, h, pixels, order=order, deflate=deflate))
    return path


def tiff_bytes(w: int, h: int, pixels: bytes, *, order: str = "<", deflate: bool = False) -> bytes:
    """A float64 TIFF of one strip holding ``pixels`` as stored (deflated or not)."""
    entries = [(256, 4, w), (257, 4, h), (258, 3, 64), (259, 3, 8 if deflate else 1), (262, 3, 1),
               (273, 4, 8), (277, 3, 1), (278, 4, h), (279, 4, len(pixels)), (339, 3, 3)]
    ifd = struct.pack(order + "H", len(entries)) + b"".join(
        struct.pack(order + "HHI", tag, kind, 1) + struct.pack(order + ("HH" if kind == 3 else "I"),
                                                               *((value, 0) if kind == 3 else (value,)))
        for tag, kind, value in entries) + struct.pack(order + "I", 0)
    head = (b"II*\0" if order == "<" else b"MM\0*") + struct.pack(order + "I", 8 + len(pixels))
    return head + pixels + ifd


def _hu(seed: int) -> np.ndarray:
    """A scan as float64 Hounsfield-like values (-1024 .. 3071)."""
    return scan(seed).astype(np.float64) - 1024.0


def test_float64_tiffs_read_as_their_values_in_any_byte_order_and_deflated(tmp_path: Path) -> None:
    from pytest_leakcheck.signals import floattiff

    values = _hu(0)
    for k, (order, deflate) in enumerate((("<", False), (">", False), ("<", True), (">", True))):
        data = float64_tiff(values, tmp_path / f"s{k}.tif", order=order, deflate=deflate).read_bytes()
        img = floattiff.image(data, 1 << 28)
        assert img is not None and img.mode == "F" and img.size == (160, 120)
        assert np.array_equal(np.asarray(img), values.astype(np.float32))
    with pytest.raises(ValueError, match="bounded memory"):  # the decode's memory bound, before any pixel
        floattiff.image((tmp_path / "s0.tif").read_bytes(), 1000)
    png = tmp_path / "p.png"
    Image.new("L", (4, 4)).save(png)
    assert floattiff.image(png.read_bytes(), 1 << 28) is None


def test_a_float64_tiff_of_a_train_scan_is_found_in_test(tmp_path: Path) -> None:
    (tmp_path / "train").mkdir()
    for seed in range(4):  # 12-bit scans as 16-bit PNGs
        Image.fromarray(scan(seed)).save(tmp_path / f"train/scan{seed}.png")
    float64_tiff(_hu(9), tmp_path / "test/other.tif")
    float64_tiff(_hu(0), tmp_path / "test/copy.tif")
    write_policy(tmp_path, "version: 1\nsplits: {train: [train/**], test: [test/**]}\n")
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    found = sorted((f.kind, sorted(m.path for m in f.members)) for f in report.findings)
    assert found == [("near-duplicate", ["test/copy.tif", "train/scan0.png"])], found


def test_a_strip_that_inflates_past_the_image_stops_at_its_size(tmp_path):
    """A 4x4 float64 TIFF whose deflated strip holds 64 MB of zeros: read as its 128 bytes, not inflated whole."""
    import tracemalloc

    from pytest_leakcheck.signals import floattiff

    bomb = zlib.compress(bytes(64 << 20), 9)
    data = tiff_bytes(4, 4, bomb, deflate=True)
    tracemalloc.start()
    img = floattiff.image(data, 1 << 30)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert img is not None and img.size == (4, 4)
    assert peak < 8 << 20, peak
