"""same-scene: a burst of one object is linked; two objects on one backdrop are not (issue 37 item 4)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from pytest_leakcheck import check
from pytest_leakcheck.detectors.same_scene import ground
from pytest_leakcheck.testing import photo, save, scene, view

ON = "version: 1\nsplits: {train: [train/**], test: [test/**]}\ndetectors:\n  same_scene: {severity: error}\n"


def _floor(seed: int) -> Image.Image:
    """A plain beige floor with small dark marks (grain, specks): corners a camera sees again."""
    rng = np.random.default_rng(seed)
    img = Image.new("RGB", (1000, 760), (205, 192, 170))
    draw = ImageDraw.Draw(img)
    for _ in range(900):
        x, y = int(rng.integers(0, 990)), int(rng.integers(0, 750))
        w, h = int(rng.integers(3, 8)), int(rng.integers(3, 8))
        tone = int(rng.integers(145, 180))  # faint: a cell of the ground mask stays ground
        shape = draw.ellipse if rng.random() < 0.5 else draw.rectangle
        shape((x, y, x + w, y + h), fill=(tone, tone - 8, tone - 20))
    return img


def _laid(floor: Image.Image, item: int, size: tuple[int, int] = (380, 300),
          at: tuple[int, int] = (310, 230)) -> Image.Image:
    """``floor`` with one object (a textured photo) laid near its middle."""
    out = floor.copy()
    out.paste(photo(item, size), at)
    return out


@pytest.fixture(scope="module")
def floor_shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A burst of one object across splits, and a second object shot on the same floor from the same spot."""
    root = tmp_path_factory.mktemp("floor")
    floor = _floor(7)
    first = _laid(floor, 11)
    save(view(first, 100, 80), root / "train/burst_1.jpg", quality=90)
    save(view(first, 112, 88, tilt=12), root / "test/burst_2.jpg", quality=88)
    # Another garment has another outline: its own size, laid a little aside.
    save(view(_laid(floor, 12, (300, 340), (360, 210)), 100, 80), root / "test/second_object.jpg", quality=90)
    for k in range(6):
        save(scene(200 + k).resize((640, 480)), root / f"{'test' if k % 3 == 0 else 'train'}/other_{k}.jpg",
             quality=90)
    (root / "leakcheck.yaml").write_text(ON)
    return root


def test_a_burst_across_splits_is_linked_and_a_second_object_on_its_floor_is_not(floor_shots: Path) -> None:
    report = check(floor_shots / "leakcheck.yaml", use_cache=False)
    pairs = {frozenset((p.a, p.b)) for f in report.findings for p in f.pairs if p.detector == "same-scene"}
    assert pairs == {frozenset(("train/burst_1.jpg", "test/burst_2.jpg"))}
    assert report.stats["same_scene"]["ground_pairs_held"] >= 1  # the floor matched, and was held


def test_a_photo_without_an_object_on_a_ground_has_no_mask() -> None:
    """A photo with nothing told from its ground (a wall, fog) has no mask: its row is all ones, so no
    match of it is ever held; a floor with an object on it has one."""
    rng = np.random.default_rng(5)
    rgb = np.clip(rng.normal(128, 6, (ground.SIDE, ground.SIDE, 3)), 0, 255).astype(np.uint8)
    bits = np.frombuffer(ground.mask(rgb), np.uint8)
    assert ground.share(bits, np.array([[0.02, 0.02], [0.98, 0.5]])) == 1.0
    shot = view(_laid(_floor(7), 11), 100, 80)  # the object fills a fifth of the frame and more
    floor = np.asarray(shot.resize((ground.SIDE, ground.SIDE), Image.Resampling.BOX))
    bits = np.frombuffer(ground.mask(floor), np.uint8)
    assert ground.share(bits, np.array([[0.05, 0.05], [0.95, 0.9]])) == 0.0  # the floor's corners
    assert ground.share(bits, np.array([[0.5, 0.5]])) == 1.0  # the object's middle
