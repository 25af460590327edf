"""Planted copies are found at the default policy; distinct images are not."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from PIL import Image

from pytest_leakcheck import EXIT_CLEAN, EXIT_LEAKS, check
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.render import render
from pytest_leakcheck.testing import photo, save

from ..conftest import PLANTED, expected_leaks


def _leak_pairs(report) -> set[tuple[str, str]]:
    out = set()
    for f in report.findings:
        if f.kind in ("identical-file", "identical-pixels", "near-duplicate"):
            paths = [m.path for m in f.members]
            out |= {tuple(sorted(p)) for p in itertools.combinations(paths, 2)}
    return out


@pytest.mark.slow
def test_every_planted_copy_is_found(leaky_dataset: Path) -> None:
    """Each transformed copy in test is reported together with its train original."""
    report = check(leaky_dataset / "leakcheck.yaml", use_cache=False)
    found = _leak_pairs(report)
    missing = [t for t, s in expected_leaks().items() if tuple(sorted((t, s))) not in found]
    assert missing == []
    assert report.exit_code == EXIT_LEAKS


@pytest.mark.slow
def test_no_distinct_pair_is_flagged(leaky_dataset: Path) -> None:
    """Only planted pairs appear: no finding links two distinct generated images."""
    report = check(leaky_dataset / "leakcheck.yaml", use_cache=False)
    planted = {tuple(sorted(p)) for p in expected_leaks().items()}
    extra = _leak_pairs(report) - planted
    assert extra == set()


@pytest.mark.slow
def test_identical_file_kind_and_orientation(leaky_dataset: Path) -> None:
    """The byte copy is an identical-file finding; the flipped copy names its orientation."""
    report = check(leaky_dataset / "leakcheck.yaml", use_cache=False)
    by_path = {m.path: f for f in report.findings for m in f.members}
    assert by_path["test/identical.jpg"].kind == "identical-file"
    assert by_path["test/hflip.jpg"].kind == "near-duplicate"
    assert by_path["test/hflip.jpg"].orientation == "hflip"
    assert by_path["test/rot90.jpg"].orientation in ("rot90", "rot270")


@pytest.mark.slow
def test_flip_not_found_without_augmentation(leaky_dataset: Path, make_policy) -> None:
    """`augmentations: []` searches upright copies only."""
    make_policy("version: 1\nsplits: {train: [train/**], test: [test/**]}\naugmentations: []\n")
    report = check(leaky_dataset / "leakcheck.yaml", use_cache=False)
    paths = {m.path for f in report.findings for m in f.members}
    assert "test/hflip.jpg" not in paths
    assert "test/jpeg_q40.jpg" in paths


def test_clean_dataset_exits_clean(clean_dataset: Path) -> None:
    """No leak, no finding, exit code 0."""
    report = check(clean_dataset / "leakcheck.yaml", use_cache=False)
    assert report.findings == ()
    assert report.exit_code == EXIT_CLEAN


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PLANTED))
def test_each_leak_alone_fails(leaky_dataset: Path, name: str) -> None:
    """Any one planted copy on its own is enough to fail the check."""
    for other in PLANTED:
        if other != name:
            (leaky_dataset / "test" / other).unlink()
    (leaky_dataset / "test/png_to_jpeg.jpg").unlink()
    report = check(policy=load(leaky_dataset / "leakcheck.yaml"), use_cache=False)
    assert report.exit_code == EXIT_LEAKS
    assert any(m.path == f"test/{name}" for f in report.errors for m in f.members)


@pytest.mark.slow
def test_focus_limits_findings_to_the_given_files(leaky_dataset: Path) -> None:
    """With focus, only findings touching the focus files are reported, and they are complete."""
    full = check(leaky_dataset / "leakcheck.yaml", use_cache=False)
    focused = check(leaky_dataset / "leakcheck.yaml", use_cache=False, focus=["test/hflip.jpg"])
    assert [f.id for f in focused.findings] == [
        f.id for f in full.findings if any(m.path == "test/hflip.jpg" for m in f.members)
    ]
    assert len(focused.findings) == 1


def test_rotated_copies_are_found_by_default_and_a_narrower_policy_says_what_it_skips(tmp_path: Path) -> None:
    """By default all 8 orientations are searched and every turned copy is found; with
    `augmentations: [hflip]` only the mirror is, and the summary names the rest."""
    turns = ("vflip", "rot90", "rot180", "rot270", "transpose", "transverse")
    for n, turn in enumerate(turns):
        img = photo(600 + n)
        save(img, tmp_path / f"train/orig_{turn}.jpg", quality=92)
        save(img.transpose(getattr(Image.Transpose, {
            "vflip": "FLIP_TOP_BOTTOM", "rot90": "ROTATE_90", "rot180": "ROTATE_180", "rot270": "ROTATE_270",
            "transpose": "TRANSPOSE", "transverse": "TRANSVERSE"}[turn])), tmp_path / f"test/{turn}.jpg", quality=90)
    for k in range(8):
        save(photo(650 + k), tmp_path / f"train/other_{k}.jpg", quality=92)
    head = "version: 1\nsplits: {train: [train/**], test: [test/**]}\n"
    (tmp_path / "leakcheck.yaml").write_text(head + "augmentations: [hflip]\n")
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    mirror = ["identity", "hflip"]
    # same-scene (on by default) searches no orientation: its keypoints are rotation-invariant.
    assert report.stats["checked"] == {"identical-file": [], "identical-pixels": [], "phash": mirror,
                                       "thumbnail": mirror, "aligned": mirror, "same-scene": [], "turned-copy": []}
    summary = [line for line in render(report, "text", verbose=True).splitlines()
               if line.startswith("leakcheck: details:")]
    assert len(summary) == 1
    assert "; not searched: copies after vflip/rot90/rot180/rot270/transpose/transverse" in summary[0]

    (tmp_path / "leakcheck.yaml").write_text(head)
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    assert _leak_pairs(report) == {tuple(sorted((f"test/{t}.jpg", f"train/orig_{t}.jpg"))) for t in turns}
    every = ["identity", "hflip", *turns]
    assert report.stats["checked"] == {"identical-file": [], "identical-pixels": [], "phash": every,
                                       "thumbnail": every, "aligned": mirror, "same-scene": [], "turned-copy": []}
    summary = render(report, "text", verbose=True).splitlines()
    assert any(line.startswith("leakcheck: details:") and (
        "; checked: identical-file, identical-pixels, same-scene, turned-copy, phash/thumbnail in 8 orientations, "
        "aligned in identity+hflip") in line and "not searched" not in line for line in summary)


@pytest.mark.slow
def test_the_summary_names_what_a_narrowed_policy_searched(leaky_dataset: Path, make_policy) -> None:
    """`augmentations: [rot90]` searches rot90 and its inverse; the summary says which ran."""
    make_policy("version: 1\nsplits: {train: [train/**], test: [test/**]}\naugmentations: [rot90]\n"
                "detectors:\n  dhash: {severity: warning}\n")
    report = check(leaky_dataset / "leakcheck.yaml", use_cache=False)
    assert "checked: identical-file, identical-pixels, same-scene, turned-copy, phash/thumbnail/dhash in identity+rot90+rot270" in render(
        report, "text", verbose=True)
