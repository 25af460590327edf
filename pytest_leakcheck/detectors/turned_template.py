"""``turned-copy``'s error links asked the template hold (``aligned.holds.documents``) in their own turn.

Two documents of one printed template turned a degree apart agree in their layout
at 128 px as a copy does; their text differs (``prado`` of ``benchmarks/field.py``:
a Belgian residence card in Dutch and in French, detail 0.861 over the level 0.86).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..search.kernels import Match
    from ..search.run import SearchRun


def held(run: SearchRun, errors: list[Match], judged: dict) -> set[int]:
    """The ids of those ``errors`` (judged copies at the error level) that join two documents of one
    template (``aligned.holds.documents``, asked in the pair's own turn): other text, one layout.  A
    pair the policy ties (both files in one group) is not asked, as in ``aligned.hashed``."""
    groups = run.groups or [None] * len(run.paths)
    ask = [n for n, m in enumerate(errors) if groups[m.i] is None or groups[m.i] != groups[m.j]]
    if not ask:
        return set()
    # Imported here: the detector registry imports every module of detectors/, and a check with no
    # turned error link (most pull requests) need not import the hold (0.16 s).
    import numpy as np

    from ..files.remote import read_bytes
    from .aligned.holds import documents

    ij = np.array([(m.i, m.j) for m in errors], np.int64)
    pictures = documents.from_files(lambda r: read_bytes(str(run.root / run.paths[r])), lambda: run.max_pixels)
    held = documents.held_turned(pictures, ij[ask, 0], ij[ask, 1],
                                 [judged[id(errors[n])][2] for n in ask], [judged[id(errors[n])][3] for n in ask])
    return {id(errors[ask[k]]) for k in np.flatnonzero(held).tolist()}
