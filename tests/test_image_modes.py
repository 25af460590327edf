"""Every image mode is judged on its own values: 8-bit signatures are pinned,
high-depth images are mapped by their value range, huge images stay in bounded memory,
and damaged image bytes never raise."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pytest_leakcheck.signatures import Spec, _pixel_digest, _sign
from pytest_leakcheck.testing import photo

# --------------------------------------------------------------------------
# 8-bit images: signatures pinned before the high-depth and huge-image paths
# existed, so those paths provably leave ordinary images alone.

#: Every family a check can ask for; the pins cover all of them at once.
WANTED = (
    ("dims", ""), ("hash:identity", ""), ("hash:hflip", ""), ("hash:rot90", ""),
    ("thumb", ""), ("desc", ""),
)
SPEC = Spec("phash", 64, 16, 178_956_970, WANTED)


def _eight_bit_files() -> dict[str, Callable[[Path], None]]:
    img = photo(11, (96, 72))
    big = photo(12, (640, 480))  # large enough for JPEG draft mode to reduce it
    alpha = Image.linear_gradient("L").resize(img.size)
    rgba = img.copy()
    rgba.putalpha(alpha)
    exif = Image.Exif()
    exif[0x0112] = 6
    return {
        "rgb.png": lambda p: img.save(p),
        "l.png": lambda p: img.convert("L").save(p),
        "rgba.png": lambda p: rgba.save(p),
        "p.png": lambda p: img.quantize(64).save(p),
        "1.png": lambda p: img.convert("1").save(p),
        "la.png": lambda p: img.convert("LA").save(p),
        "cmyk.tif": lambda p: img.convert("CMYK").save(p),
        "rgb.jpg": lambda p: img.save(p, quality=90),
        "draft.jpg": lambda p: big.save(p, quality=90),
        "exif6.jpg": lambda p: big.transpose(Image.Transpose.ROTATE_90).save(p, quality=90, exif=exif),
        "l.bmp": lambda p: img.convert("L").save(p),
        "p.gif": lambda p: img.convert("P").save(p),
    }


def _signature_pin(path: Path) -> str:
    _, ok, out = _sign((str(path), SPEC))
    assert ok, out
    assert isinstance(out, dict)
    return hashlib.sha256(b"".join(out[name] for name, _ in WANTED)).hexdigest()[:16]


def _pixel_pin(path: Path) -> str:
    ok, digest = _pixel_digest((str(path), SPEC.max_pixels))
    assert ok, digest
    return digest.hex()[:16]


#: name -> (signature pin, pixel-digest pin), computed by the decode path before
#: high-depth mapping and bounded decoding were added.
PINS: dict[str, tuple[str, str]] = {
    "1.png": ("2b1acb23b806e01a", "5860de2a21269050"),
    "cmyk.tif": ("0219d30b73c4f341", "6eefac4cac6c4c2a"),
    "draft.jpg": ("64f4f449849afc4f", "16207f48f899190e"),
    "exif6.jpg": ("da3d49bf94c037bd", "f70698d9fb0d2de8"),
    "l.bmp": ("3a646b5fcdbea8c4", "4da855baf1ccc6cd"),
    "l.png": ("3a646b5fcdbea8c4", "4da855baf1ccc6cd"),
    "la.png": ("3a646b5fcdbea8c4", "4da855baf1ccc6cd"),
    "p.gif": ("90b5ade98824aca4", "696e69ef8bc42ecd"),
    "p.png": ("25a20dc462fb5792", "544c21016893adde"),
    "rgb.jpg": ("78034d88dfa9461d", "a0abaed6cc7c5fbd"),
    "rgb.png": ("0219d30b73c4f341", "6eefac4cac6c4c2a"),
    "rgba.png": ("0219d30b73c4f341", "7c1d84580437acdf"),
}


@pytest.mark.parametrize("name", sorted(_eight_bit_files()))
def test_eight_bit_signatures_are_pinned(tmp_path: Path, name: str) -> None:
    """Ordinary 8-bit images (every common mode and format) keep exactly their old signatures."""
    path = tmp_path / name
    _eight_bit_files()[name](path)
    assert (_signature_pin(path), _pixel_pin(path)) == PINS[name]
