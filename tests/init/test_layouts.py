"""`leakcheck init` end to end on layouts of issue 37: per-split metadata under data/, a large group warned about."""

from __future__ import annotations

import json
import re
from pathlib import Path

from pytest_leakcheck.dataset import groups, inventory
from pytest_leakcheck.init import nameids, recognise
from pytest_leakcheck.policy.load import load

from ..conftest import write_policy


def test_per_split_metadata_with_a_subject_column_under_data(tmp_path: Path) -> None:
    """A Hub imagefolder repo: data/{train,test}/metadata.jsonl, one image per subject and split; sub39 in both."""
    n = 0
    for split, subjects in (("train", range(40)), ("test", range(39, 50))):
        folder = tmp_path / "data" / split
        folder.mkdir(parents=True)
        rows = []
        for s in subjects:
            (folder / f"{n:05d}.png").touch()
            rows.append(json.dumps({"file_name": f"{n:05d}.png", "subject_id": f"sub{s}", "label": s % 2}))
            n += 1
        (folder / "metadata.jsonl").write_text("\n".join(rows) + "\n")
    layout = recognise.detect(tmp_path)
    assert 'train: "data/train/metadata.jsonl"' in layout.splits_yaml and 'group: "subject_id"' in layout.splits_yaml
    write_policy(tmp_path, recognise.policy_text(layout))
    inv = groups.resolve(inventory.scan(load(tmp_path / "leakcheck.yaml")))
    split_groups = [f.message for f in groups.findings(inv) if f.kind == "group-split"]
    # subject_id names people: the group is a keyed pseudonym, never sub39 (docs/policy-groups.md)
    assert len(split_groups) == 1 and "'subject_id-" in split_groups[0] and "sub39" not in split_groups[0]


def test_init_prints_and_writes_a_warning_for_a_group_holding_a_large_share(tmp_path: Path, run_cli) -> None:
    for n in range(90):
        path = tmp_path / ("train" if n < 72 else "test") / f"subj{0 if n < 30 else n // 3:03d}_{n}.jpg"
        path.parent.mkdir(exist_ok=True)
        path.touch()
    code, out, _ = run_cli("init", str(tmp_path))
    assert code == 0
    assert "Warning: group subj000 would hold 30 of 90 files (33%)" in out
    assert "Found: files per group: " in out
    assert "#   WARNING: group subj000 would hold 30 of 90 files" in (tmp_path / "leakcheck.yaml").read_text()


def test_init_does_not_cut_an_id_at_the_word_before_its_number(tmp_path: Path, run_cli) -> None:
    """Chest X-rays: ``IM-0429-0001`` is a child's id, and two leading tokens of every name made
    ``NORMAL2-IM`` one group of 120 children (a held-out set's only error was that invented group,
    542 files).  A prefix ending on the word that introduces a counter is refused; the id before
    the image number is proposed, ``NORMAL2-IM-0007`` a child of its own."""
    names = [f"IM-{n // 2:04d}-000{n % 2}" for n in range(880)] + [f"NORMAL2-IM-{n:04d}-0001" for n in range(120)]
    for n, name in enumerate(names):
        path = tmp_path / ("train", "val", "test")[n % 3] / f"{name}.jpeg"
        path.parent.mkdir(exist_ok=True)
        path.touch()
    code, out, _ = run_cli("init", str(tmp_path))
    assert code == 0
    assert "Found: group ids in file names (the id before -<number>)" in out, out
    assert "would hold" not in out, out
    regex = re.compile(str(load(tmp_path / "leakcheck.yaml").groups[0].value))
    assert regex.search("test/NORMAL2-IM-0007-0001.jpeg")["group"] == "NORMAL2-IM-0007"
    assert regex.search("train/IM-0429-0001.jpeg")["group"] == "IM-0429"
    assert nameids.not_an_id("NORMAL2-IM", "NORMAL2-IM-0384-0001.jpeg") == "cut at a generic word"
    assert nameids.not_an_id("IM-0384", "IM-0384-0001.jpeg") is None


