"""Small pictures (icons, emoji, thumbnails under 200 px) decode at no less than the square
every signal is computed from, whatever their format: a JPEG copy of a 64 px PNG icon must
not be read at half its size while its original is read whole."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from pytest_leakcheck.signals import decode
from pytest_leakcheck.testing import photo


def _encoded(img: Image.Image, fmt: str, **options: object) -> bytes:
    buf = io.BytesIO()
    img.save(buf, fmt, **options)
    return buf.getvalue()


@pytest.mark.parametrize("side", [64, 100, 150])
def test_a_small_jpeg_is_decoded_at_least_at_the_signal_square(side: int) -> None:
    """JPEG draft mode may reduce a small JPEG, but never below ``BASE`` px: a 64 px JPEG was
    read at 32 px and squashed back up, a quarter of the detail its PNG original kept."""
    img = photo(3, (side, side))
    got = decode.decode(_encoded(img, "JPEG", quality=90), 10**8)
    assert min(got.upright.size) >= min(side, decode.BASE)
    png = decode.decode(_encoded(img, "PNG"), 10**8)
    diff = np.abs(np.asarray(got.grey, np.float64) - np.asarray(png.grey, np.float64)).mean()
    assert diff < 2.0  # JPEG noise only (drafted to 32 px: 2.5-4.7 grey levels)
