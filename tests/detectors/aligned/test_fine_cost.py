"""The fine verdict's cost: memory follows the images, not the pairs, and no pair is scored twice in a run.

On a fixed-camera set (one scene, one object moved) most of N² pairs reach
the fine verdict; it must neither hold a square per pair nor score again a pair
that another detector's matches ask about.
"""

from __future__ import annotations

import hashlib
import tracemalloc
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from PIL import ImageDraw

from pytest_leakcheck.detectors.aligned import families, hires, hires_levels
from pytest_leakcheck.signals.decode import decode
from pytest_leakcheck.signals.families import Signatures
from pytest_leakcheck.store.db import open_store
from pytest_leakcheck.testing import photo

N = 12


def _shots() -> list[bytes]:
    """N photos of one scene at 640 x 480, a disc moved between them, as JPEG bytes."""
    import io

    out = []
    for k in range(N):
        img = photo(3, (640, 480))
        ImageDraw.Draw(img).ellipse((40 * k, 30 + 20 * k, 40 * k + 90, 120 + 20 * k), fill=(200, 30, 30))
        buf = io.BytesIO()
        img.save(buf, "JPEG", quality=90)
        out.append(buf.getvalue())
    return out


def _run(tmp_path: Path, jobs: int = 0) -> SimpleNamespace:
    """What ``hires_levels.scores`` reads of a search run: the signatures, the store, the run's memo,
    and how many forked workers it offers (``SearchRun.forked_jobs``: ``jobs``, whatever the pairs)."""
    store = open_store(tmp_path / "cache.sqlite")
    digests, grey32, flags, rows = [], [], [], []
    for data in _shots():
        d = decode(data, 10**8, colour=32)
        digest = hashlib.sha256(data).digest()
        fine = hires.row(d, families.HIRES_FAMILY)
        assert fine[:1] == b"\1"  # large enough to carry a fine square
        desc = np.frombuffer(families._desc(d, families.DESC_FAMILY), np.uint8)
        digests.append(digest)
        grey32.append(desc[:1024])
        flags.append(1)
        rows.append((digest, families.HIRES_FAMILY.name, families.HIRES_FAMILY.params, True, fine))
    store.put_signatures(rows)
    sigs = Signatures(tuple(digests), np.ones(N, bool), {}, np.tile([640, 480], (N, 1)),
                      {"desc:grey32": np.stack(grey32), "fine": np.array(flags, np.uint8)[:, None]})
    return SimpleNamespace(sigs=sigs, store=store, memo={}, focus=None,
                           forked_jobs=lambda items, least: jobs)


def test_memory_follows_the_images_not_the_pairs(tmp_path: Path) -> None:
    run = _run(tmp_path)
    rng = np.random.default_rng(0)
    i = rng.integers(0, N, 600)
    j = (i + 1 + rng.integers(0, N - 1, 600)) % N
    flipped = rng.random(600) < 0.5
    tracemalloc.start()
    try:
        out = hires_levels.scores(run, i, j, flipped)  # type: ignore[arg-type]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.isfinite(out).all()
    # A square per pair would be 600 x 96 x 96 float32 (22 MB) for each side, and the high pass makes several (138 MB
    # in all, measured); by chunks it is the 32 px alignment of one chunk that peaks.
    assert peak < 64 * 2**20, f"{peak / 2**20:.0f} MB"


def test_a_pair_is_scored_once_per_run(tmp_path: Path) -> None:
    run = _run(tmp_path)
    i, j = np.array([0, 1, 2, 3]), np.array([5, 6, 7, 8])
    flipped = np.array([False, True, False, False])
    first = hires_levels.scores(run, i, j, flipped)  # type: ignore[arg-type]
    assert np.isfinite(first).all()
    # The squares gone from the store: a pair asked again (either way round) is answered from the run.
    run.store.conn.execute("DELETE FROM signatures")
    again = hires_levels.scores(run, j, i, flipped, ["identity"] * 4)  # type: ignore[arg-type]
    np.testing.assert_array_equal(again, first)
    # A pair not scored yet is not in the memo: without its squares it has no fine evidence.
    assert np.isnan(hires_levels.scores(run, np.array([0]), np.array([9]), np.array([False]))).all()  # type: ignore[arg-type]


def test_workers_score_every_pair_as_the_driver_does(tmp_path: Path) -> None:
    # Chunks of pairs scored in two forked workers come back in order, score for score.
    rng = np.random.default_rng(1)
    n = 3 * hires_levels.PAIR_CHUNK + 5  # chunks split unevenly between the workers
    i = rng.integers(0, N, n)
    j = (i + 1 + rng.integers(0, N - 1, n)) % N
    flipped = rng.random(n) < 0.5
    turned = [("identity", "rot90", "hflip")[k % 3] for k in range(n)]
    here = hires_levels.scores(_run(tmp_path / "here"), i, j, flipped, turned)  # type: ignore[arg-type]
    forked = hires_levels.scores(_run(tmp_path / "forked", jobs=2), i, j, flipped, turned)  # type: ignore[arg-type]
    assert np.isfinite(here).sum() > n // 2
    np.testing.assert_array_equal(forked, here)