def test_a_training_run_beside_the_data_is_not_a_split(tmp_path: Path) -> None:
    """Ultralytics writes ``runs/detect/train/`` (plots, predictions: images) beside a YOLO export;
    a held-out repository's ``init`` proposed it as training data."""
    from pytest_leakcheck.testing import photo, save

    for split, n in (("train", 4), ("valid", 2)):
        for k in range(n):
            save(photo(k + (10 if split == "valid" else 0)), tmp_path / f"data/{split}/images/{k}.jpg")
    save(photo(50), tmp_path / "runs/detect/train/val_batch0_pred.jpg")
    save(photo(51), tmp_path / "wandb/run-1/media/train/sample.png")
    layout = recognise.detect(tmp_path)
    assert "runs/" not in layout.splits_yaml and "wandb" not in layout.splits_yaml
    assert 'train: ["data/train/**"]' in layout.splits_yaml
    # Nor does the check read them: the policy ignores them, so they are no "file in no split" (the
    # held-out probe's uav repository: 14 such warnings from runs/).
    assert layout.ignore == ("runs/**", "wandb/**")
    assert any("a tool's output, not data (2 images)" in line for line in layout.found)
    (tmp_path / "leakcheck.yaml").write_text(recognise.policy_text(layout))
    assert load(tmp_path / "leakcheck.yaml").ignore == ("runs/**", "wandb/**")
    from pytest_leakcheck import check

    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    assert not [f for f in report.findings if f.kind == "unassigned-file"]


def test_a_run_named_anything_is_known_by_what_it_holds(tmp_path: Path) -> None:
    """Ultralytics' ``project=``/``name=`` put a training run beside the export (``Model_poly/Poly_run12/``)
    and a prediction run inside a split folder (``test/Poly_run12/``: the test images again, boxes drawn,
    and ``labels/``). The held-out probe's AMV_Exam: 13 warnings of files in no split, and the prediction
    run read as a class folder of test that outvoted the data.yaml."""
    from pytest_leakcheck.testing import photo, save

    for split, n in (("train", 4), ("valid", 2), ("test", 2)):
        for k in range(n):
            save(photo(k + 10 * len(split)), tmp_path / f"{split}/images/{split}{k}.jpg")
            (tmp_path / f"{split}/labels").mkdir(exist_ok=True)
            (tmp_path / f"{split}/labels/{split}{k}.txt").write_text("0 0.5 0.5 0.2 0.2\n")
    (tmp_path / "data.yaml").write_text("train: ../train/images\nval: ../valid/images\ntest: ../test/images\nnc: 1\n")
    for k in range(2):  # the prediction run: the test images under their own names, and its labels
        save(photo(k + 40), tmp_path / f"test/Poly_run12/test{k}.jpg")
        (tmp_path / "test/Poly_run12/labels").mkdir(exist_ok=True)
        (tmp_path / f"test/Poly_run12/labels/test{k}.txt").write_text("0 0.5 0.5 0.2 0.2 0.9\n")
    run = tmp_path / "Model_poly/Poly_run12"
    save(photo(60), run / "train_batch0.jpg")
    save(photo(61), run / "labels_correlogram.jpg")
    (run / "args.yaml").write_text("task: segment\n")
    layout = recognise.detect(tmp_path)
    assert layout.ignore == ("Model_poly/Poly_run12/**", "test/Poly_run12/**"), layout.ignore
    assert "yolo: data.yaml" in layout.splits_yaml, layout.splits_yaml
    assert not any("class folder" in line for line in layout.found), layout.found
    (tmp_path / "leakcheck.yaml").write_text(recognise.policy_text(layout))
    from pytest_leakcheck import check

    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    assert not [f for f in report.findings if f.kind == "unassigned-file"]
    # A folder of images beside images/ under other names, or with no labels/, is still data.
    save(photo(70), tmp_path / "test/extra/other.jpg")
    (tmp_path / "test/extra/labels").mkdir()
    assert "test/extra/**" not in recognise.detect(tmp_path).ignore


def test_a_data_yaml_whose_paths_are_elsewhere_is_named_when_folders_are_used(tmp_path: Path) -> None:
    """A trainer's data.yaml names its own machine's paths (`D:/…`): `init` falls back to the split
    folders and says which file it passed over and why, instead of nothing."""
    from pytest_leakcheck.testing import photo, save

    for split in ("train", "valid"):
        for k in range(2):
            save(photo(k + (10 if split == "valid" else 0)), tmp_path / f"data/{split}/images/{k}.jpg")
    (tmp_path / "data.yaml").write_text("train: D:/yolo/data/train/images\nval: D:/yolo/data/valid/images\nnc: 1\n")
    layout = recognise.detect(tmp_path)
    assert 'train: ["data/train/**"]' in layout.splits_yaml
    (line,) = [w for w in layout.warnings if w.startswith("data.yaml")]
    assert "D:/yolo/data/train/images" in line and "not used" in line


