"""``identical-file``: the same bytes in two splits (or twice in one).

The cheapest and surest detector: files are grouped by their SHA-256, which
the signature stage computes for every file anyway.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import Detector, PolicyView

if TYPE_CHECKING:
    from ..search.run import SearchRun
    from ..search.kernels import Match


class IdenticalFile(Detector):
    name = "identical-file"
    section = "identical_file"
    kind = "identical-file"
    rank = 0
    link_value = None  # always 0: "linked by identical-file", no number
    # Searched afresh every time from this run's digests, never reused from a store's snapshot:
    # grouping digests costs less than reading the snapshot, and a store a pull request
    # wrote could otherwise say that two equal files do not match (store/trust.py).
    incremental = False
    init_keys = (("severity", "same bytes"),)

    def orientations(self, settings: Any, policy: PolicyView) -> tuple[str, ...]:
        return ()  # equal bytes or pixels, upright only: nothing to turn

    def find(self, run: SearchRun, settings: Any) -> list[Match]:
        import numpy as np

        from ..search.kernels import exact_matches

        keys = list(run.sigs.digests)
        if run.focus is not None:
            # Only copies of a focus file matter; blanking the other keys
            # skips grouping the whole dataset.
            hit = {keys[i] for i in np.flatnonzero(run.focus)}
            keys = [d if d in hit else b"" for d in keys]
        return exact_matches(keys, self.name, run.split_of, run.allowed)


DETECTOR = IdenticalFile()
