"""Faint fine detail and other tones: two photographs of one pose, not one photograph (issue 37).

The fine verdict (``hires_levels``) keeps an error link whose 96 px detail
correlates at the fine level or more.  Pictures that are all one pose on one
ground (hands making one sign on one white sheet, ``signdigits``; frontal
press photos of one face, ``lfw-faces``; ``benchmarks/field.py``) share
their outline, and the outline reaches the fine band too: two different
hands scored 0.454-0.515 there, just over the 0.45 floor, while the
upside-down impostors the level is set by reached 0.24 at most.  Those
pictures differ in their tones as well (skin, light, backdrop): at the
pair's 32 px alignment their grey levels, each less its mean, differ by
8.8-11.1 on average (``holds.tones.gap``), under the tones hold's 18 (set on
CIFAR, where no fine evidence exists) but over every copy's near the fine
level: of the field's error links by copies judged at 96 px under FINE_MARGIN
over the level (``nail``, ``screws``, ``ufc``, ``leprosy``, ``damage``,
``dance``, ``lfw-faces``: 15 links) the largest gap is 8.1, 11 of them under 7.
A copy barely over the fine level is blurred or resampled, not re-toned.

So where the fine verdict is faint (within FINE_MARGIN of its level) and the
tones disagree by TONE_NEAR or more, the link is a warning: two weak lines
of evidence do not make an error.  A pair with no fine score (a small
image, CIFAR) is not asked.  Hash and thumbnail matches keep their own verdict,
as under the tones hold: applied to them, this held pHash links between
Roboflow-augmented copies of one ``ufc`` frame (exposure changed, pHash 0 and 6).
"""

from __future__ import annotations

import numpy as np

from .holds import tones

#: Fine score over the fine level under which its verdict is faint.  The field's false links by
#: two hands or two press photos scored 0.004-0.065 over it, its copies from 0.001 (``benchmarks/field.py``).
FINE_MARGIN = 0.1
#: Tone gap (grey levels, ``holds.tones.gap``) from which a faint fine verdict is held at warning.
#: ``benchmarks/field.py``'s error links under FINE_MARGIN: copies 8.1 at most, different hands or
#: press photos 8.8 and up.
TONE_NEAR = 8.5


def held(grey32: np.ndarray, i: np.ndarray, j: np.ndarray, flipped: np.ndarray, fine: np.ndarray,
         level: float) -> np.ndarray:
    """Which pairs (rows ``i``, ``j`` of the 32 px grey squares) the fine verdict keeps at warning
    though their ``fine`` score (NaN: not judged) is at the ``level`` or over it."""
    fine = np.asarray(fine, np.float64)
    out = np.zeros(len(fine), bool)
    ask = np.flatnonzero(np.isfinite(fine) & (fine >= level) & (fine < level + FINE_MARGIN))
    if len(ask):
        i, j, fl = np.asarray(i)[ask], np.asarray(j)[ask], np.asarray(flipped, bool)[ask]
        out[ask] = tones.gaps(grey32, i, j, fl) >= TONE_NEAR
    return out
