"""The dhash detector: a difference hash in its own module, found by the registry."""

from __future__ import annotations

from pathlib import Path

import imagehash
import numpy as np

from pytest_leakcheck import check, detectors
from pytest_leakcheck.signals.decode import Decoded
from pytest_leakcheck.detectors.dhash import DETECTOR
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.render.text import render as render_text
from pytest_leakcheck.signals.families import hash_family
from pytest_leakcheck.testing import photo, save

from ..conftest import POLICY, write_policy

DHASH_ON = POLICY + (
    "detectors:\n  phash: {severity: off}\n  thumbnail: {severity: off}\n"
    "  dhash: {severity: error, max_distance: 10}\n"
)


def test_registry_finds_dhash_and_it_is_off_by_default(tmp_path: Path) -> None:
    assert "dhash" in detectors.names()
    policy = load(write_policy(tmp_path, POLICY))
    assert policy.detectors.dhash.severity == "off"
    assert not [f for f in detectors.families(policy) if f.name.startswith("dhash:")]


def test_dhash_family_is_imagehash_dhash() -> None:
    grey = photo(3).convert("L").resize((64, 64))
    family = hash_family("dhash", 64, "identity", "dhash")
    ours = np.unpackbits(np.frombuffer(family.compute(Decoded(grey, (64, 64)), family), np.uint8))
    theirs = imagehash.dhash(grey, hash_size=8).hash.ravel()
    assert (ours.astype(bool) == theirs).all()


def test_dhash_alone_finds_a_recompressed_copy_and_no_distinct_pair(tmp_path: Path) -> None:
    for i in range(12):
        save(photo(i), tmp_path / f"train/img_{i:02d}.jpg", quality=92)
    for i in range(4):
        save(photo(100 + i), tmp_path / f"test/distinct_{i}.jpg", quality=92)
    save(photo(5), tmp_path / "test/copy.jpg", quality=40)
    write_policy(tmp_path, DHASH_ON)
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    near = [f for f in report.findings if f.kind == "near-duplicate"]
    assert [sorted(m.path for m in f.members) for f in near] == [["test/copy.jpg", "train/img_05.jpg"]]
    assert near[0].pairs[0].detector == "dhash"
    assert "dhash_distance" in near[0].evidence
    assert "dhash distance" in render_text(report)


def test_dhash_section_is_validated(tmp_path: Path) -> None:
    import pytest

    from pytest_leakcheck.errors import PolicyError

    with pytest.raises(PolicyError) as err:
        load(write_policy(tmp_path, POLICY + "detectors:\n  dhash: {max_distanse: 3}\n"))
    assert err.value.key == "detectors.dhash.max_distanse" and "max_distance" in str(err.value)
    assert DETECTOR.strength(type("M", (), {"value": 16.0})(), load(write_policy(tmp_path)).detectors.dhash) == 0.75


