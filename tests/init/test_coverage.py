"""`leakcheck init` does not take, or write without a warning, a policy that leaves splits out (probe 2).

The first source that recognised anything used to win: a COCO file of one split gave a
policy of that split, the split folders beside it were never looked at, and `check`
passed comparing nothing across splits.
"""

from __future__ import annotations

import json
from pathlib import Path

from pytest_leakcheck.init import recognise
from pytest_leakcheck.testing import photo, save

SMALL = (48, 32)


def _images(root: Path, folder: str, n: int, seed: int = 0) -> list[str]:
    names = [f"{folder.replace('/', '_')}{k}.jpg" for k in range(n)]
    for k, name in enumerate(names):
        save(photo(seed + k, SMALL), root / folder / name)
    return names


def test_a_coco_file_of_one_split_gives_way_to_the_split_folders(tmp_path: Path) -> None:
    """`annotations/instances_test.json` names test/ alone; train/ and val/ hold the rest."""
    _images(tmp_path, "train", 4)
    _images(tmp_path, "val", 2, 10)
    names = _images(tmp_path, "test", 2, 20)
    (tmp_path / "annotations").mkdir()
    (tmp_path / "annotations/instances_test.json").write_text(
        json.dumps({"images": [{"id": k, "file_name": n} for k, n in enumerate(names)]}))
    layout = recognise.detect(tmp_path)
    assert layout.splits_yaml == 'splits:\n  train: ["train/**"]\n  val: ["val/**"]\n  test: ["test/**"]\n'
    assert ("the COCO files assign test 2, leaving train/ (4), val/ (2) out; the split folders "
            "assign train 4, val 2, test 2: those are used") in layout.warnings
    # The reason is written into the policy too, where a reviewer reads it.
    assert "#   WARNING: the COCO files assign test 2" in recognise.policy_text(layout)


def test_one_split_and_most_images_in_none_are_warned_about(tmp_path: Path) -> None:
    """A darknet export without usable lists: test/ is the only split folder, obj/ holds the data."""
    _images(tmp_path, "obj", 8)
    _images(tmp_path, "test", 2, 20)
    layout = recognise.detect(tmp_path)
    assert layout.splits_yaml == 'splits:\n  test: ["test/**"]\n'
    assert ("only split test holds images (2): no copy across splits will be searched, only copies within it; "
            "if the data has other splits, add them to `splits:`") in layout.warnings
    assert ("8 of 10 images are in no split (obj/ 8): they are compared with nothing; put them in a split, "
            "or in `ignore:` if they are not data") in layout.warnings
    assert "#   WARNING: only split test holds images (2)" in recognise.policy_text(layout)


def test_a_table_keeps_its_splits_and_a_split_folder_it_leaves_out_is_named(tmp_path: Path) -> None:
    """A table of train and test beats the one split of a stray valid/ folder, which init names."""
    names = _images(tmp_path, "images", 6)
    _images(tmp_path, "valid", 3, 30)
    rows = ["file,split", *(f"images/{n},{'train' if k < 4 else 'test'}" for k, n in enumerate(names))]
    (tmp_path / "splits.csv").write_text("\n".join(rows) + "\n")
    layout = recognise.detect(tmp_path)
    assert "table:" in layout.splits_yaml
    assert ("folder valid/ is named like a split and holds 3 images, none of them in a split of this policy: add "
            "it to `splits:` (docs/sources.md), or to `ignore:` if it is not data") in layout.warnings


def test_a_layout_that_covers_the_data_has_no_coverage_warning(tmp_path: Path) -> None:
    _images(tmp_path, "train", 3)
    _images(tmp_path, "test", 2, 10)
    layout = recognise.detect(tmp_path)
    assert layout.splits_yaml == 'splits:\n  train: ["train/**"]\n  test: ["test/**"]\n'
    assert not [w for w in layout.warnings if "split" in w]
