"""aligned's pairs: a pair met from both ends has one verdict."""

from __future__ import annotations

import numpy as np

from pytest_leakcheck.detectors.aligned import pairs


def test_symmetric_scores_take_the_better_direction() -> None:
    """A pair met from both ends keeps the better score, whichever end found it."""
    found = pairs.symmetric(np.array([3, 7, 1]), np.array([7, 3, 2]), np.array([0.5, 0.8, 0.6]),
                                   np.array([False, True, False]))
    assert list(zip(found.i, found.j, found.score, found.flipped)) == [(1, 2, 0.6, False), (3, 7, 0.8, True)]
