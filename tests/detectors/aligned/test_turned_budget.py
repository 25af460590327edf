"""Weak turned hash matches are cut to each image's closest before aligned scores them (``hashed._turned_budget``)."""

from __future__ import annotations

import random
from types import SimpleNamespace

from pytest_leakcheck.detectors.aligned import hashed
from pytest_leakcheck.search.kernels import Match


def _dense(detector: str, orientation: str = "rot90", weak: bool = True) -> list[Match]:
    rng = random.Random(7)
    value = (lambda: rng.randint(0, 12)) if detector == "phash" else (lambda: round(rng.uniform(0.9, 1.0), 4))
    return [Match(i, j, detector, value(), orientation, weak) for i in range(30) for j in range(30, 60)]


def _closest(matches: list[Match], image: int, side: str, lower: bool) -> set[tuple[int, int]]:
    mine = sorted((m for m in matches if getattr(m, side) == image), key=lambda m: m.value if lower else -m.value)
    cut = mine[hashed.TURNED_PER_IMAGE - 1].value
    return {(m.i, m.j) for m in mine if (m.value < cut if lower else m.value > cut)}


def test_each_image_keeps_its_closest_weak_turned_matches_and_the_rest_are_counted() -> None:
    for detector, lower in (("thumbnail", False), ("phash", True)):
        matches = _dense(detector)
        run = SimpleNamespace(stats={detector: {"inseparable": True}})
        kept = hashed._turned_budget(run, matches)
        pairs = {(m.i, m.j) for m in kept}
        # Bounded per image: each of the 60 keeps at most TURNED_PER_IMAGE (30 as first image, 30 as second).
        assert len(kept) <= hashed.TURNED_PER_IMAGE * 60 < len(matches)
        for image in range(30):
            assert _closest(matches, image, "i", lower) <= pairs
        for image in range(30, 60):
            assert _closest(matches, image, "j", lower) <= pairs
        assert run.stats[detector]["turned_beyond_budget"] == len(matches) - len(kept)
        assert run.stats[detector]["inseparable"] is True


def test_upright_mirrored_and_strong_matches_are_never_cut() -> None:
    upright = _dense("thumbnail", "identity") + _dense("thumbnail", "hflip")
    strong = _dense("phash", "rot180", weak=False)
    run = SimpleNamespace(stats={})
    assert hashed._turned_budget(run, upright + strong) == upright + strong
    assert run.stats == {}


def test_the_summary_names_the_matches_not_judged() -> None:
    from pytest_leakcheck.detectors import homogeneity

    text = homogeneity.said("thumbnail", {"inseparable": True, "random_pairs": 2000, "random_passing": 68,
                                          "turned_beyond_budget": 1234})
    assert "1234 turned matches" in text
