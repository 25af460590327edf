"""The aligned verification's matrices make no subnormal floats, and dropping their tails changes no score.

x86 computes with subnormal floats some 40 times slower; the Gaussians' far
tails were subnormal (and products of two small entries underflow) and made
three quarters of the calibration's time.  These tests keep them out and show
the scores are those of the untrimmed matrices.
"""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from pytest_leakcheck.detectors.aligned import alignment

TINY = np.finfo(np.float32).tiny  # the smallest normal float32


def _subnormal(m: np.ndarray) -> int:
    return int(((m != 0) & (np.abs(m) < TINY)).sum())


@pytest.mark.parametrize("name", ["_FINE", "_BLUR", "_WIDE", "_COARSE", "_WIDE_FINE", "_WIDE_BLUR"])
def test_products_of_two_entries_stay_normal(name: str) -> None:
    m = getattr(alignment, name)
    assert float(np.abs(m[m != 0]).min()) ** 2 >= TINY


def test_the_raw_gaussians_do_have_subnormals() -> None:
    # Otherwise the test above proves nothing about _normal.
    fine, blur = alignment._resample()
    assert _subnormal(fine) > 0 and _subnormal(blur) > 0 and _subnormal(alignment._gauss(alignment.DETAIL_SIGMA)) > 0


def _scores(rng: np.random.Generator) -> np.ndarray:
    grey = rng.integers(0, 256, (300, 32, 32)).astype(np.uint8)
    grey[:40] = 0  # flat squares: the products' smallest values
    q = grey[:120][:, ::-1, ::-1].astype(np.float32)
    q[60:] = grey[60:120]  # exact copies: top scores and real alignments
    cand = rng.integers(0, len(grey), (120, 6))
    cand[60:, 0] = np.arange(60, 120)
    flip = rng.random(cand.shape) < 0.3
    tmpl2 = alignment.mirrored_templates(alignment.templates(grey, coarse=True))
    return alignment.verify(q, cand, flip, alignment.References(grey, tmpl2), always=3)


def test_scores_equal_those_of_the_unflushed_matrices(monkeypatch: pytest.MonkeyPatch) -> None:
    flushed = _scores(np.random.default_rng(3))
    fine, blur = alignment._resample()
    monkeypatch.setattr(alignment, "_FINE", fine)
    monkeypatch.setattr(alignment, "_BLUR", blur)
    wide = alignment._gauss(alignment.DETAIL_SIGMA)
    monkeypatch.setattr(alignment, "_WIDE", wide)
    monkeypatch.setattr(alignment, "_WIDE_FINE", wide @ fine)
    monkeypatch.setattr(alignment, "_WIDE_BLUR", wide @ blur)
    monkeypatch.setattr(alignment, "_COARSE", np.einsum("ij,sjk->sik", alignment._HALF, fine[::alignment.COARSE_STEP]))
    monkeypatch.setattr(alignment, "_normal", lambda m: m)
    raw = _scores(np.random.default_rng(3))
    assert np.isfinite(raw).sum() >= 360 and np.nanmax(raw) > 0.99
    np.testing.assert_array_equal(flushed, raw)


def test_gated_pairs_are_scored_in_bounded_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """However many candidates pass the 16 px gate (alike MRI slices: most), the 32 px alignment
    and the detail see at most VERIFY_PAIRS of them at once, and the scores are those of one go."""
    whole = _scores(np.random.default_rng(3))
    assert np.isfinite(whole).sum() >= 360  # far more gated pairs than the chunks below
    seen: list[int] = []
    real = alignment.detail

    def counted(qgrey, *args):  # type: ignore[no-untyped-def]
        seen.append(len(qgrey))
        return real(qgrey, *args)

    monkeypatch.setattr(alignment, "detail", counted)
    monkeypatch.setattr(alignment, "VERIFY_PAIRS", 50, raising=False)
    np.testing.assert_array_equal(_scores(np.random.default_rng(3)), whole)
    assert max(seen) <= 50 and sum(seen) == np.isfinite(whole).sum()


