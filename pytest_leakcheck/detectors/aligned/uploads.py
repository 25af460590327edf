"""Which rows an export tool names as one upload: copies by their names, so never ``aligned``'s impostors.

``aligned`` calibrates on pairs that stand for unrelated images: upside-down rows against their best
candidates, and each row's third-best retrieved neighbour in the other splits (``levels.alike``).  An
augmented Roboflow export keeps several versions of each upload (flipped, turned, zoomed, re-coloured),
named ``<source>_<ext>.rf.<hash>.<ext>``: a val picture whose upload also went to train meets three or
more of its own versions there, so its third-best neighbour is still a copy, and the levels are set
where copies score (``pakcoy`` of ``benchmarks/field.py``: eight train versions of one upload, the
neighbour level and so both levels at 1.0, no aligned link at all).  A pair with one upload name is a
copy by evidence the pixels do not give, so it is no impostor.  A hash match is not such evidence:
other shots of one fixed camera match by their hashes too, and they are the impostors that level
holds off (``chess``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...files.exportnames import roboflow_stem

#: The upload id of a row no export tool named: it shares an upload with no other row.
NONE = -1


def ids(paths: Sequence[str]) -> np.ndarray | None:
    """(N,) upload id of each path (``NONE`` where the name says none), or None when no path has one."""
    stems = [roboflow_stem(p) for p in paths]
    if not any(s is not None for s in stems):
        return None
    index: dict[str, int] = {}
    return np.array([NONE if s is None else index.setdefault(s, len(index)) for s in stems], np.int64)


def same(upload: np.ndarray | None, rows: np.ndarray, cand: np.ndarray) -> np.ndarray:
    """(n, m) whether candidate ``cand[q, c]`` (-1: none) is of row ``rows[q]``'s upload."""
    if upload is None:
        return np.zeros(cand.shape, bool)
    mine = upload[rows][:, None]
    theirs = np.where(cand >= 0, upload[np.maximum(cand, 0)], NONE)
    return (mine != NONE) & (theirs == mine)
