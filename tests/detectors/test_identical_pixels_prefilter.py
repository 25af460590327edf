"""identical-pixels decodes in full only the candidates whose reduced decodes may be the same pixels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from pytest_leakcheck.dataset.inventory import scan
from pytest_leakcheck.detectors.identical_pixels import DETECTOR
from pytest_leakcheck.pipeline import signatures
from pytest_leakcheck.pipeline.matches import new_run
from pytest_leakcheck.pipeline.run import RunOptions
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.signals.decode import PIXELS_PARAMS
from pytest_leakcheck.store.db import open_store
from pytest_leakcheck.testing import photo, save

POLICY = "version: 1\nsplits:\n  train: ['train/**']\n  test: ['test/**']\n"


def _with_comment(jpeg: bytes) -> bytes:
    """The same JPEG (same coefficients, same pixels) with a comment segment: other bytes."""
    text = b"re-saved by a tool that adds a comment"
    return jpeg[:2] + b"\xff\xfe" + (len(text) + 2).to_bytes(2, "big") + text + jpeg[2:]


def _dataset(tmp_path: Path) -> Path:
    (tmp_path / "train").mkdir()
    (tmp_path / "test").mkdir()
    base = photo(5, (640, 480))
    a = save(base, tmp_path / "train" / "a.jpg", quality=92)
    (tmp_path / "test" / "same_coefficients.jpg").write_bytes(_with_comment(a.read_bytes()))
    other = save(photo(6, (640, 480)), tmp_path / "train" / "other.jpg", quality=92)
    Image.open(other).convert("RGB").save(tmp_path / "test" / "other_as_png.png")
    moved = base.copy()
    ImageDraw.Draw(moved).rectangle((300, 200, 312, 212), fill=(250, 10, 10))  # one small piece moved
    save(moved, tmp_path / "test" / "fixed_camera_shot.jpg", quality=92)
    (tmp_path / "leakcheck.yaml").write_text(POLICY)
    return tmp_path


def test_two_jpegs_whose_reduced_decodes_differ_are_not_decoded_in_full(tmp_path: Path) -> None:
    root = _dataset(tmp_path)
    policy = load(root / "leakcheck.yaml")
    inv = scan(policy)
    row = {r.path: n for n, r in enumerate(inv.records)}
    with open_store(None) as store:
        sigs = signatures.compute(inv.records, policy, store, RunOptions(jobs=1))
        hashes = sigs.arrays["hash:identity"]
        a, shot = row["train/a.jpg"], row["test/fixed_camera_shot.jpg"]
        # The precondition that lets this test fail: the hash alone makes the shot a candidate.
        assert int(np.bitwise_count(hashes[a] ^ hashes[shot]).sum()) <= 4
        run = new_run(inv, sigs, policy, store, RunOptions(jobs=1))
        found = DETECTOR.find(run, policy.detectors.identical_pixels)
        pairs = {frozenset((inv.records[m.i].path, inv.records[m.j].path)) for m in found}
        assert frozenset(("train/a.jpg", "test/same_coefficients.jpg")) in pairs
        assert frozenset(("train/other.jpg", "test/other_as_png.png")) in pairs  # a PNG is never filtered out
        assert not any("test/fixed_camera_shot.jpg" in p for p in pairs)
        decoded = store.get_signatures([sigs.digests[shot]], "pixels", PIXELS_PARAMS)
        assert decoded == {}  # never decoded in full
        assert store.get_signatures([sigs.digests[a]], "pixels", PIXELS_PARAMS)  # the copy's original was
