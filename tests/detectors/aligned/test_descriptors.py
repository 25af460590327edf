"""aligned's descriptors: the mirrored and upside-down gradient descriptors need no recompute."""

from __future__ import annotations

import numpy as np

from pytest_leakcheck.detectors.aligned import alignment, descriptors


def test_mirror_and_upside_down_descriptors_are_permutations() -> None:
    """The mirrored and upside-down gradient descriptors are index maps of the cached one, exactly."""
    g = np.random.default_rng(0).uniform(0, 255, (4, alignment.S, alignment.S)).astype(np.float32)
    h = descriptors.hog(g)
    assert np.allclose(descriptors.hog(np.ascontiguousarray(g[:, :, ::-1]))[:, :], h[:, descriptors.HOG_HFLIP], atol=1e-6)
    assert np.allclose(descriptors.hog(np.ascontiguousarray(g[:, ::-1, ::-1])), h[:, descriptors.HOG_ROT180], atol=1e-6)
    assert not np.allclose(h, h[:, descriptors.HOG_HFLIP])
