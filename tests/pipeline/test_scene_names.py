"""A shared scene whose links across splits join frames named as one recording says so, and names the
group rule: frames of one clip split at random are a leak the pixel detectors fold into a note."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pytest_leakcheck.dataset import groups, inventory
from pytest_leakcheck.pipeline import findings, signatures
from pytest_leakcheck.pipeline.run import RunOptions
from pytest_leakcheck.pipeline.scenenames import RULE, recording
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.render.text import render
from pytest_leakcheck.report.model import Report
from pytest_leakcheck.search.kernels import Match
from pytest_leakcheck.store.db import open_store
from pytest_leakcheck.testing import photo, save

POLICY = "version: 1\nsplits:\n  train: [train/**]\n  test: [test/**]\n"


def _report(root: Path, name: Callable[[int], str], n: int = 40, web: int = 36,
            inliers: Callable[[int], float] = lambda apart: 60.0) -> Report:
    """``n`` photos at ``name(k)``; the first ``web`` all linked by same-scene (``inliers`` of the
    frames' distance apart): the report."""
    for k in range(n):
        save(photo(700 + k, (64, 48)), root / name(k), quality=90)
    (root / "leakcheck.yaml").write_text(POLICY)
    policy = load(root / "leakcheck.yaml")
    inv = groups.resolve(inventory.scan(policy))
    sigs = signatures.compute(inv.records, policy, open_store(None), RunOptions(jobs=1))
    row = {r.path: i for i, r in enumerate(inv.records)}
    r = [row[name(k)] for k in range(n)]
    links = [Match(r[a], r[b], "same-scene", inliers(b - a)) for a in range(web) for b in range(a + 1, web)]
    return findings.build(links, inv, sigs, policy)


def _scene_note(root: Path, name: Callable[[int], str]) -> str:
    """The shared-scene note's message."""
    (note,) = [f for f in _report(root, name).findings if f.kind == "shared-scene"]
    return note.message


def test_frames_of_one_clip_split_at_random_name_the_recording_and_the_rule(tmp_path: Path) -> None:
    """Frames ``cam1_clip1_000k`` of one clip, alternately in train and test (the PETS probe, split at
    random by frame): the note says the links join one recording and gives the rule that groups it."""
    message = _scene_note(tmp_path, lambda k: f"{'train' if k % 2 else 'test'}/cam1_clip{1 + k // 20}_{k:06d}.jpg")
    assert "named as one recording (cam1_clip1_#, cam1_clip2_#)" in message
    assert RULE in message and "docs/policy-groups.md" in message


def test_clips_of_one_camera_kept_apart_get_no_such_line(tmp_path: Path) -> None:
    """Clips of one fixed camera split by clip (``clip1/`` in train, ``clip2/`` in test): one scene across
    splits, but no link joins two frames of one recording, and the note does not say it does."""
    message = _scene_note(tmp_path, lambda k: f"{'train/clip1' if k < 20 else 'test/clip2'}/{k:06d}.jpg")
    assert "cross splits" in message and "recording" not in message


def test_one_folder_of_the_whole_dataset_is_no_recording(tmp_path: Path) -> None:
    """Every file in one folder named ``board2/0001.jpg`` (splits by folder above it): the folder names the
    dataset, not a recording, so a fixed camera's scene across splits gets no such line."""
    message = _scene_note(tmp_path, lambda k: f"{'train' if k % 2 else 'test'}/board2/{k:04d}.jpg")
    assert "cross splits" in message and "recording" not in message


def test_the_text_report_says_it_once_beside_the_summary(tmp_path: Path) -> None:
    """A note comes after every copy, past the 50 findings a text report lists: a line beside the summary
    counts the notes that join one recording across splits, and says how to see them."""
    report = _report(tmp_path / "a", lambda k: f"{'train' if k % 2 else 'test'}/seq{3 + k // 20:02d}_{k:06d}.jpg")
    (note,) = [f for f in report.findings if f.kind == "shared-scene"]
    assert note.evidence == {"recording_links": 164.0}
    text = render(report, max_findings=0)
    assert "note: 1 shared-scene warning joins files named as one recording across splits (164 links" in text
    apart = _report(tmp_path / "b", lambda k: f"{'train/clip1' if k < 20 else 'test/clip2'}/{k:06d}.jpg")
    assert "named as one recording" not in render(apart)


def test_what_a_frame_name_says_of_its_recording() -> None:
    assert recording("data/train/camel_00035.jpg") == "camel_#"
    assert recording("train/clip3/00012.jpg") == "clip3/#"
    assert recording("train/blackswan/00012.jpg") is None  # letters only: a class folder, as init reads it
    assert recording("MOT17-02/img1/000001.jpg") == "MOT17-02/#"
    assert recording("train/images/000123.jpg") is None  # a data folder, then a split folder
    assert recording("photos/IMG_0001.jpg") is None  # a camera's counter names no recording
    assert recording("train/scene.jpg") is None


HASH = "0123456789abcdef0123456789abcdef"


def test_a_roboflow_export_name_is_read_as_its_upload() -> None:
    """Roboflow renames each frame ``<upload>_<ext>.rf.<hash>.<ext>``: the upload names the recording
    (muzzle's ``30_sequence30_12``), or no export of a video would ever be named as one."""
    assert recording(f"train/30_sequence30_12_jpg.rf.{HASH}.jpg") == "30_sequence30_#"
    assert recording(f"test/images/cam1_clip2_000035_png.rf.{HASH}.jpg") == "cam1_clip2_#"
    assert recording(f"train/images/25_jpg.rf.{HASH}.jpg") is None  # a bare upload number names nothing


def _session(root: Path, name: Callable[[int], str]) -> str:
    """36 frames at ``name(k)``, all linked by same-scene, neighbours strongest: the note's message."""
    report = _report(root, name, n=36, inliers=lambda apart: 60.0 - apart)
    (note,) = [f for f in report.findings if f.kind == "shared-scene"]
    return note.message


def test_one_webcam_session_split_by_frame_says_its_neighbours_cross(tmp_path: Path) -> None:
    """One session exported whole (``opencv_frame_N``: held-out probe of stop 55, 355 frames): the
    recording is the dataset, so no group rule splits it, yet its strongest links across splits join
    frames one apart (pHash 0 by eye the same moment): the note says so, where it said nothing."""
    message = _session(tmp_path, lambda k: f"{'train' if k % 2 else 'test'}/opencv_frame_{k}_png.rf.{HASH}.jpg")
    assert "strongest links across splits join neighbouring frames of one recording" in message, message
    assert "named as one recording" not in message


def test_far_apart_frames_are_no_neighbours(tmp_path: Path) -> None:
    """The same links between frames numbered 10 apart (a shot every few seconds): no such line."""
    message = _session(tmp_path, lambda k: f"{'train' if k % 2 else 'test'}/opencv_frame_{10 * k}_png.rf.{HASH}.jpg")
    assert "cross splits" in message and "neighbouring" not in message
