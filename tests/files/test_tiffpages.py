"""Page counts of TIFF files from their directory chains (files/tiffpages.py)."""

from __future__ import annotations

import struct
from pathlib import Path

from PIL import Image

from pytest_leakcheck.files import tiffpages


def _chain(path: Path, subfile_types: list[int], loop: bool = False) -> Path:
    """A little-endian TIFF whose directories hold only NewSubfileType; the last points back when ``loop``."""
    out = bytearray(b"II*\x00" + struct.pack("<I", 8))
    for k, kind in enumerate(subfile_types):
        at = len(out)
        last = k == len(subfile_types) - 1
        following = 8 if loop and last else 0 if last else at + 2 + 12 + 4
        out += struct.pack("<H", 1) + struct.pack("<HHII", 254, 4, 1, kind) + struct.pack("<I", following)
    path.write_bytes(bytes(out))
    return path


def test_pages_count_full_resolution_directories(tmp_path: Path) -> None:
    im = Image.new("L", (32, 32), 255)
    im.save(tmp_path / "one.tif")
    im.save(tmp_path / "three.tif", save_all=True, append_images=[im, im])
    im.save(tmp_path / "big.tif", big_tiff=True, save_all=True, append_images=[im])
    assert tiffpages.pages(str(tmp_path / "one.tif")) == 1
    assert tiffpages.pages(str(tmp_path / "three.tif")) == 3
    assert tiffpages.pages(str(tmp_path / "big.tif")) == 2


def test_a_preview_is_no_page_and_a_looping_or_broken_chain_ends(tmp_path: Path) -> None:
    """A scanner's reduced-resolution preview (NewSubfileType bit 0) is not a page; a chain that
    loops back, one cut short, or a file that is no TIFF count as one page, never hang or raise."""
    assert tiffpages.pages(str(_chain(tmp_path / "preview.tif", [0, 1]))) == 1
    assert tiffpages.pages(str(_chain(tmp_path / "two.tif", [0, 0]))) == 2
    assert tiffpages.pages(str(_chain(tmp_path / "loop.tif", [0, 0, 0], loop=True))) == 3
    cut = tmp_path / "cut.tif"
    cut.write_bytes((tmp_path / "two.tif").read_bytes()[:20])
    assert tiffpages.pages(str(cut)) == 1
    (tmp_path / "png.tif").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(20))
    assert tiffpages.pages(str(tmp_path / "png.tif")) == 1
    assert tiffpages.pages(str(tmp_path / "gone.tif")) == 1
