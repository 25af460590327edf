"""The fine level held against the data's own nearest look-alikes (``aligned.hires_alike``).

On ``signdigits`` of ``benchmarks/field.py`` (100 px hand signs of 218 students on plain walls)
upside-down impostors left the fine level at its floor 0.45 (largest 0.24), and three pairs of two
students' hands in one sign stayed errors at fine 0.45-0.51; the images' nearest neighbours under the
32 px error level reach 0.54, and the level they set made all three warnings."""

from __future__ import annotations

import numpy as np

from pytest_leakcheck.detectors.aligned import hires_alike, hires_levels


def test_the_level_is_the_largest_fine_score_of_the_nearest_share() -> None:
    """Of 100 neighbours the 10 best aligned at 32 px stand for the pairs the fine verdict judges: their
    largest fine score is the level, whatever farther neighbours score."""
    coarse = np.linspace(0.5, 0.87, 100)
    fine = np.full(100, 0.2)
    fine[95] = 0.54   # among the nearest tenth: sets the level
    fine[10] = 0.7    # a far neighbour: says nothing of the pairs judged
    got = hires_alike.level(fine, coarse, hires_levels.FINE_TURNED_COPY)
    assert got["fine_neighbour_level"] == 0.54
    assert got["fine_neighbours_on"] == 10
    assert got["fine_neighbours_from"] == round(float(coarse[90]), 4)


def test_copies_among_the_nearest_set_no_level() -> None:
    """Where a neighbour among the nearest agrees at FINE_TURNED_COPY or more, the nearest are copy families
    (``eyes``' augmented fundus photos, whose other copies at 0.74-0.79 raised the level over 6 true copies):
    no level; a copy among the far neighbours changes nothing."""
    coarse = np.linspace(0.5, 0.87, 20)
    fine = np.full(20, 0.3)
    fine[-2] = 0.76
    fine[-1] = 0.93
    got = hires_alike.level(fine, coarse, hires_levels.FINE_TURNED_COPY)
    assert got["fine_neighbour_copies"] == 1
    assert "fine_neighbour_level" not in got
    fine[-1], fine[0] = 0.3, 0.93
    got = hires_alike.level(fine, coarse, hires_levels.FINE_TURNED_COPY)
    assert got["fine_neighbour_copies"] == 1
    assert got["fine_neighbour_level"] == 0.76


def test_no_neighbour_sets_no_level() -> None:
    got = hires_alike.level(np.array([np.nan, 0.95]), np.array([0.8, 0.85]), hires_levels.FINE_TURNED_COPY)
    assert "fine_neighbour_level" not in got


def test_a_few_neighbours_still_give_one() -> None:
    assert len(hires_alike.nearest(np.array([0.7, 0.8, 0.6]))) == 1
    assert hires_alike.nearest(np.array([0.7, 0.8, 0.6]))[0] == 1
