"""Shared fixtures: small generated datasets, never committed images."""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from PIL import Image

from pytest_leakcheck.testing import brighter, cropped, photo, resized, save

pytest_plugins = ["pytester"]

POLICY = """\
version: 1
splits:
  train: [train/**]
  test: [test/**]
augmentations: [hflip, rot90]
"""


def write_policy(root: Path, text: str = POLICY) -> Path:
    path = root / "leakcheck.yaml"
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def make_policy(tmp_path: Path) -> Callable[..., Path]:
    """Write a policy (default: train/test globs, hflip and rot90) into tmp_path."""
    return lambda text=POLICY: write_policy(tmp_path, text)


@pytest.fixture
def clean_dataset(tmp_path: Path) -> Path:
    """12 distinct training images and 4 distinct test images; no leaks."""
    for i in range(12):
        save(photo(i), tmp_path / f"train/img_{i:02d}.jpg", quality=90)
    for i in range(4):
        save(photo(100 + i), tmp_path / f"test/img_{i:02d}.jpg", quality=90)
    write_policy(tmp_path)
    return tmp_path


#: Planted copies of train image ``seed`` in test: name -> how it was made.
PLANTED: dict[str, Callable[[Path, Image.Image, Path], None]] = {
    "identical.jpg": lambda src, img, dst: shutil.copyfile(src, dst),
    "jpeg_q40.jpg": lambda src, img, dst: save(img, dst, quality=40),
    "half_size.jpg": lambda src, img, dst: save(resized(img, 0.5), dst, quality=90),
    "brighter.jpg": lambda src, img, dst: save(brighter(img, 1.25), dst, quality=90),
    "crop5.jpg": lambda src, img, dst: save(cropped(img, 0.05), dst, quality=90),
    "hflip.jpg": lambda src, img, dst: save(img.transpose(Image.Transpose.FLIP_LEFT_RIGHT), dst, quality=90),
    "rot90.jpg": lambda src, img, dst: save(img.transpose(Image.Transpose.ROTATE_90), dst, quality=90),
}


@pytest.fixture
def leaky_dataset(tmp_path: Path) -> Path:
    """60 distinct train images, 10 distinct test images, and one planted copy
    per kind in PLANTED plus a PNG -> JPEG conversion; see ``expected_leaks``."""
    for i in range(60):
        save(photo(i), tmp_path / f"train/img_{i:03d}.jpg", quality=92)
    for i in range(10):
        save(photo(1000 + i), tmp_path / f"test/distinct_{i:02d}.jpg", quality=92)
    for n, (name, make) in enumerate(PLANTED.items()):
        src = tmp_path / f"train/img_{n:03d}.jpg"
        make(src, photo(n), tmp_path / "test" / name)
    # PNG in train, the same picture as JPEG in test.
    save(photo(500), tmp_path / "train/img_png.png")
    save(photo(500), tmp_path / "test/png_to_jpeg.jpg", quality=85)
    write_policy(tmp_path)
    return tmp_path


def expected_leaks() -> dict[str, str]:
    """test file -> the train file it copies, for ``leaky_dataset``."""
    out = {f"test/{name}": f"train/img_{n:03d}.jpg" for n, name in enumerate(PLANTED)}
    out["test/png_to_jpeg.jpg"] = "train/img_png.png"
    return out


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """Run ``leakcheck`` in-process; returns (exit code, stdout, stderr)."""
    from pytest_leakcheck.cli import main

    def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse exits on usage errors
            code = exc.code if isinstance(exc.code, int) else 2
        out, err = capsys.readouterr()
        return code, out, err

    return run
