"""HEIC, HEIF and AVIF images (phones' formats), and image files the policy's extensions leave out."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from pytest_leakcheck import check
from pytest_leakcheck.signals import heif
from pytest_leakcheck.testing import photo, save

from ..conftest import write_policy


def _train(root: Path) -> None:
    for k in range(4):
        save(photo(k), root / f"train/p{k}.jpg")
    save(photo(9), root / "test/other.jpg")


def _copies(root: Path) -> None:
    """Train photos saved again as an iPhone would (HEIC) and as AVIF, in test."""
    heif.ensure()  # the real pillow-heif, as the `heif` extra installs it
    Image.open(root / "train/p1.jpg").save(root / "test/IMG_0001.HEIC", quality=80)
    Image.open(root / "train/p2.jpg").save(root / "test/p2.avif", quality=80)


def test_heic_and_avif_copies_are_found(tmp_path: Path) -> None:
    _train(tmp_path)
    _copies(tmp_path)
    report = check(write_policy(tmp_path), use_cache=False, jobs=1)
    errors = sorted(tuple(sorted(m.path for m in f.members)) for f in report.findings if f.severity == "error")
    assert errors == [("test/IMG_0001.HEIC", "train/p1.jpg"), ("test/p2.avif", "train/p2.jpg")], report.findings


def test_without_pillow_heif_heic_files_are_one_error_that_names_the_extra(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _train(tmp_path)
    _copies(tmp_path)
    Image.open(tmp_path / "train/p3.jpg").save(tmp_path / "test/IMG_0003.heic", quality=80)
    monkeypatch.setattr(heif, "_registered", False)  # as in a process where pillow-heif is not installed
    report = check(write_policy(tmp_path), use_cache=False, jobs=1)
    unread = [f for f in report.findings if f.kind == "unreadable-image"]
    assert len(unread) == 1 and unread[0].severity == "error"
    assert {m.path for m in unread[0].members} == {"test/IMG_0001.HEIC", "test/IMG_0003.heic"}
    assert "pytest-leakcheck[heif]" in unread[0].message


def test_heif_brands() -> None:
    box = lambda brand, rest=b"": b"\x00\x00\x00\x1cftyp" + brand + b"\x00\x00\x00\x00" + rest  # noqa: E731
    assert heif.is_heif(box(b"heic")) and heif.is_heif(box(b"mif1", b"mif1heic"))
    assert not heif.is_heif(box(b"avif")) and not heif.is_heif(box(b"mif1", b"mif1avif"))
    assert not heif.is_heif(b"\xff\xd8\xff\xe0" + b"\x00" * 20)


def test_image_files_the_extensions_leave_out_are_named_per_folder(tmp_path: Path) -> None:
    """RAW files beside the JPEGs, JPEG XL: never skipped in silence.  A split's folder of them is one error
    (it may hide a leak), a folder in no split one warning; a file whose format is listed is examined."""
    _train(tmp_path)
    for k in range(3):
        (tmp_path / f"train/IMG_000{k}.CR2").write_bytes(b"II*\x00" + bytes([k]) * 64)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes/scan.jxl").write_bytes(b"\xff\x0a" + b"\x00" * 64)
    report = check(write_policy(tmp_path), use_cache=False, jobs=1)
    unseen = {f.members[0].path: f for f in report.findings if f.kind == "not-examined" and f.members}
    assert set(unseen) == {"train/IMG_0000.CR2", "notes/scan.jxl"}, report.findings
    assert unseen["train/IMG_0000.CR2"].severity == "error"
    assert "3 files ending .cr2 in train/" in unseen["train/IMG_0000.CR2"].message
    assert unseen["notes/scan.jxl"].severity == "warning"
