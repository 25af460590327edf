"""COCO split files as Roboflow exports them: ``<split>/_annotations.coco.json`` (probe 2, cavity).

The split came from the file's stem only, so Roboflow's ``_annotations.coco.json`` was no
split file, a user's ``train/_train_anno.json`` became a policy of one split, and ``check``
passed on 21 copies between train and valid.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pytest_leakcheck import EXIT_LEAKS
from pytest_leakcheck.init import recognise
from pytest_leakcheck.testing import photo, save

from ..conftest import write_policy

SMALL = (64, 48)


def _coco(path: Path, names: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    images = [{"id": i, "file_name": n, "width": 64, "height": 48} for i, n in enumerate(names)]
    path.write_text(json.dumps({"images": images, "annotations": [], "categories": []}))


def _roboflow(root: Path) -> None:
    """train/ (4), valid/ (2), test/ (1), each with ``_annotations.coco.json`` naming its images by bare
    name; train/ also holds a user's ``_train_anno.json`` of 3 of them; valid/v1 is a copy of train/t0."""
    layout = {"train": [f"t{i}.jpg" for i in range(4)], "valid": ["v0.jpg", "v1.jpg"], "test": ["e0.jpg"]}
    seed = 0
    for folder, names in layout.items():
        for name in names:
            save(photo(seed, SMALL), root / folder / name, quality=92)
            seed += 1
        _coco(root / folder / "_annotations.coco.json", names)
    shutil.copyfile(root / "train/t0.jpg", root / "valid/v1.jpg")
    _coco(root / "train/_train_anno.json", layout["train"][:3])


def test_roboflow_coco_export_gives_every_split_and_the_copy_fails(tmp_path: Path, run_cli) -> None:
    _roboflow(tmp_path)
    layout = recognise.detect(tmp_path)
    assert layout.splits_yaml == ('splits:\n  coco:\n'
                                  '    train: {file: "train/_annotations.coco.json", images: "train"}\n'
                                  '    val: {file: "valid/_annotations.coco.json", images: "valid"}\n'
                                  '    test: {file: "test/_annotations.coco.json", images: "test"}\n')
    found = "\n".join(layout.found)
    # The user's subset is named, not silently dropped, and not taken for the split.
    assert "train/_train_anno.json also lists train images (3): not used" in found
    write_policy(tmp_path, recognise.policy_text(layout))
    code, out, _ = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "-j", "1", "--format", "json")
    assert code == EXIT_LEAKS
    copies = [{m["path"] for m in f["members"]} for f in json.loads(out)["findings"] if f["kind"] == "identical-file"]
    assert copies == [{"train/t0.jpg", "valid/v1.jpg"}]


def test_a_split_files_images_are_looked_for_beside_it_first(tmp_path: Path) -> None:
    """A darknet export keeps copies of test/'s images in obj/: test/_annotations.coco.json names test/'s own."""
    (tmp_path / "obj").mkdir()
    for i in range(3):
        save(photo(i, SMALL), tmp_path / f"test/e{i}.jpg")
        shutil.copyfile(tmp_path / f"test/e{i}.jpg", tmp_path / f"obj/e{i}.jpg")
        save(photo(10 + i, SMALL), tmp_path / f"train/t{i}.jpg")
    _coco(tmp_path / "test/_annotations.coco.json", [f"e{i}.jpg" for i in range(3)])
    _coco(tmp_path / "train/_annotations.coco.json", [f"t{i}.jpg" for i in range(3)])
    layout = recognise.detect(tmp_path)
    assert 'test: {file: "test/_annotations.coco.json", images: "test"}' in layout.splits_yaml


def test_the_folder_gives_the_split_only_below_root(tmp_path: Path) -> None:
    """A stem without a split word takes its folder's, never root's own name (init run inside `valid/`)."""
    from pytest_leakcheck.sources.coco import json_split

    root = tmp_path / "valid"
    root.mkdir()
    assert json_split(root / "_annotations.coco.json", root) is None
    assert json_split(root / "test" / "_annotations.coco.json", root) == "test"
    assert json_split(root / "test" / "instances_train2017.json", root) == "train"  # the stem first
