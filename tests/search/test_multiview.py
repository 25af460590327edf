"""The several-view retrieval (``search/multiview.py``): its bounded top-k is a full sort's."""

from __future__ import annotations

import numpy as np

from pytest_leakcheck.search import multiview


def test_topk_equals_a_full_sort() -> None:
    """The bounded top-k returns exactly the k best references (best over views), excluding the query itself."""
    rng = np.random.default_rng(2)
    ref = rng.normal(size=(3000, 16)).astype(np.float32)
    q0, q1 = ref[:50] + 0.1, rng.normal(size=(50, 16)).astype(np.float32)
    exclude = np.arange(50)
    idx, view = multiview.topk([q0, q1], ref, 5, exclude)
    s = np.maximum(q0 @ ref.T, q1 @ ref.T)
    s[np.arange(50), exclude] = -np.inf
    expect = np.argsort(-s, 1)[:, :5]
    assert (np.sort(idx, 1) == np.sort(expect, 1)).all()
    assert (view == (np.take_along_axis(q1 @ ref.T, idx, 1) >= np.take_along_axis(q0 @ ref.T, idx, 1))).all()
