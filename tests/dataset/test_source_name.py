"""The `source_name: roboflow` group rule: a Roboflow export's source photograph is the group (issue 37)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_leakcheck.dataset import groups, inventory
from pytest_leakcheck.errors import PolicyError
from pytest_leakcheck.files import exportnames
from pytest_leakcheck.policy.load import load

from ..conftest import write_policy

H = "3f" * 16
FILES = (
    f"train/IMG_2447_jpg.rf.{H}.jpg",
    f"train/IMG_2447_jpg.rf.{'4a' * 16}.jpg",      # an augmented copy: same source
    f"test/IMG_E2447_jpg.rf.{H}.jpg",             # the phone's edit of the same photo
    f"train/25_jpg.rf.{H}.jpg",                   # bare numbers: reused by numbered uploads
    f"test/25_jpg.rf.{'4a' * 16}.jpg",
    f"train/20220709_000708_jpg.rf.{H}.jpg",      # a capture time to the second: one photo
    f"test/photo_12.rf.{H}.jpg",                  # uploaded without an extension
    "test/plain.jpg",
)


def _inventory(root: Path, rules: str) -> inventory.Inventory:
    for rel in FILES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).touch()
    text = f"version: 1\nsplits: {{train: [train/**], test: [test/**]}}\ngroups:\n{rules}ungrouped: own-group\n"
    return groups.resolve(inventory.scan(load(write_policy(root, text))))


def test_source_names_group_copies_and_edits_never_bare_numbers(tmp_path: Path) -> None:
    inv = _inventory(tmp_path, "  - source_name: roboflow\n")
    by_path = {r.path: r.group for r in inv.records}
    assert by_path[FILES[0]] == by_path[FILES[1]] == by_path[FILES[2]] == "IMG_2447"
    assert by_path[FILES[3]] is None and by_path[FILES[4]] is None
    assert by_path[FILES[5]] == "20220709_000708"
    assert by_path[FILES[6]] == "photo_12" and by_path["test/plain.jpg"] is None
    split_groups = [f.message for f in groups.findings(inv) if f.kind == "group-split"]
    assert len(split_groups) == 1 and "IMG_2447" in split_groups[0]


def test_a_later_rule_fills_in_what_source_names_leave(tmp_path: Path) -> None:
    inv = _inventory(tmp_path, "  - source_name: roboflow\n  - regex: '(?P<group>plain)'\n")
    assert {r.path: r.group for r in inv.records}["test/plain.jpg"] == "plain"


def test_an_unknown_tool_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(PolicyError) as err:
        _inventory(tmp_path, "  - source_name: roboflw\n")
    assert "groups.0.source_name" in str(err.value) and "roboflow" in str(err.value)


@pytest.mark.parametrize("name, source", [
    (f"a/b/IMG_E0012_JPG.rf.{H}.jpg", "IMG_0012"),
    (f"IMG_20211008_100148032_HDR_jpg.rf.{H}.jpg", "IMG_20211008_100148032_HDR"),
    (f"9_2_png.rf.{H}.jpg", None),
    (f"26.rf.{H}.jpg", None),
    # An upload converted before export keeps its extension: 11.PNG is the number 11, no id.
    (f"train/11_PNG_jpg.rf.{H}.jpg", None),
    # Otherwise the inner extension stays: image_18.png and image_18.jpg were two files of the source
    # dataset (two different scanned pages in a held-out export), not one picture.
    (f"Screen-Shot-2020-05-01_png_jpg.rf.{H}.jpg", "Screen-Shot-2020-05-01_png"),
    (f"image_18_png_jpg.rf.{H}.jpg", "image_18_png"),
    (f"image_18_jpg.rf.{H}.jpg", "image_18"),
    (f"img_jpg.rf.{'zz' * 16}.jpg", None),  # not a hash: no Roboflow name
    # A name a site or a browser gives every file it saves names no picture: two videos' frame grabs
    # were both youtube-0 ... youtube-105 (held-out probe of zemlianin/uav, issue 37), every YouTube
    # thumbnail is maxresdefault.jpg ("maxresdefault.jpg (2)" once Windows numbers it).
    (f"youtube-35_jpg.rf.{H}.jpg", None),
    (f"maxresdefault-jpg-2-_jpg.rf.{H}.jpg", None),
    (f"mqdefault_jpg.rf.{H}.jpg", None),
    (f"download-3-_png.rf.{H}.jpg", None),
    (f"youtube-tank-convoy_jpg.rf.{H}.jpg", "youtube-tank-convoy"),  # more than the site's word: an id
    ("x.rf.jpg", None),
])
def test_roboflow_source_of_a_name(name: str, source: str | None) -> None:
    assert exportnames.roboflow_source(name) == source


def test_phone_names_fold_edits(tmp_path: Path) -> None:
    assert exportnames.source_name("phone", "train/IMG_E2447.HEIC") == "IMG_2447"
    assert exportnames.source_name("phone", "test/IMG_2447.JPG") == "IMG_2447"
    assert exportnames.source_name("phone", "test/IMG_20220723_011709.jpg") is None  # Android: a capture time
    assert exportnames.source_name("phone", "DSC_2447.JPG") is None


@pytest.mark.parametrize("name, video", [
    (f"train/legendsmenu-mp4-t-305_jpg.rf.{H}.jpg", "legendsmenu"),  # Roboflow's video import
    (f"2021-09-22-2022-05-27-mp4-t-122-5_jpg.rf.{H}.jpg", "2021-09-22-2022-05-27"),  # a video named by its time
    ("clips/clip03_mp4_000120.jpg", "clip03"),  # frames cut by hand
    ("clip03.MOV_0120.png", "clip03"),
    (f"IMG_2447_jpg.rf.{H}.jpg", None),  # a photo
    ("holiday_mp4.jpg", None),  # no frame number after the video's extension
    ("mp4_0012.jpg", None),  # no video name before it
])
def test_video_frames_name_their_video(name: str, video: str | None) -> None:
    assert exportnames.source_name("video", name) == video


def test_frames_of_one_video_in_two_splits_are_a_group_split(tmp_path: Path) -> None:
    """A recording in two splits is the leak: its frames a second apart are near copies."""
    names = [f"train/walk-mp4-t-{t}_jpg.rf.{H}.jpg" for t in range(4)] + [f"test/walk-mp4-t-9_jpg.rf.{H}.jpg"]
    names += [f"train/run-mp4-t-{t}_jpg.rf.{H}.jpg" for t in range(3)] + ["test/plain.jpg"]
    for rel in names:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).touch()
    text = ("version: 1\nsplits: {train: [train/**], test: [test/**]}\ngroups:\n  - source_name: video\n"
            "ungrouped: own-group\n")
    inv = groups.resolve(inventory.scan(load(write_policy(tmp_path, text))))
    assert {r.path: r.group for r in inv.records}[names[0]] == "walk"
    split_groups = [f for f in groups.findings(inv) if f.kind == "group-split"]
    assert [f.message.split(" has ")[0] for f in split_groups] == ["group 'walk'"]


def test_newer_exports_twenty_letter_ids_are_roboflow_names_too(tmp_path: Path) -> None:
    """Roboflow's newer exports write 20 letters and digits after ``.rf.`` (held-out probe 11: a 2,524-picture
    classification export, ``paper59_jpg.rf.wzR5NbRz2yDZECnFaw2m.jpg``): the same source, the same group,
    in the check's rule and in init's name ids; a 19-letter tail is no export name."""
    from pytest_leakcheck.init import nameids

    newer = ("train/paper59_jpg.rf.wzR5NbRz2yDZECnFaw2m.jpg", "test/paper59_jpg.rf.LJGzXwmiSwvPpLzDtMNQ.jpg")
    assert [exportnames.roboflow_source(p) for p in newer] == ["paper59", "paper59"]
    assert not exportnames.roboflow_name("train/paper59_jpg.rf.wzR5NbRz2yDZECnFaw2.jpg")
    assert nameids._ROBOFLOW.search(newer[0]).group(1) == "paper59"
    for rel in newer:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).touch()
    text = "version: 1\nsplits: {train: [train/**], test: [test/**]}\ngroups:\n  - source_name: roboflow\n"
    inv = groups.resolve(inventory.scan(load(write_policy(tmp_path, text + "ungrouped: own-group\n"))))
    assert {r.path: r.group for r in inv.records} == {newer[0]: "paper59", newer[1]: "paper59"}
