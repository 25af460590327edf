"""The signal families ``aligned`` stores per content: what the signature stage computes for it.

``DESC_FAMILY`` holds the 32 px descriptors (``descriptors.py``) every search
reads; ``HIRES_FAMILY`` (stored under its original name, ``fine``) the 96 px grey
square of large images, for the second look (``hires.py``).
"""

from __future__ import annotations

import numpy as np

from ...signals.decode import COLOUR, DECODE_PATH, Decoded
from ...signals.families import Family
from . import descriptors, hires

#: The descriptors, in the order they are packed into the family's bytes: dtype and values per image.
DESCRIPTORS = {"grey32": ("u1", 1024), "hog": ("<f2", 128)}


def _desc(decoded: Decoded, family: Family) -> bytes:
    out = descriptors.describe(np.asarray(decoded.colour))
    return b"".join(out[d].tobytes() for d in DESCRIPTORS)


DESC_FAMILY = Family(
    # v2: the unused 8x8 colour layout is no longer computed or stored.
    "desc", f"{'+'.join(DESCRIPTORS)};rgb{COLOUR}-box;{DECODE_PATH};v2",
    tuple((f"desc:{name}", dtype, width) for name, (dtype, width) in DESCRIPTORS.items()),
    _desc, colour=True,
)


HIRES_FAMILY = Family("fine", hires.FINE_PARAMS, (("fine", "u1", 1),), hires.row, variable=True, from_dims=hires.small)
