"""A hash hit that aligned cannot confirm is said, as a warning, when the hash itself is near certain.

Held out: 32 px traffic signs (GTSRB), whose upside-down impostors align as well as copies
(symmetric signs), set aligned's levels at 0.97; adjacent frames of one sign track at pHash 2
then aligned below the warning level and were dropped, leaving no trace in the report.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pytest_leakcheck import check
from pytest_leakcheck.detectors.aligned import hashed, levels
from pytest_leakcheck.testing import jpeg_quality, photo, save


def _unreachable(run: object, cal: object, ij: np.ndarray) -> hashed.Held:
    top = np.full(len(ij), 1.5)
    return hashed.Held(top, top, top)


def _links(report: object) -> dict[frozenset[str], str]:
    out = {}
    for f in report.findings:  # type: ignore[attr-defined]
        if f.kind == "near-duplicate":
            paths = [m.path for m in f.members]
            for a in paths:
                for b in paths:
                    if a < b:
                        out[frozenset((a, b))] = f.severity
    return out


def test_a_near_certain_hash_hit_aligned_cannot_confirm_is_a_warning(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    img = photo(7)
    save(img, tmp_path / "train/a.jpg", quality=92)
    save(jpeg_quality(img, 60), tmp_path / "test/a.jpg", quality=92)
    for k in range(12):
        save(photo(100 + k), tmp_path / f"{'test' if k % 4 == 0 else 'train'}/o{k}.jpg", quality=92)
    (tmp_path / "leakcheck.yaml").write_text("version: 1\nsplits: {train: [train/**], test: [test/**]}\n"
                                             "detectors: {same_scene: {severity: off}}\n")
    assert _links(check(tmp_path / "leakcheck.yaml", use_cache=False, jobs=1)) == {
        frozenset(("train/a.jpg", "test/a.jpg")): "error"}
    # Aligned levels no pair reaches, and aligned's own matches left out: the hash hit alone remains.
    monkeypatch.setattr(hashed, "held_levels", _unreachable)
    find = levels.find
    monkeypatch.setattr(levels, "find", lambda run, settings: (find(run, settings), [])[1])
    report = check(tmp_path / "leakcheck.yaml", use_cache=False, jobs=1)
    assert _links(report) == {frozenset(("train/a.jpg", "test/a.jpg")): "warning"}
    (finding,) = [f for f in report.findings if f.kind == "near-duplicate"]
    assert any(m.link is not None and m.link.detector == "phash" for m in finding.members)
