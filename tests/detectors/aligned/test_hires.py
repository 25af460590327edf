"""aligned's fine verdict: large images judged again at 96 px, small ones exactly as before."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageFilter

from pytest_leakcheck import check
from pytest_leakcheck.detectors import aligned
from pytest_leakcheck.detectors.aligned import descriptors, families, hires, hires_levels, levels
from pytest_leakcheck.render.text import render as render_text
from pytest_leakcheck.signals.decode import decode
from pytest_leakcheck.testing import jpeg_quality, linked_pairs, photo, save

from .test_detector import _disguised

SIZE = (640, 480)
POLICY = ("version: 1\nsplits:\n  train: [train/**]\n  test: [test/**]\n"
          "augmentations: [hflip, rot90]\n")
#: test file -> the train file it copies: cropped 3-6 % a side and resized, recompressed, mirrored, turned.
COPIES = {"test/crop.jpg": "train/img_003.jpg", "test/crop_mirrored.jpg": "train/img_004.jpg",
          "test/recompressed.jpg": "train/img_005.jpg", "test/mirrored.jpg": "train/img_006.jpg",
          "test/turned.jpg": "train/img_007.jpg"}
#: test file -> the train file whose 8 px blur it carries, under another photo's finer detail.
LOOKALIKES = {"test/look_0.jpg": "train/img_000.jpg", "test/look_1.jpg": "train/img_001.jpg",
              "test/look_2.jpg": "train/img_002.jpg", "test/look_turned.jpg": "train/img_008.jpg"}


def lookalike(img: Image.Image, other: Image.Image, radius: float = 8) -> Image.Image:
    """``img``'s 8 px Gaussian blur plus ``other``'s finer detail: its layout, another photograph."""
    def low(im: Image.Image) -> np.ndarray:
        return np.asarray(im.filter(ImageFilter.GaussianBlur(radius)), np.float32)

    mixed = low(img) + np.asarray(other, np.float32) - low(other)
    return Image.fromarray(np.clip(mixed, 0, 255).astype(np.uint8))


def cropped(img: Image.Image, sides: tuple[float, float, float, float]) -> Image.Image:
    """Cropped by the given shares (left, top, right, bottom) and resized back."""
    w, h = img.size
    left, top, right, bottom = sides
    box = (round(w * left), round(h * top), w - round(w * right), h - round(h * bottom))
    return img.crop(box).resize((w, h), Image.Resampling.LANCZOS)


@pytest.fixture(scope="module")
def photos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """24 distinct 640 x 480 train photos, 4 distinct test ones, five true copies and four lookalikes."""
    root = tmp_path_factory.mktemp("fine")
    for i in range(24):
        save(photo(i, SIZE), root / f"train/img_{i:03d}.jpg", quality=90)
    for i in range(4):
        save(photo(3000 + i, SIZE), root / f"test/distinct_{i}.jpg", quality=90)
    save(cropped(photo(3, SIZE), (0.03, 0.05, 0.06, 0.04)), root / "test/crop.jpg", quality=85)
    save(cropped(photo(4, SIZE), (0.05, 0.03, 0.04, 0.06)).transpose(Image.Transpose.FLIP_LEFT_RIGHT),
         root / "test/crop_mirrored.jpg", quality=85)
    save(jpeg_quality(photo(5, SIZE), 35), root / "test/recompressed.jpg", quality=70)
    save(photo(6, SIZE).transpose(Image.Transpose.FLIP_LEFT_RIGHT), root / "test/mirrored.jpg", quality=88)
    save(photo(7, SIZE).transpose(Image.Transpose.ROTATE_90), root / "test/turned.jpg", quality=88)
    for k, (name, source) in enumerate(LOOKALIKES.items()):
        n = int(source[-7:-4])
        look = lookalike(photo(n, SIZE), photo(900 + k, SIZE))
        if "turned" in name:
            look = look.transpose(Image.Transpose.ROTATE_90)
        save(look, root / name, quality=90)
    (root / "leakcheck.yaml").write_text(POLICY)
    return root



def _pair(test: str, train: str) -> tuple[str, str]:
    return (test, train) if test < train else (train, test)


def test_lookalikes_are_not_error_links_and_copies_still_are(photos: Path) -> None:
    """Two different photos sharing their layout score 0.95 and more at 32 px; at 96 px their fine
    detail does not line up, so they are no error; cropped, recompressed, mirrored and turned copies
    still are."""
    report = check(photos / "leakcheck.yaml", use_cache=False)
    errors = linked_pairs(report, "error")
    for copy, source in COPIES.items():
        assert _pair(copy, source) in errors, copy
    for look, source in LOOKALIKES.items():
        assert _pair(look, source) not in errors, look
    assert not {p for p in errors if any(x.startswith("test/distinct") for x in p)}
    stats = report.stats["aligned"]
    # 37 images: too few to estimate 2 false alarms per 10,000, so the fine level is the fixed floor.
    assert stats["fine_small_sample"] and stats["fine_threshold"] >= hires_levels.FINE_SMALL_FLOOR
    assert stats["fine_images"] == 37 and stats["fine_calibrated_on"] > 30 and stats["fine_side"] == 96
    assert stats["fine_largest_impostor"] < stats["fine_threshold"]
    judged = {(a, b): v for a, b, v in stats["fine_pairs"]}
    for look, source in LOOKALIKES.items():  # each was an error link at 32 px, and judged below the level
        assert judged[_pair(look, source)] < stats["fine_threshold"]
    for copy, source in COPIES.items():
        if _pair(copy, source) in judged:
            assert judged[_pair(copy, source)] >= stats["fine_threshold"]
    assert stats["fine_demoted"] == len(LOOKALIKES) and stats["fine_judged"] == len(judged)
    text = render_text(report, verbose=True)
    assert f"fine detail level {stats['fine_threshold']:.3f} at 96 px for 37 large images" in text
    assert "a conservative floor" in text


def test_without_the_fine_verdict_the_lookalikes_are_errors(photos: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The gap the fine verdict closes, measured on the same files: at 32 px alone the lookalikes
    are error-level links (so the test above can fail)."""
    monkeypatch.setattr(hires_levels, "large", lambda sigs: np.zeros(len(sigs), bool))
    report = check(photos / "leakcheck.yaml", use_cache=False)
    errors = linked_pairs(report, "error")
    assert all(_pair(look, source) in errors for look, source in LOOKALIKES.items())
    assert "fine_threshold" not in report.stats["aligned"]


