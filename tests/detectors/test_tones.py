"""Two photographs of one kind of subject on different grounds are not copies (issue 37, CIFAR precision).

The ``aligned`` verdict correlates detail, blind to tones: two B-2 bombers on
two skies, whose outlines agree, reached CIFAR's error level (every one of
the 18 error links judged different by eye, ``benchmarks/quality_audit/``).
At their alignment their grey levels disagree where the skies do
(``aligned/holds/tones.py``): such a link is a warning; a copy stays an error.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageEnhance

from pytest_leakcheck import check
from pytest_leakcheck.testing import brighter, cropped, jpeg_quality, photo

BOMBER = [(20, 70), (80, 30), (140, 70), (120, 74), (100, 64), (80, 80), (60, 64), (40, 74)]


def bomber(sky: str, size: tuple[int, int] = (160, 120)) -> Image.Image:
    """One dark flying wing on a sky graded from dark at the top left (``"day"``) or on a cloudy one
    (``"clouds"``): the same outline, tones no brightness or contrast change maps onto each other."""
    w, h = size
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    grade = (110 + 70 * (x / w + y / h) if sky == "day"
             else 180 - 70 * np.cos(x / w * 2 * np.pi) * np.sin(y / h * 3 * np.pi))
    img = Image.fromarray((grade[..., None] * np.array([0.85, 0.92, 1.0])).astype(np.uint8), "RGB")
    draw = ImageDraw.Draw(img)
    draw.polygon(BOMBER, fill=(30, 30, 35))
    draw.line([(45, 62), (80, 42), (115, 62)], fill=(70, 70, 75), width=2)
    return img


def _grey32(img: Image.Image) -> np.ndarray:
    return np.asarray(img.convert("L").resize((32, 32), Image.BOX), np.uint8)


def test_the_same_outline_on_other_tones_is_held_and_a_copy_is_not() -> None:
    from pytest_leakcheck.detectors.aligned.holds import tones

    a, b = _grey32(bomber("day")), _grey32(bomber("clouds"))
    copy = _grey32(jpeg_quality(cropped(bomber("day"), 0.04), 90))
    grey = np.stack([a, b, copy]).reshape(3, -1)
    held = tones.held(grey, np.array([0, 0]), np.array([1, 2]), np.array([False, False]))
    assert held.tolist() == [True, False]


@pytest.mark.parametrize("edit", [lambda im: brighter(im, 1.4), lambda im: ImageEnhance.Contrast(im).enhance(0.6),
                                  lambda im: ImageEnhance.Contrast(im).enhance(1.6),
                                  lambda im: ImageEnhance.Color(im).enhance(2.0)])
def test_a_cropped_copy_with_its_tones_edited_is_not_held(edit) -> None:
    """Brightness, contrast and saturation edits keep a photograph's tones within the gap (at most 16)."""
    from pytest_leakcheck.detectors.aligned.holds import tones

    for seed in range(4):
        grey = np.stack([_grey32(photo(seed)), _grey32(edit(cropped(photo(seed), 0.04)))]).reshape(2, -1)
        assert not tones.held(grey, np.array([0]), np.array([1]), np.array([False]))[0]


@pytest.fixture(scope="module")
def skies(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """60 photos in train, 20 in test, one bomber in each split on another sky, a cropped copy of a photo."""
    root = tmp_path_factory.mktemp("skies")
    for split, seeds in (("train", range(60)), ("test", range(100, 120))):
        (root / split).mkdir()
        for s in seeds:
            photo(s).save(root / split / f"p{s}.png")
    bomber("day").save(root / "train" / "bomber.png")
    bomber("clouds").save(root / "test" / "bomber.png")
    jpeg_quality(cropped(photo(7), 0.04), 90).save(root / "test" / "copy.png")
    (root / "leakcheck.yaml").write_text("version: 1\nsplits: {train: [train/**], test: [test/**]}\n")
    return root / "leakcheck.yaml"


def test_two_bombers_on_two_skies_are_no_error_and_a_copy_is(skies: Path) -> None:
    report = check(skies, use_cache=False)

    def severity(a: str, b: str) -> list[str]:
        return [f.severity for f in report.findings if {a, b} <= {m.path for m in f.members}]
    assert severity("train/bomber.png", "test/bomber.png") == ["warning"]  # reported, not failing the build
    assert severity("train/p7.png", "test/copy.png") == ["error"]
