"""The field benchmark's own arithmetic: provenance from names, links, recall (benchmarks/field*.py)."""

from __future__ import annotations

import datetime
import importlib
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def field():
    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module("field"), importlib.import_module("field_truth"), \
            importlib.import_module("field_sources")
    finally:
        sys.path.remove(str(BENCH))


def test_roboflow_source_and_phone_edits(field):
    _, truth, _ = field
    assert truth.source_of("train/IMG_2447_JPG.rf.0123456789abcdef0123456789abcdef.jpg") == "IMG_2447"
    assert truth.source_of("test/IMG_E2447_JPG.rf.fedcba9876543210fedcba9876543210.jpg") == "IMG_2447"
    # Two uploads whose names differ in case are two pictures (leprosy: two patients, by eye).
    assert (truth.source_of("ttest/leprosy_---_210823_0_jpg.rf.0123456789abcdef0123456789abcdef.jpg")
            != truth.source_of("ttrain/Leprosy_---_210823_0_jpg.rf.0123456789abcdef0123456789abcdef.jpg"))
    assert truth.source_of("valid/9_2_png.rf.690fd0fff9f91b3d1da834be9dbffae7.jpg") == "9_2"
    assert truth.source_of("train/ants/0013035.jpg") == "0013035"


def test_capture_times(field):
    _, truth, _ = field
    assert truth.captured("a/20220709_000708_jpg.rf.x.jpg") == datetime.datetime(2022, 7, 9, 0, 7, 8)
    assert truth.captured("IMG_20211008_091906533_HDR_jpg.rf.y.jpg") == datetime.datetime(2021, 10, 8, 9, 19, 6)
    assert truth.captured("train/ants/0013035.jpg") is None
    assert truth.captured("x/20221399_000000.jpg") is None  # no 13th month


def test_partners_cross_splits_only(field):
    _, truth, _ = field
    h = "0123456789abcdef0123456789abcdef"
    files = {f"train/IMG_2447_JPG.rf.{h}.jpg": "train", f"test/IMG_E2447_JPG.rf.{h[::-1]}.jpg": "test",
             f"train/IMG_2448_JPG.rf.{h}.jpg": "train",
             "train/20220709_000700.jpg": "train", "test/20220709_000708.jpg": "test",
             "test/20220709_000730.jpg": "test"}
    t = truth.build(files)
    assert t.copies[f"test/IMG_E2447_JPG.rf.{h[::-1]}.jpg"] == {f"train/IMG_2447_JPG.rf.{h}.jpg"}
    assert f"train/IMG_2448_JPG.rf.{h}.jpg" not in t.copies
    assert t.bursts["test/20220709_000708.jpg"] == {"train/20220709_000700.jpg"}
    assert "test/20220709_000730.jpg" not in t.bursts  # 30 s away
    assert t.judge("train/20220709_000700.jpg", "test/20220709_000708.jpg") == "burst"
    assert t.judge("train/20220709_000700.jpg", "test/20220709_000730.jpg") == "unknown"


def _report(*findings):
    return {"findings": [{"kind": k, "severity": s, "members": [
        {"path": p, "split": p.split("/")[0], "link": None if n == 0 else
         {"to": ms[0], "detector": "phash", "value": 2.0, "orientation": "identity", "weak": False}}
        for n, p in enumerate(ms)]} for k, s, ms in findings]}


def test_error_links_and_recall(field):
    bench, _, _ = field
    report = _report(("near-duplicate", "error", ["train/a.jpg", "test/b.jpg"]),
                     ("same-scene", "warning", ["train/c.jpg", "test/d.jpg"]),
                     ("group-split", "error", ["train/e.jpg", "test/f.jpg"]))
    links = bench.error_links(report)
    assert [(l["a"], l["b"]) for l in links] == [("test/b.jpg", "train/a.jpg")]
    partners = {"test/b.jpg": frozenset({"train/a.jpg"}), "train/a.jpg": frozenset({"test/b.jpg"}),
                "test/d.jpg": frozenset({"train/c.jpg"}), "test/f.jpg": frozenset({"train/e.jpg"})}
    splits = {p: p.split("/")[0] for p in ["train/a.jpg", "test/b.jpg", "test/d.jpg", "test/f.jpg"]}
    # Held-out files only; a group-split finding is not pixel evidence.
    assert bench.recall(report, partners, splits) == {"known": 3, "error": 1, "any": 2}


def test_weighted_precision(field):
    bench, _, _ = field
    links = [{"a": f"x{n}", "b": f"y{n}", "detector": "phash" if n < 8 else "aligned"} for n in range(10)]
    sample = [links[0], links[8], links[9]]
    judged = {frozenset(("x0", "y0")): "same", frozenset(("x8", "y8")): "different",
              frozenset(("x9", "y9")): "subject"}
    assert bench.weighted_precision(links, sample, judged) == pytest.approx((8 * 1.0 + 2 * 0.5) / 10, abs=1e-3)
    assert bench.weighted_precision(links, sample[:1], judged) is None  # aligned unjudged: no estimate


def test_deeppcb_lists_become_a_manifest(field, tmp_path):
    _, _, sources = field
    for stem in ("g/1/100", "g/1/101"):
        for suffix in ("_temp", "_test"):
            (tmp_path / f"{stem}{suffix}.jpg").parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / f"{stem}{suffix}.jpg").write_bytes(b"")
    (tmp_path / "trainval.txt").write_text("g/1/100.jpg g/1_not/100.txt\n")
    (tmp_path / "test.txt").write_text("g/1/101.jpg g/1_not/101.txt\n")
    sources.deeppcb_manifest(tmp_path)
    assert (tmp_path / "splits.csv").read_text().split() == [
        "path,split", "g/1/100_temp.jpg,train", "g/1/100_test.jpg,train", "g/1/101_temp.jpg,test",
        "g/1/101_test.jpg,test"]


