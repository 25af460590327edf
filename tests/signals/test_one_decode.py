"""One decode of a file serves every family of a default check (issue 35: decoding near its limit).

Counted, not timed: how many times Pillow builds a decoder for one file while a worker signs it
with every family the default policy asks for.  Before, a JPEG photo was decoded twice (the
shared 160 px draft, then same-scene's 320 px keypoint image), and a picture under 200 px up to
four times (its small draft, then whole for same-scene, ``turned_copy`` and ``aligned``'s square).
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


@pytest.mark.parametrize("size", [(640, 480), (2048, 1371), (300, 220)])
@pytest.mark.parametrize("grey", [False, True])
def test_a_jpeg_photo_is_decoded_once_for_every_family(size: tuple[int, int], grey: bool, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    families = _default_families(tmp_path)
    assert {"scene", "scene_grey", "fine"} <= {f.name for f in families}
    img = photo(21, size)
    data = _jpeg(img.convert("L") if grey else img)
    built = _decoders(monkeypatch)
    rows = _sign(data, families, tmp_path)
    assert rows["scene"][:2] != b"\0\0"  # keypoints were sought, at 320 px
    assert len(built) == 1, built


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


@pytest.mark.parametrize("orient", [1, 6])
def test_the_shared_decode_keeps_its_size_and_the_keypoint_image_its_bytes(orient: int) -> None:
    """The shared decode is the DETAIL draft's size, and same-scene's grey is the luma-only WIDE draft, byte for
    byte (what the second decode gave)."""
    from pytest_leakcheck.signals import imagedepth
    from pytest_leakcheck.signals.decode import decode, detail_grey

    exif = Image.Exif()
    exif[0x0112] = orient
    for size, shared in (((640, 480), (160, 120)), ((2048, 1371), (256, 172))):
        data = _jpeg(photo(23, size), exif=exif)
        d = decode(data, 10**9)
        d.source, d.max_pixels = data, 10**9
        want_size = shared if orient == 1 else shared[::-1]
        assert d.upright is not None and d.upright.size == want_size
        assert d.wide is not None
        luma = imagedepth.open_image(data, 10**9)
        luma.draft("L", (320 * size[0] // max(size), 320 * size[1] // max(size)))
        want = np.asarray(imagedepth.upright_grey(luma))
        if max(want.shape) > 320:
            s = 320 / max(want.shape)
            want = np.asarray(Image.fromarray(want).resize((round(want.shape[1] * s), round(want.shape[0] * s)),
                                                           Image.Resampling.BILINEAR))
        assert np.array_equal(detail_grey(d, 320), want)


def test_an_rgb_coded_jpeg_takes_the_detail_draft(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """libjpeg gives no YCbCr of a JPEG coded in RGB (Adobe transform 0): it is drafted to DETAIL as before."""
    from pytest_leakcheck.signals.decode import decode

    data = _jpeg(photo(24, (640, 480)), keep_rgb=True)
    assert Image.open(io.BytesIO(data)).info.get("adobe_transform") == 0
    d = decode(data, 10**9)
    assert d.wide is None and d.upright is not None and d.upright.size == (160, 120)
    rows = _sign(data, _default_families(tmp_path), tmp_path)
    assert rows["scene"][:2] != b"\0\0"


def test_families_of_an_off_detector_are_not_computed(tmp_path: Path) -> None:
    """identical_pixels off: its own rows (raw DICOM values, the reduced decode's digest) are not computed."""
    on = {f.name for f in _default_families(tmp_path)}
    off = {f.name for f in _default_families(tmp_path, "detectors: {identical_pixels: {severity: off}}\n")}
    assert {"values", "drafted"} <= on
    assert not {"values", "drafted"} & off
    assert "hash:identity" in off  # phash's own, read by every pair's evidence