def test_a_square_many_pairs_share_is_worked_once_and_each_pair_scores_as_alone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Queries meet several candidates and references several queries: the 32 px search and the
    detail zoom, blur and high-pass each distinct square once (``alignment.Rows``), and every pair
    scores bit for bit what it scores verified on its own."""
    rng = np.random.default_rng(4)
    grey = rng.integers(0, 256, (40, 32, 32)).astype(np.uint8)
    grey[:5] = 0
    q = np.concatenate([grey[:20], grey[20:30, ::-1, ::-1]]).astype(np.float32)
    cand = rng.integers(0, 12, (30, 8))  # 240 pairs among 12 references
    cand[:12, 0] = np.arange(12)
    flip = rng.random(cand.shape) < 0.3
    refs = alignment.References(grey, alignment.mirrored_templates(alignment.templates(grey, coarse=True)))
    seen: dict[str, int] = {"mirrored": 0, "templates": 0}
    real_mirror, real_templates = alignment._mirror, alignment.templates

    def mirror(g: np.ndarray, flipped: np.ndarray) -> np.ndarray:
        seen["mirrored"] += len(g)
        return real_mirror(g, flipped)

    def templates(g: np.ndarray, coarse: bool) -> np.ndarray:
        seen["templates"] += len(g)
        return real_templates(g, coarse)

    monkeypatch.setattr(alignment, "_mirror", mirror)
    monkeypatch.setattr(alignment, "templates", templates)
    together = alignment.verify(q, cand, flip, refs, gate=-1.0, always=8)
    assert np.isfinite(together).all() and np.nanmax(together) > 0.99
    # Per distinct reference (12) and (query, mirror, zoom), not per pair (240 for each of the two steps).
    assert seen["templates"] <= 12 and seen["mirrored"] < 300
    monkeypatch.undo()
    for i in range(len(q)):
        for k in range(cand.shape[1]):
            alone = alignment.verify(q[[i]], cand[[i], [k]][:, None], flip[[i], [k]][:, None], refs, gate=-1.0, always=1)
            assert alone[0, 0] == together[i, k] or (np.isnan(alone[0, 0]) and np.isnan(together[i, k]))
    rows = alignment.Rows(q, np.array([3, 3, 4]))
    assert len(rows) == 3


@pytest.mark.parametrize("name", [o for o in alignment.TURNS])
def test_turns_are_pillows_transposes_and_undo_each_other(name: str) -> None:
    """Each orientation turns a grey square as Pillow turns the image, and its inverse turns it back."""
    from pytest_leakcheck.signals.decode import TRANSPOSE

    g = np.random.default_rng(4).integers(0, 256, (1, alignment.S, alignment.S)).astype(np.uint8)
    how, back = alignment.TURNS[name]
    pil = g[0] if TRANSPOSE[name] is None else np.asarray(Image.fromarray(g[0]).transpose(TRANSPOSE[name]))
    assert (how(g)[0] == pil).all()
    assert (alignment.TURNS[back][0](how(g)) == g).all()
    assert (alignment.turn(g, [name]) == how(g)).all()


def _corner_pair() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A detailed 32 px square, its exact copy, and the copy with one corner tile of the central
    window replaced by other detail (two photographs alike but for a corner)."""
    rng = np.random.default_rng(5)
    grey = np.stack([np.asarray(Image.fromarray(rng.integers(0, 256, (32, 32)).astype(np.uint8))
                                .resize((64, 64)).resize((32, 32), Image.BILINEAR)) for _ in range(2)])
    copy = grey[0].astype(np.float32)
    corner = copy.copy()
    off, side = (32 - alignment.T) // 2, alignment.T // alignment.TILES
    corner[off:off + side, off:off + side] = grey[1, off:off + side, off:off + side]
    return grey[:1], copy, corner


def _verdict(grey: np.ndarray, query: np.ndarray, tiles: bool) -> float:
    tmpl2 = alignment.mirrored_templates(alignment.templates(grey, coarse=True))
    got = alignment.verify(query[None], np.zeros((1, 1), int), np.zeros((1, 1), bool),
                           alignment.References(grey, tmpl2), always=1, tiles=tiles)
    return float(got[0, 0])


def test_a_pair_that_differs_in_one_corner_is_capped_by_its_worst_tile() -> None:
    grey, copy, corner = _corner_pair()
    assert _verdict(grey, copy, tiles=True) > 0.99  # a copy agrees in every tile
    whole = _verdict(grey, corner, tiles=False)
    capped = _verdict(grey, corner, tiles=True)
    assert whole > 0.8  # the whole window's correlation averages the corner away
    assert capped < whole - 0.1 and capped <= alignment.TILE_MARGIN + 0.3
