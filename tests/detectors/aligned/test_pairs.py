"""aligned's pairs: a pair met from both ends has one verdict."""

from __future__ import annotations

import numpy as np

from pytest_leakcheck.detectors.aligned import pairs


def test_symmetric_scores_take_the_better_direction() -> None:
    """A pair met from both ends keeps the better score, whichever end found it."""
    found = pairs.symmetric(np.array([3, 7, 1]), np.array([7, 3, 2]), np.array([0.5, 0.8, 0.6]),
                                   np.array([False, True, False]))
    assert list(zip(found.i, found.j, found.score, found.flipped)) == [(1, 2, 0.6, False), (3, 7, 0.8, True)]


def _data(n: int) -> pairs.Data:
    """``n`` textured 32 px grey squares, every other one a shifted copy of the one before: pairs that
    score high and pairs that score low."""
    from pytest_leakcheck.testing import photo

    grey = np.stack([np.asarray(photo(k // 2, (40, 40)).convert("L"))[k % 2:32 + k % 2, k % 2:32 + k % 2]
                     for k in range(n)])
    return pairs.Data(grey, pairs.Templates(grey), np.zeros((n, 128), np.float16), None,
                      np.zeros((n, 0), np.float32), True)


def test_pair_scores_verify_in_bounded_blocks(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """However many pairs ``refine`` asks about (every hash match of a set of alike MRI slices), the
    verification sees at most PAIR_BLOCK of them at once, and the scores are those of one call."""
    data = _data(24)
    rng = np.random.default_rng(5)
    i = np.concatenate([np.arange(0, 24, 2), rng.integers(0, 24, 40)])
    j = np.concatenate([np.arange(1, 24, 2), rng.integers(0, 24, 40)])
    flip = rng.random(len(i)) < 0.3
    turned = [("identity", "rot90", "hflip")[k % 3] for k in range(len(i))]
    whole = pairs.pair_scores(data, i, j, flip, always=1, turned=turned)
    both = pairs.pair_scores(data, i, j, None, always=1)
    assert np.all(both[:12] > 0.9) and both[12:].min() < 0.5  # the shifted copies, and unrelated pairs
    seen: list[int] = []
    real = pairs.alignment.verify

    def counted(qgrey, cand, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(len(qgrey))
        return real(qgrey, cand, *args, **kwargs)

    monkeypatch.setattr(pairs.alignment, "verify", counted)
    monkeypatch.setattr(pairs, "PAIR_BLOCK", 7, raising=False)
    np.testing.assert_array_equal(pairs.pair_scores(data, i, j, flip, always=1, turned=turned), whole)
    np.testing.assert_array_equal(pairs.pair_scores(data, i, j, None, always=1), both)
    assert max(seen) <= 7 and sum(seen) == 2 * len(i) + 4 * len(i)  # both ways; both mirrors without flip


def test_refined_matches_score_in_workers_as_here(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Hash matches ``refine`` scores at 32 px in forked workers, blocks dealt between them, come back
    in order with the scores of one call here."""
    from types import SimpleNamespace

    from pytest_leakcheck.detectors.aligned import hashed

    data = _data(24)
    rng = np.random.default_rng(6)
    i, j = rng.integers(0, 24, 50), rng.integers(0, 24, 50)
    flip = rng.random(50) < 0.3
    turned = [("identity", "rot90", "hflip")[k % 3] for k in range(50)]
    here = pairs.pair_scores(data, i, j, flip, always=1, turned=turned)
    monkeypatch.setattr(pairs, "PAIR_BLOCK", 7, raising=False)  # 8 blocks, dealt unevenly to 3 workers
    forked = SimpleNamespace(forked_jobs=lambda items, least: 3)
    got = hashed._pair_scores(forked, hashed._Asked(data, i, j, flip, turned))  # type: ignore[arg-type]
    np.testing.assert_array_equal(got, here)
