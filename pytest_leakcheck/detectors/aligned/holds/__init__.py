"""Holds: rules that keep an ``aligned`` error link at warning where its score says less than it seems.

The 32 px verdict correlates detail.  Some pictures carry little detail of their
own (glyphs on a blank page, one kind of subject in its usual tones, a subject
on a plain ground), and there two different pictures can score like a copy.  A
hold is one such rule, in its own module: it sees the error-level links that are
still errors and names those it keeps at warning.  The holds run in the order of
:data:`HOLDS`, each on what the ones before it left, and each counts what it held
in ``stats.aligned`` under its own name.  A hold only ever demotes a link: hash
and thumbnail matches keep their own verdict, and no hold raises anything.

To add one, write a module with a function of :class:`Asked` returning a mask, and
list it in :data:`HOLDS` with the stat's name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from . import plain
from . import sparse
from . import tones


@dataclasses.dataclass(frozen=True)
class Asked:
    """The error-level links a hold is asked about: rows ``i`` and ``j`` of the 32 px grey squares,
    whether ``i`` is mirrored onto ``j``, the pair's score and its error level."""

    grey32: np.ndarray
    i: np.ndarray
    j: np.ndarray
    flipped: np.ndarray
    score: np.ndarray
    level: np.ndarray

    def subset(self, keep: np.ndarray) -> Asked:
        return dataclasses.replace(self, i=self.i[keep], j=self.j[keep], flipped=self.flipped[keep],
                                   score=self.score[keep], level=self.level[keep])


@dataclasses.dataclass(frozen=True)
class Hold:
    """One rule: ``stat`` names its count in ``stats.aligned``; ``rule`` says which links it holds."""

    stat: str
    rule: Callable[[Asked], np.ndarray]


#: In order.  Glyphs first: two drawings of one character share their blank page (``sparse``).
#: Then tones: two photographs of one kind of subject share an outline, not their tones (``tones``).
#: Then plain grounds: only the subject's outline correlates, so it must clear the level (``plain``).
HOLDS: tuple[Hold, ...] = (
    Hold("glyphs_held", lambda a: sparse.held(a.grey32, a.i, a.j, a.flipped)),
    Hold("tones_held", lambda a: tones.held(a.grey32, a.i, a.j, a.flipped)),
    Hold("plain_held", lambda a: plain.held(a.grey32, a.i, a.j, a.score, a.level)),
)


def apply(asked: Asked, holds: tuple[Hold, ...] = HOLDS) -> tuple[np.ndarray, dict[str, int]]:
    """Which of the ``asked`` links some hold keeps at warning, and how many each held."""
    held = np.zeros(len(asked.i), bool)
    counts: dict[str, int] = {}
    for hold in holds:
        left = np.flatnonzero(~held)
        mask = np.asarray(hold.rule(asked.subset(left)), bool) if len(left) else np.zeros(0, bool)
        held[left[mask]] = True
        counts[hold.stat] = int(np.count_nonzero(mask))
    return held, counts