def test_split_folders_named_loosely_are_taken_in_pairs(tmp_path: Path) -> None:
    """``training/`` beside ``tests/``, ``data_train/`` beside ``data_valid/``: splits; a lone ``tests/``
    beside ``src/`` is a code repository's tests, not a split."""
    from pytest_leakcheck.testing import photo, save

    for k, folder in enumerate(["training/a", "training/b", "tests/a", "data_train/x", "data_valid/x"]):
        save(photo(k, (48, 36)), tmp_path / "one" / folder / f"p{k}.jpg")
        save(photo(k + 10, (48, 36)), tmp_path / "one" / folder / f"q{k}.jpg")
    layout = recognise.detect(tmp_path / "one")
    text = layout.splits_yaml
    assert "tests/**" in text and "training/**" in text and "data_train/**" in text and "data_valid/**" in text
    assert {recognise.loose_split(n) for n in ("tests", "Testing_Data", "train_images")} == {"test", "train"}
    assert recognise.loose_split("test_outputs") is None and recognise.loose_split("contest") is None
    save(photo(1, (48, 36)), tmp_path / "two" / "train" / "p.jpg")
    save(photo(2, (48, 36)), tmp_path / "two" / "val" / "p.jpg")
    save(photo(3, (48, 36)), tmp_path / "two" / "src" / "tests" / "fixture.jpg")
    assert "tests" not in recognise.detect(tmp_path / "two").splits_yaml



def test_split_folders_with_a_slip_in_their_name_are_splits(tmp_path: Path) -> None:
    """``ttrain/`` and ``ttest/`` beside ``valid/`` (a held-out Roboflow export re-split by its user): init
    took only ``valid/`` (61 of 1,598 images) for a split.  A letter typed twice or two letters swapped
    is read; other one-letter changes make words (``text/`` beside ``train/`` is no test split)."""
    from pytest_leakcheck.testing import photo, save

    for k, folder in enumerate(["ttrain/a", "ttrain/b", "ttest/a", "valid"]):
        for n in range(2):
            save(photo(10 * k + n, (48, 36)), tmp_path / "one" / folder / f"p{k}{n}.jpg")
    text = recognise.detect(tmp_path / "one").splits_yaml
    assert 'train: ["ttrain/**"]' in text and 'test: ["ttest/**"]' in text and 'val: ["valid/**"]' in text
    assert {recognise.misspelt_split(n) for n in ("trian", "tset", "vaild", "trainn")} == {"train", "test", "val"}
    assert not any(recognise.misspelt_split(n) for n in ("text", "rest", "brain", "train", "tests", "val"))
    for k, folder in enumerate(["train", "text", "val"]):
        save(photo(k, (48, 36)), tmp_path / "two" / folder / f"p{k}.jpg")
    assert "text" not in recognise.detect(tmp_path / "two").splits_yaml


def test_split_folders_win_over_a_coco_export_listing_fewer_of_their_images(tmp_path: Path) -> None:
    """A Roboflow COCO export whose ``<split>/_annotations.coco.json`` leaves some of the folder's
    images out (wrist-coco: 90 of 117, the 27 left out being the copies across splits): every image
    of a split folder is in that split, so the folders are read, and init says why."""
    from pytest_leakcheck.testing import photo, save

    for split, n in (("train", 6), ("valid", 4)):
        listed = []
        for k in range(n):
            save(photo(k + (20 if split == "valid" else 0), (48, 36)), tmp_path / split / f"{k}.jpg")
            if k % 2 == 0:
                listed.append({"id": k, "file_name": f"{k}.jpg", "width": 48, "height": 36})
        (tmp_path / split / "_annotations.coco.json").write_text(
            json.dumps({"images": listed, "annotations": [], "categories": []}))
    layout = recognise.detect(tmp_path)
    assert 'train: ["train/**"]' in layout.splits_yaml and "coco" not in layout.splits_yaml
    assert any("split folders hold 10 images, 5 more" in w for w in layout.warnings)


