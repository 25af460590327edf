"""Small JPEGs that JPEG draft mode halves under FINE_FROM px get the fine verdict as the same PNGs do.

LFW's 100 px faces (``lfw-faces`` of ``benchmarks/field.py``) were drafted to 50 px, so
their error-level pairs were judged at 32 px alone, and other press photos of one face
were errors."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps

from pytest_leakcheck import check
from pytest_leakcheck.detectors.aligned import families, hires
from pytest_leakcheck.signals.decode import decode
from pytest_leakcheck.testing import photo, save

from .test_hires import lookalike


def _row(img: Image.Image, fmt: str) -> bytes:
    """The fine family's row of ``img`` saved as ``fmt``, decoded as signing decodes it."""
    buf = io.BytesIO()
    img.save(buf, fmt, **({"quality": 95} if fmt == "JPEG" else {}))
    decoded = decode(buf.getvalue(), 10**8, colour=32)
    decoded.source, decoded.max_pixels = buf.getvalue(), 10**8  # as ``signals.decode.sign`` sets them
    return families.HIRES_FAMILY.compute(decoded, families.HIRES_FAMILY)


def _fine(img: Image.Image, fmt: str) -> np.ndarray | None:
    return hires.square(_row(img, fmt))


def _corr(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.corrcoef(a.astype(np.float32).ravel(), b.astype(np.float32).ravel())[0, 1])


def test_a_drafted_small_jpeg_keeps_the_fine_square_its_png_has() -> None:
    """A 100 px JPEG is drafted to 50 px for the shared decode; its fine square is made from the whole
    decode and is the PNG's (decoded whole): the same content, the same geometry."""
    for size in ((100, 100), (180, 135), (120, 90)):
        img = photo(4, size)
        png, jpg = _fine(img, "PNG"), _fine(img, "JPEG")
        assert png is not None and jpg is not None, size
        assert _corr(png, jpg) > 0.99, size


def test_a_drafted_jpeg_with_a_border_keeps_the_trimmed_box() -> None:
    """The content box trimmed on the drafted decode is scaled to the whole one: the square still
    lines up with the PNG's, whose border was trimmed on the whole decode."""
    img = ImageOps.expand(photo(6, (100, 80)), border=(0, 12, 0, 12), fill=(0, 0, 0))
    png, jpg = _fine(img, "PNG"), _fine(img, "JPEG")
    assert png is not None and jpg is not None
    assert _corr(png, jpg) > 0.97


def test_tiny_and_thumbnail_jpegs_still_store_one_byte() -> None:
    """Under FINE_FROM px in the file itself there is no detail to keep: one byte, as before."""
    for size in ((32, 32), (64, 64), (150, 70)):
        assert _row(photo(1, size), "JPEG") == b"\0", size


SIZE = (100, 100)
POLICY = "version: 1\nsplits:\n  train: [train/**]\n  test: [test/**]\naugmentations: [hflip]\n"


def test_small_jpeg_lookalikes_are_warnings_and_their_copies_errors(tmp_path: Path) -> None:
    """100 px JPEGs (LFW's size): another picture with one's layout (its blur, another's finer detail)
    aligns at 32 px as a copy does; judged finely it is a warning, while a recompressed copy and a
    mirrored one stay errors."""
    for i in range(40):
        save(photo(i, SIZE), tmp_path / f"train/img_{i:03d}.jpg", quality=90)
    save(photo(3, SIZE), tmp_path / "test/copy.jpg", quality=70)
    save(photo(4, SIZE).transpose(Image.Transpose.FLIP_LEFT_RIGHT), tmp_path / "test/mirrored.jpg", quality=85)
    for k in range(3):
        save(lookalike(photo(10 + k, SIZE), photo(900 + k, SIZE), radius=1.5), tmp_path / f"test/look_{k}.jpg",
             quality=90)
    (tmp_path / "leakcheck.yaml").write_text(POLICY)
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    errors = {m.path for f in report.findings if f.severity == "error" for m in f.members}
    assert {"test/copy.jpg", "train/img_003.jpg", "test/mirrored.jpg", "train/img_004.jpg"} <= errors
    assert not any(p.startswith("test/look") for p in errors), errors
    assert report.stats["aligned"]["fine_judged"] >= 3
