"""Regenerate the bundled example dataset (``examples/data``) with planted leaks.

Run from the repository root: ``python examples/make_example.py``.  The output
is committed; the script is here so anyone can see exactly what was planted.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from PIL import Image

from pytest_leakcheck.testing import brighter, cropped, photo, resized, save

HERE = Path(__file__).resolve().parent
SIZE = (128, 96)


def main() -> None:
    data = HERE / "data"
    shutil.rmtree(data, ignore_errors=True)
    train = [photo(seed, SIZE) for seed in range(20)]
    for i, img in enumerate(train):
        save(img, data / f"train/scene_{i:02d}.jpg", quality=85)
    for i in range(5):
        save(photo(200 + i, SIZE), data / f"val/scene_{20 + i:02d}.jpg", quality=85)
    for i in range(6):
        save(photo(300 + i, SIZE), data / f"test/scene_{25 + i:02d}.jpg", quality=85)

    # Planted leaks, each one a way copies slip into evaluation sets.
    shutil.copyfile(data / "train/scene_03.jpg", data / "test/scene_31.jpg")  # byte copy
    save(resized(train[7], 0.5), data / "test/scene_32.jpg", quality=70)  # thumbnail re-upload
    save(train[11].transpose(Image.Transpose.FLIP_LEFT_RIGHT), data / "val/scene_33.jpg", quality=85)
    save(brighter(cropped(train[14], 0.04), 1.2), data / "test/scene_34.jpg", quality=80)
    # The training JPEG's decoded pixels re-saved as PNG: different bytes, same pixels.
    with Image.open(data / "train/scene_05.jpg") as img:
        save(img.convert("RGB"), data / "test/scene_35.png")
    # A duplicate inside train: harmless for leakage, reported as a warning.
    save(train[2], data / "train/scene_02_copy.jpg", quality=60)


if __name__ == "__main__":
    main()