def test_the_largest_finding_counts_what_a_note_and_a_group_stand_for(field):
    """A note lists three members a split for all the images it folds, a group-split a few files of
    its group: their sizes are said apart, never taken for the largest finding of linked files."""
    bench, _, _ = field
    member = {"path": "x", "split": "train"}
    report = {"findings": [
        {"kind": "near-duplicate", "severity": "error", "members": [member] * 4, "split_pair": "train~test"},
        {"kind": "shared-scene", "severity": "warning", "members": [member] * 9, "split_pair": "",
         "message": "93 images (train 79, val 8, test 6) are alike"},
        {"kind": "group-split", "severity": "error", "members": [member] * 6, "split_pair": "",
         "evidence": {"train": 867.0, "val": 69.0}},
    ]}
    big = bench.largest(report)
    assert (big["members"], big["kind"], big["note_images"], big["group_files"]) == (4, "near-duplicate", 93, 936)
    assert bench._largest_text(big) == "4 (near-duplicate/error); note of 93 images; group of 936 files"


def test_a_frame_counter_names_no_picture(field):
    # Every video of an export numbers its frames from 0: ``frame_00005`` of two videos are two scenes
    # (cones), while a phone's counter and its edit are one photograph.
    _, truth, _ = field
    h = "0123456789abcdef0123456789abcdef"
    files = {f"train/frame_00005_png.rf.{h}.jpg": "train", f"test/frame_00005_png.rf.{h[::-1]}.jpg": "test",
             f"train/IMG_2447_JPG.rf.{h}.jpg": "train", f"test/IMG_2447_JPG.rf.{h[::-1]}.jpg": "test"}
    t = truth.build(files)
    assert f"test/frame_00005_png.rf.{h[::-1]}.jpg" not in t.copies
    assert t.copies[f"test/IMG_2447_JPG.rf.{h[::-1]}.jpg"] == {f"train/IMG_2447_JPG.rf.{h}.jpg"}
    assert t.judge(f"test/frame_00005_png.rf.{h[::-1]}.jpg", f"train/frame_00005_png.rf.{h}.jpg") == "unknown"


def test_a_download_default_name_names_no_picture(field):
    # uav: frame grabs of two videos are both ``youtube-0`` ... ``youtube-105``; YouTube names every
    # thumbnail ``maxresdefault``.  A source name that is a real upload's name still names its picture.
    _, truth, _ = field
    h = "0123456789abcdef0123456789abcdef"
    files = {f"train/youtube-12_jpg.rf.{h}.jpg": "train", f"test/youtube-12_jpg.rf.{h[::-1]}.jpg": "test",
             f"train/maxresdefault-jpg-2-_jpg.rf.{h}.jpg": "train",
             f"test/maxresdefault-jpg-2-_jpg.rf.{h[::-1]}.jpg": "test",
             f"train/youtube_tank_jpg.rf.{h}.jpg": "train", f"test/youtube_tank_jpg.rf.{h[::-1]}.jpg": "test"}
    t = truth.build(files)
    assert f"test/youtube-12_jpg.rf.{h[::-1]}.jpg" not in t.copies
    assert f"test/maxresdefault-jpg-2-_jpg.rf.{h[::-1]}.jpg" not in t.copies
    assert t.copies[f"test/youtube_tank_jpg.rf.{h[::-1]}.jpg"] == {f"train/youtube_tank_jpg.rf.{h}.jpg"}


def test_an_isic_number_names_one_picture(field):
    # isic: one dermoscopic picture filed under two classes, in train and in test; a browser's second
    # download ``(1)`` is the same picture.  Other numbers are other pictures (of the same lesion at most).
    _, truth, _ = field
    files = {"Train/nevus/ISIC_0010512.jpg": "train", "Test/actinic keratosis/ISIC_0010512.jpg": "test",
             "Train/bcc/ISIC_0025509(1).jpg": "train", "Test/bcc/ISIC_0025509.jpg": "test",
             "Train/bcc/ISIC_0024443.jpg": "train", "Test/bcc/ISIC_0024444.jpg": "test"}
    t = truth.build(files)
    assert t.copies["Test/actinic keratosis/ISIC_0010512.jpg"] == {"Train/nevus/ISIC_0010512.jpg"}
    assert t.copies["Test/bcc/ISIC_0025509.jpg"] == {"Train/bcc/ISIC_0025509(1).jpg"}
    assert "Test/bcc/ISIC_0024444.jpg" not in t.copies
    assert t.judge("Train/nevus/ISIC_0010512.jpg", "Test/actinic keratosis/ISIC_0010512.jpg") == "same-source"


def test_an_augmented_copy_names_its_source_in_its_class_folder(field):
    # eyes: ``_49_2405371`` and ``_49_7277741`` are two versions of source 49 of one class folder;
    # source 49 of another folder is another picture.
    _, truth, _ = field
    files = {"cataract/_49_2405371.jpg": "train", "cataract/_49_7277741.jpg": "test",
             "glaucoma/_49_1111111.jpg": "test"}
    t = truth.build(files)
    assert t.copies["cataract/_49_7277741.jpg"] == {"cataract/_49_2405371.jpg"}
    assert "glaucoma/_49_1111111.jpg" not in t.copies