def _sign(img: Image.Image, **options: object) -> bytes:
    buf = io.BytesIO()
    img.save(buf, "JPEG", **options)
    decoded = decode(buf.getvalue(), 10**8, colour=32)
    decoded.source, decoded.max_pixels = buf.getvalue(), 10**8  # as ``signals.decode.sign`` sets them
    return families.HIRES_FAMILY.compute(decoded, families.HIRES_FAMILY)


def test_only_large_images_store_a_fine_square() -> None:
    """A photo keeps a 96 px square (the decode holds 160 x 120 of it); CIFAR's 32 px and a 64 px
    image store one byte (a small JPEG drafted under FINE_FROM: ``test_small_fine.py``)."""
    for size in ((640, 480), (640, 360)):  # 16:9 decodes to 160 x 90
        assert hires.square(_sign(photo(1, size))).shape == (96, 96)
    for size in ((32, 32), (64, 64)):
        assert _sign(photo(1, size)) == b"\0", size


def test_a_small_jpeg_keeps_its_fine_square_as_a_png_does() -> None:
    """A JPEG of 80-199 px was drafted to half its size or less (50 px of a 100 px one), under the fine
    square's 80 px, though the same picture as a PNG kept one: the format decided whether its pairs
    were judged at 96 px.  Now such a JPEG is decoded whole for its square (``hires.whole_content``)."""
    for size in ((100, 100), (180, 135), (90, 160)):
        img = photo(1, size)
        buf = io.BytesIO()
        img.save(buf, "PNG")
        as_png = families.HIRES_FAMILY.compute(decode(buf.getvalue(), 10**8, colour=32), families.HIRES_FAMILY)
        assert hires.square(as_png).shape == (96, 96), size
        assert hires.square(_sign(img, quality=95)).shape == (96, 96), size