def _yolo_resplit(root: Path, stray_own: bool) -> None:
    """A YOLO export re-split into ``dataset_split/`` (named by its data.yaml), the old ``train/`` of
    every image left beside it (pestrice of benchmarks/field.py); with ``stray_own`` one image of
    that folder is its own, not a copy of a named split's."""
    from pytest_leakcheck.testing import photo, save

    for k in range(12):
        split = "train" if k < 8 else "valid" if k < 10 else "test"
        save(photo(k, (48, 36)), root / "dataset_split" / split / "images" / f"s{k}.jpg")
        save(photo(k, (48, 36)), root / "train" / "images" / f"s{k}.jpg")
    if stray_own:
        save(photo(40, (48, 36)), root / "train" / "images" / "own.jpg")
    (root / "data.yaml").write_text("train: ./dataset_split/train/images\nval: ./dataset_split/valid/images\n"
                                    "test: ./dataset_split/test/images\nnc: 1\n")


def test_a_copy_left_beside_a_yolo_resplit_is_not_a_split(tmp_path: Path) -> None:
    """The data.yaml names the folders it trains on; a split-named folder it does not name, holding
    only files named as its images, is a copy left behind: taken for train, it made every val and
    test image an error.  init reads the data.yaml and says what the folder is."""
    _yolo_resplit(tmp_path, stray_own=False)
    layout = recognise.detect(tmp_path)
    assert "yolo: data.yaml" in layout.splits_yaml and '"train/**"' not in layout.splits_yaml
    assert any(w.startswith("folder train/ is named like a split but is not in the YOLO data.yaml")
               for w in layout.warnings)


def test_a_folder_with_images_of_its_own_is_still_a_split_the_data_yaml_left_out(tmp_path: Path) -> None:
    """One image that is not a copy by name makes the folder data: the folders are read, as before."""
    _yolo_resplit(tmp_path, stray_own=True)
    layout = recognise.detect(tmp_path)
    assert '"train/**"' in layout.splits_yaml


def test_gtsrb_folders_of_ppm_signs_are_splits(tmp_path: Path) -> None:
    """GTSRB as shipped: ``Final_Training/Images/<class>/*.ppm`` beside ``Final_Test/Images/*.ppm``.
    Both folders are splits and their netpbm files are images (held out: init once saw no split)."""
    from pytest_leakcheck.testing import photo

    for k, rel in enumerate(["Final_Training/Images/00000/00000_00000.ppm",
                             "Final_Training/Images/00000/00000_00001.ppm",
                             "Final_Test/Images/00000.ppm", "Final_Test/Images/00001.ppm"]):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        photo(k, (32, 32)).save(tmp_path / rel)
    assert recognise.loose_split("Final_Training") == "train" and recognise.loose_split("Final_Test") == "test"
    layout = recognise.detect(tmp_path)
    assert "Final_Training/**" in layout.splits_yaml and "Final_Test/**" in layout.splits_yaml
    assert not any("not read by default" in w for w in layout.warnings)


def test_files_of_an_unread_format_are_named_not_missed(tmp_path: Path) -> None:
    """A tree of JPEG XL files beside a few JPEGs: init names the format and says how to read it."""
    import pytest

    from pytest_leakcheck.errors import UsageError
    from pytest_leakcheck.testing import photo, save

    for split in ("train", "test"):
        save(photo(1 if split == "train" else 2, (48, 36)), tmp_path / "one" / split / "a.jpg")
        for k in range(3):
            (tmp_path / "one" / split / f"b{k}.jxl").write_bytes(b"\xff\x0a")
    (line,) = [w for w in recognise.detect(tmp_path / "one").warnings if "not read by default" in w]
    assert "(6 .jxl)" in line and "files: {extensions:" in line
    (tmp_path / "two/raw").mkdir(parents=True)
    (tmp_path / "two/raw/b.jxl").write_bytes(b"\xff\x0a")
    with pytest.raises(UsageError, match=r"formats not read by default are left out \(1 \.jxl\)"):
        recognise.detect(tmp_path / "two")


