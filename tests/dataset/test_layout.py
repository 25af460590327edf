"""`leakcheck init` on the layouts people have, and COCO / metadata files as split sources (issue 15)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_leakcheck import EXIT_CLEAN, EXIT_LEAKS, EXIT_USAGE
from pytest_leakcheck.errors import PolicyError
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.ci.hook import classify
from pytest_leakcheck.testing import photo, save

from ..conftest import write_policy

SMALL = (64, 48)


def _init(run_cli, root: Path) -> tuple[int, str, str]:
    return run_cli("init", str(root))


def _check(run_cli, root: Path) -> tuple[int, str, str]:
    return run_cli("check", "--policy", str(root / "leakcheck.yaml"), "-j", "1", "--format", "json")


def _coco(path: Path, names: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    images = [{"id": i, "file_name": n, "width": 64, "height": 48} for i, n in enumerate(names)]
    path.write_text(json.dumps({"images": images, "annotations": [], "categories": []}))


@pytest.fixture
def coco_tree(tmp_path: Path) -> Path:
    """A flat image folder and COCO split files; test/1 is a byte copy of train 0."""
    for i in range(4):
        save(photo(i, SMALL), tmp_path / f"images/tr{i}.jpg", quality=92)
    save(photo(10, SMALL), tmp_path / "images/te0.jpg", quality=92)
    shutil.copyfile(tmp_path / "images/tr0.jpg", tmp_path / "images/te1.jpg")
    _coco(tmp_path / "annotations/instances_train.json", [f"tr{i}.jpg" for i in range(4)])
    _coco(tmp_path / "annotations/instances_test.json", ["te0.jpg", "te1.jpg"])
    return tmp_path


def test_init_recognises_coco_split_files_and_check_finds_the_copy(coco_tree: Path, run_cli) -> None:
    code, out, _ = _init(run_cli, coco_tree)
    assert code == EXIT_CLEAN, out
    assert "COCO split file annotations/instances_train.json: 4 images in train (under images/)" in out
    policy = load(coco_tree / "leakcheck.yaml")
    assert policy.split_sources is not None and policy.split_names == ("train", "test")
    code, out, _ = _check(run_cli, coco_tree)
    assert code == EXIT_LEAKS
    report = json.loads(out)
    assert report["stats"]["splits"] == {"train": 4, "test": 2}
    copies = [{m["path"] for m in f["members"]} for f in report["findings"] if f["kind"] == "identical-file"]
    assert copies == [{"images/tr0.jpg", "images/te1.jpg"}]


def test_coco_split_source_reports_unlisted_and_missing_files(coco_tree: Path, run_cli) -> None:
    """A COCO split source is a manifest: unlisted images and listed-but-absent ones are findings."""
    write_policy(coco_tree, "version: 1\nsplits:\n  coco:\n"
                 "    train: {file: annotations/instances_train.json, images: images}\n"
                 "    test: {file: annotations/instances_test.json, images: images}\n")
    save(photo(20, SMALL), coco_tree / "images/stray.jpg", quality=92)
    (coco_tree / "images/tr3.jpg").unlink()
    report = json.loads(_check(run_cli, coco_tree)[1])
    kinds = {(f["kind"], f["members"][0]["path"]) for f in report["findings"]
             if f["kind"] in ("unassigned-file", "missing-file")}
    assert kinds == {("unassigned-file", "images/stray.jpg"), ("missing-file", "images/tr3.jpg")}


@pytest.mark.parametrize("text, message", [
    ("coco: {train: nope.json}", "COCO file 'nope.json' not found"),
    ("coco: {train: annotations/instances_train.json}\n  test: [x/**]", "cannot be combined"),
    ("coco: [a.json]", "expected a mapping of split name to COCO file"),
    ("coco: {train: {file: annotations/instances_train.json, images: nowhere}}", "image folder 'nowhere'"),
    ("metadata: annotations/instances_train.json", "is not .csv, .tsv, .jsonl or .parquet"),
])
def test_split_sources_are_validated_at_load(coco_tree: Path, text: str, message: str) -> None:
    write_policy(coco_tree, f"version: 1\nsplits:\n  {text}\n")
    with pytest.raises(PolicyError) as err:
        load(coco_tree / "leakcheck.yaml")
    assert message in str(err.value)
    assert "leakcheck.yaml:3" in str(err.value) or "leakcheck.yaml:4" in str(err.value)


def test_metadata_jsonl_defines_splits_and_init_finds_it(tmp_path: Path, run_cli) -> None:
    for i in range(3):
        save(photo(i, SMALL), tmp_path / f"img/{i}.png")
    shutil.copyfile(tmp_path / "img/0.png", tmp_path / "img/copy.png")
    rows = [("0.png", "train"), ("1.png", "train"), ("2.png", "test"), ("copy.png", "test")]
    (tmp_path / "img/metadata.jsonl").write_text(
        "".join(json.dumps({"file_name": n, "split": s, "label": 1}) + "\n" for n, s in rows))
    # In a subfolder: init looks for metadata at the root, so it must say so.
    shutil.move(tmp_path / "img/metadata.jsonl", tmp_path / "metadata.jsonl")
    (tmp_path / "metadata.jsonl").write_text(
        "".join(json.dumps({"file_name": f"img/{n}", "split": s}) + "\n" for n, s in rows))
    code, out, _ = _init(run_cli, tmp_path)
    assert code == EXIT_CLEAN
    assert "table metadata.jsonl: 4 rows, columns file=file_name, split=split; splits train 2, test 2" in out
    code, out, _ = _check(run_cli, tmp_path)
    assert code == EXIT_LEAKS
    assert {m["path"] for f in json.loads(out)["findings"] for m in f["members"]} == {"img/0.png", "img/copy.png"}


def test_metadata_without_split_column_is_a_policy_error(tmp_path: Path, run_cli) -> None:
    save(photo(1, SMALL), tmp_path / "a.png")
    (tmp_path / "metadata.csv").write_text("file_name,label\na.png,cat\n")
    write_policy(tmp_path, "version: 1\nsplits:\n  metadata: metadata.csv\n")
    code, _, err = _check(run_cli, tmp_path)
    assert code == EXIT_USAGE
    assert "metadata has no split column" in err and "metadata.csv" in err


def test_init_proposes_a_group_rule_with_evidence(tmp_path: Path, run_cli) -> None:
    """Subject ids in file names, one subject in train and test: init says so and check fails on it."""
    for subject in range(6):
        split = "train" if subject < 4 else "test"
        for shot in range(2):
            save(photo(subject * 10 + shot, SMALL), tmp_path / f"data/v1/{split}/cls/s{subject:04d}_{shot}.jpg")
    save(photo(99, SMALL), tmp_path / "data/v1/test/cls/s0001_7.jpg")  # subject 1 split across
    code, out, _ = _init(run_cli, tmp_path)
    assert code == EXIT_CLEAN
    assert "split folder data/v1/train: 8 images in train, 1 class folders (ImageFolder)" in out
    assert "1 id appears in more than one split (test and train), e.g. s0001" in out
    assert "Not set up: orientations" in out
    code, out, _ = _check(run_cli, tmp_path)
    assert code == EXIT_LEAKS
    splits = [f for f in json.loads(out)["findings"] if f["kind"] == "group-split"]
    assert [f["message"].split("'")[1] for f in splits] == ["s0001"]


def test_init_without_ids_says_groups_are_not_set_up(tmp_path: Path, run_cli) -> None:
    save(photo(1, SMALL), tmp_path / "train/a.jpg")
    save(photo(2, SMALL), tmp_path / "test/b.jpg")
    code, out, _ = _init(run_cli, tmp_path)
    assert code == EXIT_CLEAN
    assert "Not set up: groups: no repeated id" in out
    assert "groups:" not in (tmp_path / "leakcheck.yaml").read_text().split("\npairs:")[0]


def test_staging_a_coco_split_file_runs_the_whole_check(coco_tree: Path, run_cli) -> None:
    assert _init(run_cli, coco_tree)[0] == EXIT_CLEAN
    policy = load(coco_tree / "leakcheck.yaml")
    staged = classify(policy, ["annotations/instances_test.json"], cwd=coco_tree)
    assert staged.inputs == ("annotations/instances_test.json",)


def test_init_reads_a_yolo_export_without_calling_images_a_class(tmp_path: Path, run_cli) -> None:
    """YOLO and Roboflow exports keep images in `<split>/images/` beside `labels/`: no class folder."""
    for k, split in enumerate(("train", "train", "valid")):
        save(photo(k, SMALL), tmp_path / f"{split}/images/frame{k}.jpg")
        (tmp_path / f"{split}/labels").mkdir(parents=True, exist_ok=True)
        (tmp_path / f"{split}/labels/frame{k}.txt").write_text("0 0.5 0.5 0.2 0.2\n")
    code, out, _ = _init(run_cli, tmp_path)
    assert code == EXIT_CLEAN
    assert "split folder train: 2 images in train, in images/ (a YOLO layout)" in out
    assert "class folders" not in out