def test_small_jpeg_lookalikes_are_not_errors_and_copies_still_are(tmp_path: Path) -> None:
    """100 px JPEGs: four test pictures carry a train picture's 1.5 px blur under another's finer detail
    (different hands in one sign on one plain ground look so at 32 px, `signdigits` of
    benchmarks/field.py).  Drafted to 50 px they were error links at 32 px (aligned 0.98); with their
    96 px squares they are warnings, while a cropped, a recompressed and a mirrored copy stay errors."""
    size = (100, 100)
    for i in range(24):
        save(photo(i, size), tmp_path / f"train/img_{i:03d}.jpg", quality=90)
    for k in range(4):
        save(lookalike(photo(k, size), photo(900 + k, size), radius=1.5), tmp_path / f"test/look_{k}.jpg",
             quality=90)
    save(cropped(photo(10, size), (0.03, 0.05, 0.06, 0.04)), tmp_path / "test/crop.jpg", quality=85)
    save(jpeg_quality(photo(11, size), 35), tmp_path / "test/recompressed.jpg", quality=70)
    save(photo(12, size).transpose(Image.Transpose.FLIP_LEFT_RIGHT), tmp_path / "test/mirrored.jpg", quality=88)
    (tmp_path / "leakcheck.yaml").write_text(POLICY)
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    errors = linked_pairs(report, "error")
    for k in range(4):
        assert _pair(f"test/look_{k}.jpg", f"train/img_{k:03d}.jpg") in linked_pairs(report, "warning")
        assert _pair(f"test/look_{k}.jpg", f"train/img_{k:03d}.jpg") not in errors
    for copy, n in (("crop", 10), ("recompressed", 11), ("mirrored", 12)):
        assert _pair(f"test/{copy}.jpg", f"train/img_{n:03d}.jpg") in errors, copy
    assert report.stats["aligned"]["fine_images"] == 31


def test_the_fine_square_lines_up_with_the_32_px_one() -> None:
    """The fine square and the 32 px grey square are the same content box, squashed alike: the fine
    square reduced 3x over is the 32 px one within rounding and filter differences."""
    img = photo(2, (640, 480))
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=95)
    decoded = decode(buf.getvalue(), 10**8, colour=32)
    fine = hires.square(families.HIRES_FAMILY.compute(decoded, families.HIRES_FAMILY))
    reduced = fine.reshape(32, 3, 32, 3).astype(np.float32).mean((1, 3))
    grey32 = descriptors.describe(np.asarray(decoded.colour))["grey32"].astype(np.float32)
    assert np.corrcoef(reduced.ravel(), grey32.ravel())[0, 1] > 0.99


def test_flat_fine_detail_keeps_the_32_px_verdict() -> None:
    """A copy blurred beyond the fine band (or upscaled from a thumbnail) carries no fine evidence:
    NaN, not a low score, so it is judged at 32 px as before."""
    rng = np.random.default_rng(3)
    sharp = rng.uniform(0, 255, (1, 96, 96)).astype(np.float32)
    flat = np.full((1, 96, 96), 120, np.float32)
    grey = rng.uniform(0, 255, (1, 32, 32)).astype(np.uint8)
    assert np.isnan(hires.both_ways(grey, grey, sharp, flat, np.zeros(1, bool))[0])
    assert hires.both_ways(grey, grey, sharp, sharp, np.zeros(1, bool))[0] > 0.99


