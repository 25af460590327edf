"""Holds: rules that keep an ``aligned`` error link at warning where its score says less than it seems.

The 32 px verdict correlates detail.  Some pictures carry little detail of their
own (glyphs on a blank page, one kind of subject in its usual tones, a subject
on a plain ground), and there two different pictures can score like a copy.  A
hold is one such rule, in its own module: it sees the error-level links that are
still errors and names those it keeps at warning.  The holds run in the order of
:data:`HOLDS`, each on what the ones before it left, and each counts what it held
in ``stats.aligned`` under its own name.  A hold only ever demotes a link: hash
and thumbnail matches keep their own verdict (but for :data:`TEMPLATE`), and no
hold raises anything.

To add one, write a module with a function of :class:`Asked` returning a mask, and
list it in :data:`HOLDS` with the stat's name.  The last, ``documents``, reads the two
files again (only for pairs of two documents), so it needs ``Asked.pictures``; hash and
thumbnail matches are asked by it alone (``hashed.refine``, :data:`TEMPLATE`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from . import documents
from . import plain
from . import sparse
from . import tones


@dataclasses.dataclass(frozen=True)
class Asked:
    """The error-level links a hold is asked about: rows ``i`` and ``j`` of the 32 px grey squares,
    whether ``i`` is mirrored onto ``j``, the pair's score and its error level; ``pictures``, what
    the files are read from again (None: the template hold asks nothing), and how ``i`` is turned onto
    ``j`` where a hash found it turned (None: identity or the mirror, as ``flipped`` says)."""

    grey32: np.ndarray
    i: np.ndarray
    j: np.ndarray
    flipped: np.ndarray
    score: np.ndarray
    level: np.ndarray
    pictures: documents.Pictures | None = None
    turned: Sequence[str] | None = None

    def subset(self, keep: np.ndarray) -> Asked:
        keep = np.asarray(keep)
        rows = np.flatnonzero(keep) if keep.dtype == bool else keep
        turned = None if self.turned is None else [self.turned[k] for k in rows.tolist()]
        return dataclasses.replace(self, i=self.i[keep], j=self.j[keep], flipped=self.flipped[keep],
                                   score=self.score[keep], level=self.level[keep], turned=turned)

    def how(self) -> list[str]:
        """How the first image of each pair is turned onto the second: ``turned``, else identity or hflip."""
        if self.turned is not None:
            return list(self.turned)
        return ["hflip" if f else "identity" for f in np.asarray(self.flipped, bool).tolist()]


@dataclasses.dataclass(frozen=True)
class Hold:
    """One rule: ``stat`` names its count in ``stats.aligned``; ``rule`` says which links it holds."""

    stat: str
    rule: Callable[[Asked], np.ndarray]


#: In order.  Glyphs first: two drawings of one character share their blank page (``sparse``).
#: Then tones: two photographs of one kind of subject share an outline, not their tones (``tones``).
#: Then plain grounds: only the subject's outline correlates, so it must clear the level (``plain``).
#: Last, documents of one template, the one hold that decodes files again: only what is left is asked.
TEMPLATE = Hold("template_held", lambda a: documents.held(a.pictures, a.i, a.j, a.how()))
HOLDS: tuple[Hold, ...] = (
    Hold("glyphs_held", lambda a: sparse.held(a.grey32, a.i, a.j, a.flipped)),
    Hold("tones_held", lambda a: tones.held(a.grey32, a.i, a.j, a.flipped)),
    Hold("plain_held", lambda a: plain.held(a.grey32, a.i, a.j, a.score, a.level)),
    TEMPLATE,
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
