"""A file is decoded no more often than its families' sizes need (issue 35: decoding near its limit).

Counted, not timed: how many times Pillow builds a decoder for one file while a worker signs it
with every family the default policy asks for.  A JPEG under 200 px was decoded up to four times
(its small draft, then whole for same-scene, ``turned_copy`` and ``aligned``'s fine square); the
whole decode now serves all three, with the bytes each had.  A JPEG photo is still decoded twice
(the shared 160 px draft and same-scene's 320 px luma): one decode serving both moved findings
(CHANGELOG, "Measured and not adopted").
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pytest_leakcheck.testing import photo


def _default_families(tmp_path: Path, extra: str = "") -> tuple:
    from pytest_leakcheck import detectors
    from pytest_leakcheck.policy.load import load

    policy = tmp_path / "leakcheck.yaml"
    policy.write_text("version: 1\nsplits:\n  train: [train/**]\n  test: [test/**]\n" + extra)
    return detectors.families(load(policy))


def _jpeg(img: Image.Image, **save) -> bytes:
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=90, **save)
    return buf.getvalue()


def _decoders(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The modes of every decoder Pillow builds from now on (one per decode of a file)."""
    built: list[str] = []
    real = Image._getdecoder

    def counted(mode, *args, **kwargs):  # type: ignore[no-untyped-def]
        built.append(mode)
        return real(mode, *args, **kwargs)

    monkeypatch.setattr(Image, "_getdecoder", counted)
    return built


def _sign(data: bytes, families: tuple, tmp_path: Path) -> dict[str, bytes]:
    from pytest_leakcheck.signals.decode import SignTask, sign

    path = tmp_path / "one.jpg"
    path.write_bytes(data)
    _, ok, rows = sign(SignTask(str(path), 10**9, families))
    assert ok and isinstance(rows, dict), rows
    return rows


def test_a_small_jpeg_is_decoded_again_once_for_all_that_read_it_whole(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """150 px: drafted to 38 px for the shared decode; same-scene, turned_copy and the fine square share one
    whole decode."""
    families = _default_families(tmp_path)
    data = _jpeg(photo(22, (150, 120)))
    built = _decoders(monkeypatch)
    rows = _sign(data, families, tmp_path)
    assert rows["fine"][:1] == b"\1" and rows["scene_grey"][:1] == b"\1"
    assert len(built) == 2, built


@pytest.mark.parametrize("size", [(150, 120), (100, 100), (640, 480), (2048, 1371)])
@pytest.mark.parametrize("orient", [1, 6])
def test_a_kept_decode_gives_every_family_the_grey_its_own_decode_gave(size: tuple[int, int], orient: int,
                                                                      tmp_path: Path) -> None:
    """Each family's ``detail_grey`` equals a decode of its own (a fresh ``Decoded`` per asker), in any order."""
    from pytest_leakcheck.signals.decode import decode, detail_grey

    exif = Image.Exif()
    exif[0x0112] = orient
    data = _jpeg(photo(25, size), exif=exif)

    def fresh():  # type: ignore[no-untyped-def]
        d = decode(data, 10**9)
        d.source, d.max_pixels = data, 10**9
        return d

    sides = (320, 128, max(size), 200, 96)
    alone = [detail_grey(fresh(), side) for side in sides]
    shared = fresh()
    for order in (sides, sides[::-1]):
        kept = {side: detail_grey(shared, side) for side in order}
        for side, want in zip(sides, alone):
            assert np.array_equal(kept[side], want), side


def test_families_of_an_off_detector_are_not_computed(tmp_path: Path) -> None:
    """identical_pixels off: its own rows (raw DICOM values, the reduced decode's digest) are not computed."""
    on = {f.name for f in _default_families(tmp_path)}
    off = {f.name for f in _default_families(tmp_path, "detectors: {identical_pixels: {severity: off}}\n")}
    assert {"values", "drafted"} <= on
    assert not {"values", "drafted"} & off
    assert "hash:identity" in off  # phash's own, read by every pair's evidence