def test_a_name_rule_stays_when_the_times_in_names_chain_no_burst(tmp_path: Path) -> None:
    """Subjects named before the second a script wrote each file: the write times chain all 120 files,
    so no burst rule is proposed (held out, stop 50), and the subject rule found in the names stays,
    with the reason beside it (before, the burst rule replaced it)."""
    for k in range(120):
        path = tmp_path / ("test" if k // 4 % 5 == 0 or k == 5 else "train")
        path /= f"s{k // 4:02d}_20240517_1015{k // 4:02d}_{250 * (k % 4):03d}.jpg"
        path.parent.mkdir(exist_ok=True)
        path.touch()
    layout = recognise.detect(tmp_path)
    assert "burst:" not in layout.groups_yaml and "- regex:" in layout.groups_yaml
    assert any(line.startswith("group ids in file names (1 leading token): 30 ids") for line in layout.found)
    assert any("no burst rule proposed: one chain of 120 photos 0.25 s apart" in n for n in layout.not_set_up)


def test_why_no_name_rule_is_said_beside_why_no_burst_rule(tmp_path: Path) -> None:
    """A Roboflow export of phone photos with a converter's copy ``img<N>.jpg`` beside each (held-out probe
    11): the export names cover half the files, too few for the source rule, and the capture times chain
    every shot.  Init said only the second; the first, the one the user can act on, went unsaid."""
    for k in range(120):
        path = tmp_path / ("test" if k % 5 == 0 else "train")
        path.mkdir(exist_ok=True)
        (path / f"IMG_20240517_1015{k // 2:02d}_jpg.rf.{k:032x}.jpg").touch()
        (path / f"img{k}.jpg").touch()
    layout = recognise.detect(tmp_path)
    assert "burst:" not in layout.groups_yaml and "source_name" not in layout.groups_yaml
    note = next(n for n in layout.not_set_up if "no burst rule proposed" in n)
    assert "Roboflow export names for 120 of 240 files" in note


def test_a_mac_zips_resource_fork_folder_is_not_a_split(tmp_path: Path) -> None:
    """FUNSD unzipped: ``dataset/training_data/`` beside ``__MACOSX/dataset/training_data/``, which
    holds a ``._`` resource fork per image; ``init`` proposed both folders as the split."""
    from pytest_leakcheck.testing import photo, save

    for split, k in (("training_data", 0), ("testing_data", 10)):
        save(photo(k), tmp_path / f"dataset/{split}/images/{k}.png")
        fork = tmp_path / f"__MACOSX/dataset/{split}/images/._{k}.png"
        fork.parent.mkdir(parents=True)
        fork.write_bytes(b"\x00\x05\x16\x07\x00\x02\x00\x00" + bytes(200))
    layout = recognise.detect(tmp_path)
    assert "__MACOSX" not in layout.splits_yaml + "".join(layout.found), layout
    assert 'train: ["dataset/training_data/**"]' in layout.splits_yaml
    assert 'test: ["dataset/testing_data/**"]' in layout.splits_yaml


def test_images_beside_json_annotations_are_not_called_a_yolo_layout(tmp_path: Path) -> None:
    """FUNSD's ``training_data/images/`` sits beside ``annotations/`` (JSON), not YOLO's ``labels/``."""
    from pytest_leakcheck.testing import photo, save

    for split, k in (("training_data", 0), ("testing_data", 10)):
        save(photo(k), tmp_path / f"{split}/images/{k}.png")
        (tmp_path / f"{split}/annotations").mkdir()
        (tmp_path / f"{split}/annotations/{k}.json").write_text("{}")
    found = " ".join(recognise.detect(tmp_path).found)
    assert "YOLO" not in found and "in images/ (not a class folder)" in found, found


def test_label_masks_named_like_the_images_are_ignored_but_a_copy_of_the_photos_is_not(tmp_path: Path) -> None:
    """Oxford-IIIT Pet: ``annotations/trimaps/<name>.png`` is a mask of ``images/<name>.jpg`` (3 values); no
    split list names them, and the check warned that the whole folder was in no split. A folder of the
    photos themselves under the same names is not masks: the check still reports it."""
    from PIL import Image

    from pytest_leakcheck.testing import photo, save

    names = [f"Abyssinian_{k}" for k in range(1, 9)]
    for k, name in enumerate(names):
        save(photo(k), tmp_path / f"images/{name}.jpg")
        save(photo(k), tmp_path / f"backup/{name}.png")
        mask = Image.new("L", (64, 48), 2)
        mask.paste(1, (10, 10, 40, 30))
        mask.paste(3, (12, 12, 38, 28))
        save(mask, tmp_path / f"annotations/trimaps/{name}.png")
    (tmp_path / "annotations/trainval.txt").write_text("".join(f"{n} 1 1 1\n" for n in names[:6]))
    (tmp_path / "annotations/test.txt").write_text("".join(f"{n} 1 1 1\n" for n in names[6:]))
    layout = recognise.detect(tmp_path)
    assert "lists:" in layout.splits_yaml
    assert layout.ignore == ("annotations/trimaps/**",)
    assert any("label masks named like the images" in line and "(8 files)" in line for line in layout.found)


def _blob(k: int) -> "Image.Image":
    from PIL import Image, ImageDraw

    mask = Image.new("L", (64, 64), 0)
    ImageDraw.Draw(mask).ellipse((8 + k % 5 * 4, 10, 40 + k % 3 * 6, 44), fill=255)
    return mask


def test_masks_inside_split_folders_are_ignored_so_they_cannot_hide_a_copy(tmp_path: Path) -> None:
    """``train/images`` beside ``train/masks``, and Roboflow's ``<name>_mask.png`` beside ``<name>.jpg``:
    the masks were compared as data, their blobs raised every detector's level, and a mirrored photo
    copied into test was missed (a 200-photo set: no finding; with the masks ignored, an error)."""
    from pytest_leakcheck.testing import photo, save

    for k in range(6):
        split = "test" if k >= 4 else "train"
        save(photo(k), tmp_path / f"a/{split}/images/im{k}.jpg")
        save(_blob(k), tmp_path / f"a/{split}/masks/im{k}.png")
        save(photo(k), tmp_path / f"b/{split}/im{k}_jpg.rf.{k:032x}.jpg")
        save(_blob(k), tmp_path / f"b/{split}/im{k}_jpg.rf.{k:032x}_mask.png")
    assert recognise.detect(tmp_path / "a").ignore == ("test/masks/**", "train/masks/**")
    assert recognise.detect(tmp_path / "b").ignore == ("test/*_mask.png", "train/*_mask.png")
    # Photos are never masks, whatever their names: a folder of photos beside the masks stays data.
    assert not any("images" in glob for glob in recognise.detect(tmp_path / "a").ignore)


def test_of_two_exports_the_data_yaml_passed_over_is_named(tmp_path: Path) -> None:
    """Two Roboflow exports of one set side by side (the held-out probe's AMV_Exam): `init` uses the split
    folders of both, and the Warning names which export's data.yaml it passed over, not "the YOLO data.yaml"."""
    from pytest_leakcheck.testing import photo, save

    for export in ("boxes.v1", "polygons.v2"):
        for split, n in (("train", 3), ("valid", 1)):
            for k in range(n):
                save(photo(k + 10 * len(split)), tmp_path / f"{export}/{split}/images/p{k}_{export[-2:]}.jpg")
                (tmp_path / f"{export}/{split}/labels").mkdir(exist_ok=True)
        (tmp_path / f"{export}/data.yaml").write_text("train: ../train/images\nval: ../valid/images\nnc: 1\n")
    layout = recognise.detect(tmp_path)
    passed = [w for w in layout.warnings if "those are used" in w]
    assert passed and passed[0].startswith(("the YOLO boxes.v1/data.yaml assign", "the YOLO polygons.v2/data.yaml assign")), passed


def test_hc18_masks_are_not_counted_and_each_split_table_reads_its_own_folder(tmp_path: Path) -> None:
    """HC18 as shipped (``hc18`` of benchmarks/field.py): ``training_set/NNN_HC.png`` with an ellipse mask
    ``NNN_HC_Annotation.png`` beside each, ``test_set/`` numbered again from 000, and a table per split
    (``training_set_pixel_size_and_HC.csv``, ``test_set_pixel_size.csv``).  init counted the masks as
    train's images (1,998 for 999), and read the training table's names under ``test_set/``, where most
    of them exist too: "Warning: the table assign train 335"."""
    from pytest_leakcheck.testing import photo, save

    rows = {"training_set": [f"{n:03d}_HC.png" for n in range(8)], "test_set": [f"{n:03d}_HC.png" for n in range(4)]}
    for folder, names in rows.items():
        for k, name in enumerate(names):
            save(photo(k + 10 * (folder == "test_set")), tmp_path / folder / name)
            if folder == "training_set":
                save(_blob(k), tmp_path / folder / name.replace(".png", "_Annotation.png"))
        table = "training_set_pixel_size_and_HC.csv" if folder == "training_set" else "test_set_pixel_size.csv"
        (tmp_path / table).write_text("filename,pixel size(mm)\n" + "".join(f"{n},0.1\n" for n in names))
    layout = recognise.detect(tmp_path)
    assert layout.ignore == ("training_set/*_Annotation.png",)
    assert not layout.warnings, layout.warnings
    assert "table training_set_pixel_size_and_HC.csv: 8 images in train (under training_set/)" in layout.found[0]
    assert "table test_set_pixel_size.csv: 4 images in test (under test_set/)" in layout.found[1]
