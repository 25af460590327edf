"""Aligned's warning level held against each image's nearest neighbours (probe 3, problem 5).

On ``clothing`` (a clean ImageFolder of phone photos) different garments on one floor aligned at
0.87-0.92, over the 0.870 warning level upside-down impostors set, and made 141 warnings: an image
is compared with its nearest neighbours, which are far closer than a random image.  Here: 200
different "garments" on eight floors, no copy but one planted across splits.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from pytest_leakcheck import check
from pytest_leakcheck.testing import photo, save

from ...conftest import write_policy

FLOORS, SIDE = 8, 240


def _floor(seed: int) -> Image.Image:
    """One of a few tiled floors, seen from a slightly different place in each photo."""
    rng = np.random.default_rng(seed)
    x, y = (int(v) for v in rng.integers(0, 60, 2))
    img = photo(1 + seed % FLOORS, (400, 400)).crop((x, y, x + 300, y + 300)).resize((SIDE, SIDE))
    d = ImageDraw.Draw(img)
    for k in range(0, SIDE, 60):
        d.line([(k, 0), (k, SIDE)], fill=(40, 40, 40), width=3)
        d.line([(0, k), (SIDE, k)], fill=(40, 40, 40), width=3)
    return img


def _garment(seed: int) -> Image.Image:
    """A garment of its own (shape and cloth) laid on a floor."""
    rng = np.random.default_rng(seed)
    img, mask = _floor(seed), Image.new("L", (SIDE, SIDE), 0)
    w, h = int(rng.integers(25, 40)), int(rng.integers(35, 55))
    ImageDraw.Draw(mask).ellipse([SIDE // 2 - w, SIDE // 2 - h, SIDE // 2 + w, SIDE // 2 + h], fill=255)
    img.paste(photo(10_000 + seed, (SIDE, SIDE)), (0, 0), mask)
    return img


@pytest.mark.slow
def test_neighbours_that_pass_the_impostors_level_raise_the_warning_level(tmp_path: Path) -> None:
    for k in range(200):
        save(_garment(k), tmp_path / ("test" if k % 5 == 0 else "train") / f"{k:03d}.jpg", quality=90)
    copy = _garment(1).crop((4, 4, SIDE - 4, SIDE - 4)).resize((SIDE, SIDE))
    save(copy, tmp_path / "test" / "copy.jpg", quality=75)
    report = check(write_policy(tmp_path, 'version: 1\nsplits: {train: ["train/**"], test: ["test/**"]}\n'))
    leak = [f for f in report.findings if {m.path for m in f.members} >= {"train/001.jpg", "test/copy.jpg"}]
    assert [f.severity for f in leak] == ["error"]
    # No garment is another's copy: aligned alone links none of them across splits.
    false = [f for f in report.findings if f not in leak and f.kind == "near-duplicate" and len(f.splits) > 1
             and all(p.detector == "aligned" for p in f.pairs)]
    assert not false
    # Because the neighbours reach past the level upside-down impostors set (kept for hash matches).
    aligned = report.stats["aligned"]
    assert aligned["threshold"] == aligned["neighbour_warning_level"] > aligned["hash_threshold"]
