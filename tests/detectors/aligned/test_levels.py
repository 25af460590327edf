"""aligned's levels: the calibration's rates and tail, its sampling noise, weak links, turned copies left out."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from pytest_leakcheck.detectors import aligned
from pytest_leakcheck.detectors.aligned import alignment, levels, pairs


def test_calibration_hits_requested_rate() -> None:
    """The threshold lets through the requested share of impostor scores, never below the floor."""
    scores = np.random.default_rng(1).normal(0.5, 0.05, 200_000)
    for per_10k in (20, 50, 400):
        rate = (scores >= alignment.calibrate(scores, per_10k, floor=0)).mean() * 1e4
        assert abs(rate - per_10k) < 0.15 * per_10k
    assert alignment.calibrate(np.full(100, 0.1), 50) == alignment.MIN_THRESHOLD


def test_calibration_extrapolates_the_tail() -> None:
    """From 2,000 impostors, a rate of a few per 10,000 comes from the fitted tail, not the sample maximum."""
    rng = np.random.default_rng(3)
    # Distance to a perfect score exponential in log scale: the family the fit assumes.
    def draw(n: int) -> np.ndarray:
        return -np.expm1(-(0.7 + rng.exponential(0.15, n)))

    sample, truth = draw(2000), draw(2_000_000)
    for per_10k in (2, 5):
        thr = alignment.calibrate(sample, per_10k, floor=0)
        rate = (truth >= thr).mean() * 1e4
        assert per_10k / 2.5 < rate < per_10k * 2.5
        assert thr < 1
    # Too few above the asked level for a quantile: the fit goes beyond the largest impostor.
    far = alignment.calibrate(sample, 2, floor=0)
    assert far > sample.max() or (sample >= far).sum() <= 1


def test_levels_state_their_sampling_noise() -> None:
    """The bootstrap standard error of the levels matches their spread across independent
    samples, and shrinks as the sample grows (why the calibration samples 8,000 impostors)."""
    rng = np.random.default_rng(5)
    settings = aligned.AlignedSettings()

    def draw(n: int) -> np.ndarray:  # the family the tail fit assumes, as above
        return -np.expm1(-(0.7 + rng.exponential(0.15, n)))

    for n in (2000, alignment.CALIBRATION_QUERIES):
        spread = np.std([[alignment.calibrate(s, settings.false_alarms_per_10k, floor=0),
                          alignment.calibrate(s, settings.error_false_alarms_per_10k, floor=0)]
                         for s in (draw(n) for _ in range(40))], axis=0, ddof=1)
        se = np.array(levels.levels_se(draw(n), settings))
        assert (spread / 2 < se).all() and (se < spread * 2).all(), (n, se, spread)
        if n == 2000:
            small = se
    assert (se < small / 1.5).all()
    assert levels.levels_se(np.zeros(1), settings) == (0.0, 0.0)


def test_links_below_the_error_level_are_weak() -> None:
    """Between the warning and error levels an aligned match is weak; below the warning level, none."""
    found = pairs.Pairs(np.array([0, 1, 2]), np.array([5, 6, 7]), np.array([0.95, 0.9, 0.8]),
                               np.array([False, True, False]))
    cal = {"threshold": 0.85, "error_threshold": 0.93}
    got = [(m.i, m.j, m.weak, m.orientation) for m in levels.matches(found, cal)]
    assert got == [(0, 5, False, "identity"), (1, 6, True, "hflip")]


def test_turned_copies_in_the_data_do_not_raise_the_levels(monkeypatch: pytest.MonkeyPatch) -> None:
    """An upside-down image that lines up with another is a turned copy in the data, not an
    impostor: left out of the calibration (one of them among 20 would set every level to 1)."""
    rng = np.random.default_rng(6)
    clean = {"cross": rng.uniform(0.2, 0.6, 20), "within": rng.uniform(0.2, 0.6, 20)}
    dirty = {k: np.concatenate([v, [0.99, 1.0]]) for k, v in clean.items()}
    plan = SimpleNamespace(rows={"train": np.arange(16), "test": np.arange(16, 20)})  # 20 images: floored
    for imp in (clean, dirty):
        monkeypatch.setattr(pairs, "impostors", lambda data, p, digests, imp=imp: imp)
        got = levels.calibration(None, plan, aligned.AlignedSettings(), ())  # type: ignore[arg-type]
        assert got["threshold"] <= got["error_threshold"] < levels.TURNED_COPY
        assert got["turned_copies"] == (4 if imp is dirty else 0)
    monkeypatch.setattr(pairs, "impostors", lambda data, p, digests: clean)
    assert {k: v for k, v in levels.calibration(None, plan, aligned.AlignedSettings(), ()).items()  # type: ignore[arg-type]
            if k != "turned_copies"} == {k: v for k, v in got.items() if k != "turned_copies"}
