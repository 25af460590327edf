"""same-scene's consensus (``features.consensus``): a fit that reproduces its own inliers is not refitted,
and the inliers are those of the three refits it always made before."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from pytest_leakcheck.detectors.same_scene import features


def _three_refits(pa: np.ndarray, pb: np.ndarray, seed: int) -> np.ndarray:
    """The consensus as it was: the affine hypotheses' best inliers, then always three least-squares refits."""
    pa, pb = pa.astype(np.float64), pb.astype(np.float64)
    maps = features._affine_hypotheses(pa, pb, np.random.default_rng(seed))
    if len(maps) == 0:
        return np.zeros(len(pa), bool)
    pred = maps[:, :, :2] @ pa.T + maps[:, :, 2:]
    near = (pred[:, 0] - pb[:, 0]) ** 2 + (pred[:, 1] - pb[:, 1]) ** 2 < (2 * features.REPROJ) ** 2
    mask = near[int(np.argmax(near.sum(axis=1)))]
    for _ in range(3):
        if mask.sum() < 4:
            return np.zeros(len(pa), bool)
        h, _m = cv2.findHomography(pa[mask], pb[mask], 0)
        if h is None or abs(np.linalg.det(h[:2, :2])) < 1e-3:
            return np.zeros(len(pa), bool)
        mask = np.linalg.norm(features._project(h, pa) - pb, axis=1) < features.REPROJ
    return mask


def _matches(rng: np.random.Generator, n: int, outliers: float, noise: float) -> tuple[np.ndarray, np.ndarray]:
    """``n`` point pairs under one perspective map at 320 px, a share of them replaced by chance points."""
    pa = rng.uniform(0, 320, (n, 2))
    h = np.array([[1.05, 0.04, 6.0], [-0.03, 0.97, -4.0], [1e-4, -5e-5, 1.0]])
    pb = features._project(h, pa) + rng.normal(0, noise, (n, 2))
    bad = rng.random(n) < outliers
    pb[bad] = rng.uniform(0, 320, (int(bad.sum()), 2))
    return pa.astype(np.float32), pb.astype(np.float32)


@pytest.mark.parametrize("seed", range(3))
def test_the_inliers_are_those_of_three_refits(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for k in range(80):
        pa, pb = _matches(rng, int(rng.integers(8, 200)), float(rng.choice([0.0, 0.3, 0.7, 0.95])),
                          float(rng.choice([0.0, 0.5, 1.5, 3.0])))
        if k % 4 == 0:  # an impostor's: the same points with the geometry shuffled
            pa = pa[rng.permutation(len(pa))]
        assert np.array_equal(features.consensus(pa, pb, seed=k), _three_refits(pa, pb, seed=k))


def test_a_fit_that_keeps_its_inliers_is_not_refitted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Exact matches of one map: the first fit's inliers are all the points it was fitted on."""
    fits = []
    fit = cv2.findHomography

    def counted(*args: object, **kwargs: object) -> object:
        fits.append(1)
        return fit(*args, **kwargs)

    monkeypatch.setattr(cv2, "findHomography", counted)
    pa, pb = _matches(np.random.default_rng(5), 60, 0.0, 0.0)
    assert features.consensus(pa, pb, seed=1).all()
    assert len(fits) == 1  # three before: the second and third refits fitted the same points again
