"""Two aircraft on one clear sky are not copies because their outlines agree (issue 37, CIFAR precision).

On a plain ground the ``aligned`` verdict correlates the subject's outline
alone: two renders of one aircraft type on a clear sky, in other poses,
reached CIFAR's error level (B-2s, airliners, a head-on jet against a side
view; ``benchmarks/quality_audit/``).  Over a plain ground a link must score
clear of the error level (``aligned/holds/plain.py``); a copy does.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from pytest_leakcheck import check
from pytest_leakcheck.testing import jpeg_quality, photo

WING = [(20, 70), (80, 30), (140, 70), (120, 74), (100, 64), (80, 80), (60, 64), (40, 74)]
NOSE = [(30, 50), (70, 40), (130, 44), (140, 56), (130, 66), (70, 70), (30, 62)]


def aircraft(outline: list[tuple[int, int]], bank: float = 0.0, tail: float = 0.0, dusk: bool = False) -> Image.Image:
    """An aircraft's dark outline with a lit canopy on a clear graded sky (under 2 grey levels a pixel
    at 32 px: plain), as small as CIFAR's; ``bank`` lowers one wing tip and raises the other, ``tail``
    lowers the tail (px of the 160 px drawing)."""
    w, h = 160, 120
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    sky = 150 + 50 * (x / w * 0.6 + y / h * 0.4) if not dusk else 210 - 60 * y / h
    img = Image.fromarray((sky[..., None] * np.array([0.85, 0.92, 1.0])).astype(np.uint8), "RGB")
    draw = ImageDraw.Draw(img)
    tips = {0: bank, 7: bank, 2: -bank, 3: -bank, 5: tail}
    draw.polygon([(px, py + tips.get(k, 0)) for k, (px, py) in enumerate(outline)], fill=(40, 40, 45))
    if not dusk:
        draw.line([(45, 62), (80, 42), (115, 62)], fill=(90, 90, 95), width=3)
        draw.ellipse((74, 48, 86, 60), fill=(120, 120, 125))
    return img.resize((32, 32), Image.BOX)


def _grey32(img: Image.Image) -> np.ndarray:
    return np.asarray(img.convert("L"), np.uint8).reshape(-1)


def test_a_pair_over_a_plain_ground_must_clear_the_level_and_a_photo_need_not() -> None:
    from pytest_leakcheck.detectors.aligned.holds import plain

    grey = np.stack([_grey32(aircraft(WING)), _grey32(aircraft(WING, 4)), _grey32(photo(3).resize((32, 32))),
                     _grey32(photo(4).resize((32, 32)))])
    i, j = np.array([0, 0, 2]), np.array([1, 1, 3])
    close, clear = 0.85 + plain.HEADROOM * 0.15 / 2, 0.85 + plain.HEADROOM * 0.15 * 2
    held = plain.held(grey, i, j, np.array([close, clear, close]), np.full(3, 0.85))
    assert held.tolist() == [True, False, False]


@pytest.fixture(scope="module")
def sky(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """CIFAR-sized photos; a flying wing in train, the same wing banked in test, an airliner at dusk and its copy."""
    root = tmp_path_factory.mktemp("sky")
    for split, seeds in (("train", range(60)), ("test", range(100, 120))):
        (root / split).mkdir()
        for s in seeds:
            photo(s).resize((32, 32), Image.BOX).save(root / split / f"p{s}.png")
    aircraft(WING).save(root / "train" / "wing.png")
    # 0.865 against its original: over the error level (a small sample's floor, 0.85, plus the hair,
    # 0.01) and under it plus plain.HEADROOM of 0.15.
    aircraft(WING, 4, 7).save(root / "test" / "wing.png")
    aircraft(NOSE, dusk=True).save(root / "train" / "airliner.png")
    jpeg_quality(aircraft(NOSE, dusk=True), 95).save(root / "test" / "airliner.png")
    # The aligned verdict alone: hash and thumbnail matches keep their own verdict.
    (root / "leakcheck.yaml").write_text("version: 1\nsplits: {train: [train/**], test: [test/**]}\n"
                                         "detectors:\n  phash: {severity: off}\n  thumbnail: {severity: off}\n")
    return root / "leakcheck.yaml"


def test_two_poses_on_one_sky_are_no_error_and_a_copy_is(sky: Path) -> None:
    report = check(sky, use_cache=False)

    def severity(a: str, b: str) -> list[str]:
        return [f.severity for f in report.findings if {a, b} <= {m.path for m in f.members}]
    assert severity("train/wing.png", "test/wing.png") == ["warning"]
    assert severity("train/airliner.png", "test/airliner.png") == ["error"]
    assert report.stats["aligned"]["plain_held"] >= 1


def test_a_copy_close_to_a_high_level_is_not_held() -> None:
    """Where the pictures all look alike the level is high and copies score close to it: an X-ray turned a
    little scored 0.9408 against ``xray-wrist``'s level 0.9217 (``benchmarks/field.py``), a copy."""
    from pytest_leakcheck.detectors.aligned.holds import plain

    grey = np.stack([_grey32(aircraft(WING)), _grey32(aircraft(WING, 4))])
    held = plain.held(grey, np.array([0, 0]), np.array([1, 1]), np.array([0.9408, 0.9250]), np.full(2, 0.9217))
    assert held.tolist() == [False, True]
