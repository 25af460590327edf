"""One home for the store's keys: every input a cached result depends on changes its key, nothing else does."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from pytest_leakcheck import detectors
from pytest_leakcheck.detectors.aligned import pairs, state
from pytest_leakcheck.detectors.same_scene import find
from pytest_leakcheck.detectors.same_scene import DETECTOR as SAME_SCENE
from pytest_leakcheck.detectors.aligned.levels import _key
from pytest_leakcheck.detectors.aligned.families import DESC_FAMILY
from pytest_leakcheck.pipeline.matches import _matches_key
from pytest_leakcheck.pipeline.signatures import fingerprint
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.store import keys

from ..conftest import write_policy

BASE = """\
version: 1
splits:
  train: [train/**]
  test: [test/**]
augmentations: [hflip]
"""

#: Policy changes that change what some family computes: the signature snapshot and the
#: CI fingerprint must both change.
FAMILY_CHANGES = {
    "phash bits": BASE + "detectors:\n  phash: {bits: 256}\n",
    "phash kind": BASE + "detectors:\n  phash: {kind: dhash}\n",
    "thumbnail size": BASE + "detectors:\n  thumbnail: {size: 24}\n",
    "orientations": BASE.replace("[hflip]", "[hflip, rot90]"),
    "a detector's family off": BASE + "detectors:\n  aligned: {severity: off}\n",
    "a detector's family on": BASE + "detectors:\n  dhash: {severity: error}\n",
}
#: Changes that leave every family as it is but change which matches are found.
MATCH_CHANGES = {
    "phash distance": BASE + "detectors:\n  phash: {max_distance: 6}\n",
    "thumbnail cosine": BASE + "detectors:\n  thumbnail: {min_cosine: 0.9}\n",
    "within split": BASE + "pairs: {within_split: 'off'}\n",
}
#: Changes that change the aligned model or its pairs.
ALIGNED_CHANGES = {
    "candidates": BASE + "detectors:\n  aligned: {candidates: 4}\n",
    "warning rate": BASE + "detectors:\n  aligned: {false_alarms_per_10k: 9}\n",
    "error rate": BASE + "detectors:\n  aligned: {error_false_alarms_per_10k: 1}\n",
    "no mirror": BASE.replace("[hflip]", "[]"),
    "within split": BASE + "pairs: {within_split: 'off'}\n",
}

#: Changes that change same-scene's stored levels and points (and its matches).
SCENE_CHANGES = {
    "candidates": BASE + "detectors:\n  same_scene: {candidates: 6}\n",
    "warning rate": BASE + "detectors:\n  same_scene: {false_alarms_per_10k: 9}\n",
    "error rate": BASE + "detectors:\n  same_scene: {error_false_alarms_per_10k: 1}\n",
    "floor": BASE + "detectors:\n  same_scene: {min_inliers: 14}\n",
    "severity": BASE + "detectors:\n  same_scene: {severity: error}\n",
    "within split": BASE + "pairs: {within_split: 'off'}\n",
}


def _keys(tmp_path: Path, text: str) -> dict[str, str]:
    policy = load(write_policy(tmp_path, text))
    fams = detectors.families(policy)
    enabled = [(d, s) for d, s in detectors.enabled(policy) if d.incremental]
    snap = keys.signatures(fams, policy.files.max_pixels)
    comparisons = list(policy.pairs)
    if policy.within_split != "off":
        comparisons += [("train", "train"), ("test", "test")]
    plan = pairs.plan({}, comparisons, [], policy.detectors.aligned.candidates,
                             "hflip" in policy.orientations)
    scene = policy.detectors.of(SAME_SCENE)
    return {"signatures": snap, "fingerprint": fingerprint(policy), "matches": _matches_key(policy, enabled, snap),
            "aligned": _key(policy.detectors.aligned, plan),
            "scene levels": find.store_key("calibration", scene, comparisons),
            "scene points": find.store_key("points", scene, comparisons)}


@pytest.mark.parametrize("change", sorted(FAMILY_CHANGES))
def test_a_changed_family_changes_the_signature_keys(tmp_path: Path, change: str) -> None:
    base, other = _keys(tmp_path, BASE), _keys(tmp_path, FAMILY_CHANGES[change])
    assert other["signatures"] != base["signatures"]
    assert other["fingerprint"] != base["fingerprint"]
    assert other["matches"] != base["matches"]  # matches between files depend on their signatures


@pytest.mark.parametrize("change", sorted(MATCH_CHANGES))
def test_a_changed_search_changes_the_match_key_only(tmp_path: Path, change: str) -> None:
    base, other = _keys(tmp_path, BASE), _keys(tmp_path, MATCH_CHANGES[change])
    assert other["matches"] != base["matches"]
    assert other["signatures"] == base["signatures"] and other["fingerprint"] == base["fingerprint"]


@pytest.mark.parametrize("change", sorted(ALIGNED_CHANGES))
def test_a_changed_aligned_setting_changes_its_key(tmp_path: Path, change: str) -> None:
    assert _keys(tmp_path, ALIGNED_CHANGES[change])["aligned"] != _keys(tmp_path, BASE)["aligned"]


@pytest.mark.parametrize("change", sorted(SCENE_CHANGES))
def test_a_changed_same_scene_setting_changes_its_keys(tmp_path: Path, change: str) -> None:
    base, other = _keys(tmp_path, BASE), _keys(tmp_path, SCENE_CHANGES[change])
    assert other["scene levels"] != base["scene levels"] and other["scene points"] != base["scene points"]
    assert other["scene levels"] != other["scene points"]
    if change != "severity":  # warning or error: the same matches, flagged differently
        assert other["matches"] != base["matches"]


def test_the_pixel_limit_changes_the_snapshot_and_error_keys(tmp_path: Path) -> None:
    other = _keys(tmp_path, BASE + "files: {max_pixels: 1000000}\n")
    assert other["signatures"] != _keys(tmp_path, BASE)["signatures"]
    assert keys.error_params("path", 10) != keys.error_params("path", 11)


def test_every_family_parameter_reaches_every_key_built_on_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever a family's fingerprint holds (sizes, kind, decode path, its version), a change to it
    changes the snapshot key, the fingerprint and, for aligned's descriptors, the aligned key."""
    policy = load(write_policy(tmp_path, BASE))
    fams = detectors.families(policy)
    assert DESC_FAMILY in fams
    base_snap = keys.signatures(fams, 100)
    base_fpr = keys.fingerprint(fams, "decode", "pixels")
    plan = pairs.plan({}, [("train", "test")], [], 8, True)
    for n, fam in enumerate(fams):
        changed = [*fams]
        changed[n] = dataclasses.replace(fam, params=fam.params + ";v-next")
        assert keys.signatures(changed, 100) != base_snap, fam.name
        assert keys.fingerprint(changed, "decode", "pixels") != base_fpr, fam.name
    assert keys.fingerprint(fams, "decode-next", "pixels") != base_fpr
    assert keys.fingerprint(fams, "decode", "pixels-next") != base_fpr
    scene = policy.detectors.of(SAME_SCENE)
    before = find.store_key("calibration", scene, [("train", "test")])
    with monkeypatch.context() as m:
        m.setattr(find, "FAMILY", dataclasses.replace(find.FAMILY, params=find.FAMILY.params + ";v-next"))
        assert find.store_key("calibration", scene, [("train", "test")]) != before
    bumped = dataclasses.replace(DESC_FAMILY, params=DESC_FAMILY.params + ";v-next")
    assert (state.store_key(policy.detectors.aligned, True, plan.targets, bumped)
            != state.store_key(policy.detectors.aligned, True, plan.targets, DESC_FAMILY))


def test_versions_reach_their_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = _keys(tmp_path, BASE)
    for module, name, which in ((keys, "SNAPSHOT_VERSION", "signatures"), (keys, "MATCHES_VERSION", "matches"),
                                (state, "STORE_VERSION", "aligned"), (find, "STORE_VERSION", "scene levels"),
                                (find, "STORE_VERSION", "scene points"), (find, "STORE_VERSION", "matches")):
        with monkeypatch.context() as m:
            m.setattr(module, name, getattr(module, name) + "-next")
            assert _keys(tmp_path, BASE)[which] != base[which], name
    with monkeypatch.context() as m:
        m.setattr(keys, "DIMS", ("dims", "v-next"))
        assert _keys(tmp_path, BASE)["fingerprint"] != base["fingerprint"]


def test_keys_are_stable_and_one_style(tmp_path: Path) -> None:
    """The same policy twice gives the same keys (no process-salted hash), each ``kind:hex`` or hex."""
    first, again = _keys(tmp_path, BASE), _keys(tmp_path, BASE)
    assert first == again
    assert re.fullmatch(r"signatures:[0-9a-f]{24}", first["signatures"])
    assert re.fullmatch(r"matches:[0-9a-f]{24}", first["matches"])
    assert re.fullmatch(r"[0-9a-f]{24}", first["aligned"])
    assert re.fullmatch(r"same-scene-calibration:[0-9a-f]{24}", first["scene levels"])
    assert re.fullmatch(r"[0-9a-f]{16}", first["fingerprint"])
    # Comments and key order in the policy are not parameters.
    assert _keys(tmp_path, "# a comment\n" + BASE) == first