def test_small_images_never_enter_the_fine_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CIFAR-sized data: the same findings and levels as with the fine verdict absent (aligned's
    families without it), and no fine square is read or scored."""
    for i in range(30):
        save(photo(i, (32, 32)), tmp_path / f"train/img_{i:03d}.png")
    for i in range(6):
        save(photo(2000 + i, (32, 32)), tmp_path / f"test/distinct_{i}.png")
    save(_disguised(photo(3, (32, 32))), tmp_path / "test/disguised.png")
    save(photo(5, (32, 32)).transpose(Image.Transpose.FLIP_LEFT_RIGHT), tmp_path / "test/mirrored.png")
    (tmp_path / "leakcheck.yaml").write_text(POLICY)
    for name in ("squares", "scores"):
        monkeypatch.setattr(hires_levels, name, lambda *a, **k: pytest.fail("a small image entered the fine path"))
    monkeypatch.setattr(hires, "detail", lambda *a, **k: pytest.fail("a small image was scored finely"))
    with_fine = check(tmp_path / "leakcheck.yaml", use_cache=False)
    assert with_fine.findings  # the copies are there to be judged
    monkeypatch.setattr(aligned.Aligned, "families",
                        lambda self, s, p: () if s.severity == "off" else (families.DESC_FAMILY,))
    without = check(tmp_path / "leakcheck.yaml", use_cache=False)
    assert [(f.kind, f.severity, [m.path for m in f.members]) for f in with_fine.findings] == \
        [(f.kind, f.severity, [m.path for m in f.members]) for f in without.findings]
    stamps = ("index_at", "levels_at")  # when the levels were estimated: the second check came later
    assert {k: v for k, v in with_fine.stats["aligned"].items() if k not in stamps} == \
        {k: v for k, v in without.stats["aligned"].items() if k not in stamps}
    assert not any(k.startswith("fine") for k in with_fine.stats["aligned"])


def test_an_upgrade_decodes_no_small_image_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store made before the fine family: small images get its empty marker from their stored size,
    undecoded; a large one is decoded once for its square."""
    for i in range(6):
        save(photo(i, (32, 32)), tmp_path / f"train/img_{i}.png")
    save(photo(9, (32, 32)), tmp_path / "test/small.png")
    save(photo(9, SIZE), tmp_path / "test/large.jpg", quality=90)
    (tmp_path / "leakcheck.yaml").write_text(POLICY)
    with monkeypatch.context() as m:  # the detector as it was: its descriptors alone, its model keyed by them
        m.setattr(aligned.Aligned, "families",
                  lambda self, s, p: () if s.severity == "off" else (families.DESC_FAMILY,))
        m.setattr(levels, "_KEYED", families.DESC_FAMILY)
        before = check(tmp_path / "leakcheck.yaml")
    assert before.stats["decoded"] == 8
    after = check(tmp_path / "leakcheck.yaml")
    assert after.stats["decoded"] == 1  # the 640 x 480 photo, for its fine square
    assert after.stats["aligned"]["fine_images"] == 1


def test_the_summary_says_when_no_pair_needed_the_fine_level() -> None:
    """Estimated only when an error-level pair of two large images is to be judged: the summary says
    why a dataset of large images has none, and says nothing of it for small images."""
    base = {"threshold": 0.7, "false_alarms_per_10k": 5.0, "calibrated_on": 100, "error_threshold": 0.8}
    said = aligned.DETECTOR.summary({**base, "fine_images": 12})
    assert said.endswith("; 12 large images, none in an error-level pair: no fine level needed")
    assert "fine" not in aligned.DETECTOR.summary(base)


def test_high_pass_in_blocks_equals_the_filter_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every judged pair's squares are filtered in one call: HIGH_PASS_BLOCK at a time (their float32
    copies at once took a 12,887-slice check from 550 MB to 1.14 GB), the same values as at once."""
    rng = np.random.default_rng(2)
    grey = rng.integers(0, 256, (11, hires.F, hires.F)).astype(np.uint8)
    b = hires._gauss(hires.FINE_BLUR, hires.F)
    w = hires._gauss(hires.FINE_SIGMA, hires.F) @ b
    g = grey.astype(np.float32)
    whole = hires._sandwich(b, g) - hires._sandwich(w, g)
    seen: list[int] = []
    real = hires._sandwich

    def counted(m, squares):  # type: ignore[no-untyped-def]
        seen.append(len(squares))
        return real(m, squares)

    monkeypatch.setattr(hires, "_sandwich", counted)
    monkeypatch.setattr(hires, "HIGH_PASS_BLOCK", 4, raising=False)
    got = hires.high_pass(grey)
    assert got.dtype == np.float32 and np.abs(whole).max() > 1
    np.testing.assert_array_equal(got, whole)
    assert max(seen) <= 4 and sum(seen) == 2 * len(grey)


def test_the_report_lists_the_judged_pairs_closest_to_the_level() -> None:
    """Runs of near-identical frames judge tens of thousands of pairs (``muzzle``: 75,258); the report
    lists those whose verdict the level decides, both sides of it, and counts the rest."""
    known = {(f"a{k:03d}", f"b{k:03d}"): round(0.1 + 0.008 * k, 4) for k in range(100)}  # 0.10 ... 0.892
    listed = hires_levels._reported(known, 0.5)
    assert len(listed) == min(len(known), hires_levels.REPORTED_FINE_PAIRS) == 100
    original = hires_levels.REPORTED_FINE_PAIRS
    try:
        hires_levels.REPORTED_FINE_PAIRS = 6
        listed = hires_levels._reported(known, 0.5)
    finally:
        hires_levels.REPORTED_FINE_PAIRS = original
    assert [v for _, _, v in listed] == [0.476, 0.484, 0.492, 0.5, 0.508, 0.516]
    assert [a for a, _, _ in listed] == sorted(a for a, _, _ in listed)  # by path
