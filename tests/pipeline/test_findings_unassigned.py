"""The folded unassigned-file finding says how many of the folder's files, and advises what fits it.

Probe 2: "all 3080 files of this folder are in no split … Add the folder to `ignore:`" was said of
brush's JPEGImages/, which holds 6,160 images, half of them listed (ignoring it empties every split),
and of folders holding a split (cavity's valid/) or the training data (cones' obj/).
"""

from __future__ import annotations

from pathlib import Path

from pytest_leakcheck import check
from pytest_leakcheck.testing import photo, save

from ..conftest import write_policy

SMALL = (40, 30)


def _images(root: Path, folder: str, n: int, seed: int) -> list[str]:
    names = [f"{folder}/{folder.replace('/', '_')}{k}.jpg" for k in range(n)]
    for k, name in enumerate(names):
        save(photo(seed + k, SMALL), root / name)
    return names


def _folded(policy: Path) -> dict[str, str]:
    """Folder of the first member -> message, for each folded unassigned-file finding."""
    report = check(policy, use_cache=False, jobs=1)
    return {f.members[0].path.rsplit("/", 1)[0]: f.message for f in report.findings
            if f.kind == "unassigned-file" and len(f.members) > 1}


def test_a_half_listed_folder_is_not_all_and_not_to_be_ignored(tmp_path: Path) -> None:
    """VOC lists naming 12 of JPEGImages/' 24 images (brush)."""
    names = _images(tmp_path, "JPEGImages", 24, 0)
    (tmp_path / "train.txt").write_text("".join(n.split("/")[1].rsplit(".", 1)[0] + "\n" for n in names[:8]))
    (tmp_path / "test.txt").write_text("".join(n.split("/")[1].rsplit(".", 1)[0] + "\n" for n in names[8:12]))
    policy = write_policy(tmp_path, "version: 1\nsplits:\n  lists:\n    train: {file: train.txt, images: JPEGImages}\n"
                                    "    test: {file: test.txt, images: JPEGImages}\n")
    message = _folded(policy)["JPEGImages"]
    assert message.startswith("12 of the 24 files of this folder are in no split")
    assert "12 of its files are in a split: name the others in the split source" in message
    assert "Add the folder to `ignore:`" not in message


def test_a_folder_named_like_a_split_is_to_be_added_not_ignored(tmp_path: Path) -> None:
    _images(tmp_path, "train", 8, 0)
    _images(tmp_path, "test", 8, 20)
    _images(tmp_path, "valid", 11, 40)
    message = _folded(write_policy(tmp_path, "version: 1\nsplits: {train: [train/**], test: [test/**]}\n"))["valid"]
    assert message.startswith("all 11 files of this folder are in no split")
    assert "The folder is named like a split: add it to `splits:`" in message
    assert "Add the folder to `ignore:`" not in message


def test_a_split_folder_beside_split_lists_is_told_how_lists_take_it(tmp_path: Path) -> None:
    """held-out probe 12 (NEU-DET): the advice was "a glob", which beside `lists:` is exit 2."""
    names = _images(tmp_path, "IMAGES", 8, 0)
    _images(tmp_path, "test", 11, 40)
    (tmp_path / "train.txt").write_text("".join(n + "\n" for n in names[:6]))
    (tmp_path / "val.txt").write_text("".join(n + "\n" for n in names[6:]))
    message = _folded(write_policy(tmp_path, "version: 1\nsplits:\n  lists: {train: train.txt, val: val.txt}\n"))["test"]
    assert "The folder is named like a split: add it to `splits:`" in message
    assert "`SPLIT: {images: FOLDER}` under `lists:`" in message, message


def test_a_folder_larger_than_the_splits_is_likely_data(tmp_path: Path) -> None:
    """cones: obj/ (the training data) beside a policy of test/ and a small train/."""
    _images(tmp_path, "train", 2, 0)
    _images(tmp_path, "test", 2, 10)
    _images(tmp_path, "obj", 11, 20)
    message = _folded(write_policy(tmp_path, "version: 1\nsplits: {train: [train/**], test: [test/**]}\n"))["obj"]
    assert "It holds more images than all the splits together (4): likely data the split source misses" in message
    assert "Add the folder to `ignore:`" not in message


def test_a_stray_copy_beside_the_data_may_still_be_ignored(tmp_path: Path) -> None:
    _images(tmp_path, "train", 10, 0)
    _images(tmp_path, "test", 6, 20)
    _images(tmp_path, "backup", 11, 40)
    message = _folded(write_policy(tmp_path, "version: 1\nsplits: {train: [train/**], test: [test/**]}\n"))["backup"]
    assert message == ("all 11 files of this folder are in no split (matches no split's globs); the first 5 are "
                       "listed. A copy of the data left beside it? Add the folder to `ignore:`, or to a split")


def _unassigned(policy: Path) -> list[tuple[int, str]]:
    report = check(policy, use_cache=False, jobs=1)
    return sorted((len(f.members), f.message) for f in report.findings if f.kind == "unassigned-file")


def test_a_top_folder_of_small_folders_outside_every_split_is_one_finding(tmp_path: Path) -> None:
    """covidct (held-out probe 3): a user's training plots, five a folder in 17 folders of
    `DenseNet169/plots/`, were 85 warnings, one a plot. A top folder none of whose files is in a
    split is one finding when its folders hold more than 10 between them; a top folder holding a
    split keeps its files one a file."""
    _images(tmp_path, "train", 10, 0)
    _images(tmp_path, "test", 6, 20)
    for k, model in enumerate(("resnet", "densenet", "vit")):
        for stage in ("ssl", "fine"):
            _images(tmp_path, f"runs2/plots/{model}/{stage}", 2, 50 + 10 * k + 5 * (stage == "ssl"))
    _images(tmp_path, "train/extra", 2, 90)  # under a split's own folder, matched by no glob
    policy = write_policy(tmp_path, "version: 1\nsplits: {train: ['train/*.jpg'], test: [test/**]}\n")
    found = _unassigned(policy)
    assert [n for n, _ in found] == [1, 1, 5], found
    assert found[-1][1] == ("all 12 files under runs2/ (6 folders) are in no split (matches no split's globs), and "
                            "none of its files is in one; the first 5 are listed. Not data (a model's plots, a "
                            "copy)? Add `runs2/**` to `ignore:`, or put it in a split")
