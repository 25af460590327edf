"""Split lists kept one set per class (COVID-CT's `Data-split/COVID/trainCT_COVID.txt`), and several
lists per split in the policy (held-out probe 3 of stop 57, docs/field.md)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from pytest_leakcheck import EXIT_LEAKS
from pytest_leakcheck.dataset.inventory import scan
from pytest_leakcheck.errors import PolicyError
from pytest_leakcheck.init import recognise
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.testing import photo

from ..conftest import write_policy


def _png(path: Path, seed: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    photo(seed, (64, 48)).save(buf, "PNG")
    path.write_bytes(buf.getvalue())


def _covid_ct(root: Path) -> None:
    """Two classes, each a folder of images and a folder of `<split>CT_<class>.txt` lists of bare names."""
    seed = 0
    for cls in ("COVID", "NonCOVID"):
        names = {"train": [f"{cls}-p{n}-1.png" for n in range(4)], "val": [f"{cls}-p9-1.png"],
                 "test": [f"{cls}-p7-{n}.png" for n in range(2)]}
        lists = root / "Data-split" / cls
        lists.mkdir(parents=True)
        for split, files in names.items():
            (lists / f"{split}CT_{cls}.txt").write_text("".join(f"{f}\n" for f in files))
            for f in files:
                _png(root / "Images" / f"CT_{cls}" / f, seed)
                seed += 1
    _png(root / "Plots" / "loss.png", 99)  # a model's plot beside the data: in no list


def test_init_reads_per_class_list_folders_with_a_shared_tail(tmp_path: Path) -> None:
    _covid_ct(tmp_path)
    layout = recognise.detect(tmp_path)
    assert layout.splits_yaml == (
        "splits:\n  lists:\n    train:\n"
        '      - {file: "Data-split/COVID/trainCT_COVID.txt", images: "Images/CT_COVID"}\n'
        '      - {file: "Data-split/NonCOVID/trainCT_NonCOVID.txt", images: "Images/CT_NonCOVID"}\n'
        "    val:\n"
        '      - {file: "Data-split/COVID/valCT_COVID.txt", images: "Images/CT_COVID"}\n'
        '      - {file: "Data-split/NonCOVID/valCT_NonCOVID.txt", images: "Images/CT_NonCOVID"}\n'
        "    test:\n"
        '      - {file: "Data-split/COVID/testCT_COVID.txt", images: "Images/CT_COVID"}\n'
        '      - {file: "Data-split/NonCOVID/testCT_NonCOVID.txt", images: "Images/CT_NonCOVID"}\n')
    assert ("split list Data-split/NonCOVID/testCT_NonCOVID.txt: 2 images in test (under Images/CT_NonCOVID/)"
            in layout.found)
    write_policy(tmp_path, recognise.policy_text(layout))
    policy = load(tmp_path / "leakcheck.yaml")
    assert policy.split_names == ("train", "val", "test")
    inv = scan(policy)
    splits = {r.path: r.split for r in inv.records}
    assert len(splits) == 14 and splits["Images/CT_NonCOVID/NonCOVID-p9-1.png"] == "val"
    assert [(i.kind, i.path) for i in inv.issues] == [("unassigned", "Plots/loss.png")]


def test_a_copy_under_two_class_lists_fails_the_check(tmp_path: Path, run_cli) -> None:
    """The same CT picture in one class's train list and the other class's test list (COVID-CT's `71%0.jpg`
    and `kjr-21-e24-p5-29.png`) is a leak the check finds through the lists init wrote."""
    _covid_ct(tmp_path)
    copy = tmp_path / "Images" / "CT_NonCOVID" / "NonCOVID-p7-1.png"
    copy.write_bytes((tmp_path / "Images" / "CT_COVID" / "COVID-p0-1.png").read_bytes())
    write_policy(tmp_path, recognise.policy_text(recognise.detect(tmp_path)))
    code, out, err = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "-j", "1", "--format", "json")
    assert code == EXIT_LEAKS, err
    leaks = [{m["path"] for m in f["members"]} for f in json.loads(out)["findings"] if f["severity"] == "error"]
    assert {"Images/CT_COVID/COVID-p0-1.png", "Images/CT_NonCOVID/NonCOVID-p7-1.png"} in leaks


def test_folds_naming_the_same_images_are_alternatives_not_one_split(tmp_path: Path) -> None:
    """`train_1.txt`/`test_1.txt` beside `train_2.txt`/`test_2.txt`: two folds of one set of images. Reading
    both would put every image in two splits; the first fold is read and the other said."""
    names = [f"im{n}.png" for n in range(6)]
    for n, name in enumerate(names):
        _png(tmp_path / "data" / "pictures" / name, n)
    folds = tmp_path / "data" / "folds"
    folds.mkdir()
    (folds / "train_1.txt").write_text("\n".join(names[:4]))
    (folds / "test_1.txt").write_text("\n".join(names[4:]))
    (folds / "train_2.txt").write_text("\n".join(names[2:]))
    (folds / "test_2.txt").write_text("\n".join(names[:2]))
    layout = recognise.detect(tmp_path)
    assert "train_1.txt" in layout.splits_yaml and "train_2.txt" not in layout.splits_yaml
    assert any("folds/test_2.txt" in line and "not used" in line for line in layout.found), layout.found
    write_policy(tmp_path, recognise.policy_text(layout))
    assert not scan(load(tmp_path / "leakcheck.yaml")).issues


def test_a_split_may_name_several_lists_and_an_empty_one_is_refused(tmp_path: Path) -> None:
    for n in range(4):
        _png(tmp_path / "a" / f"{n}.png", n)
        _png(tmp_path / "b" / f"{n}.png", 10 + n)
    for folder in ("a", "b"):
        (tmp_path / folder / "tr.txt").write_text("0.png\n1.png\n2.png\n")
        (tmp_path / folder / "te.txt").write_text("3\n")
    write_policy(tmp_path, "version: 1\nsplits:\n  lists:\n    train: [a/tr.txt, b/tr.txt]\n"
                 "    test: [{file: a/te.txt}, {file: b/te.txt, images: b}]\n")
    splits = {r.path: r.split for r in scan(load(tmp_path / "leakcheck.yaml")).records}
    assert splits == {**{f"{f}/{n}.png": "train" for f in "ab" for n in range(3)}, "a/3.png": "test", "b/3.png": "test"}
    write_policy(tmp_path, "version: 1\nsplits:\n  lists:\n    train: []\n    test: a/te.txt\n")
    with pytest.raises(PolicyError) as err:
        load(tmp_path / "leakcheck.yaml")
    assert "expected at least one list file" in str(err.value) and "splits.lists.train" in str(err.value)
    write_policy(tmp_path, "version: 1\nsplits:\n  lists:\n    train: [a/tr.txt, nope.txt]\n    test: a/te.txt\n")
    with pytest.raises(PolicyError) as err:
        load(tmp_path / "leakcheck.yaml")
    assert "splits.lists.train.1.file" in str(err.value) and "'nope.txt' not found" in str(err.value)


def test_a_class_whose_lines_name_renamed_files_is_said_not_dropped_unsaid(tmp_path: Path) -> None:
    """A user's copy of COVID-CT renamed `x%0.png` to `x_0.png` on disk while its lists still name `x%0.png`:
    that class's lists resolve too little to be read, and init says so instead of leaving its images
    in no split without a word."""
    _covid_ct(tmp_path)
    for path in (tmp_path / "Images" / "CT_COVID").iterdir():
        path.rename(path.with_name(path.name.replace("-1.png", "_1.png").replace("-0.png", "_0.png")))
    layout = recognise.detect(tmp_path)
    assert "CT_COVID" not in layout.splits_yaml and "trainCT_NonCOVID.txt" in layout.splits_yaml
    said = [line for line in layout.found if "Data-split/COVID/trainCT_COVID.txt" in line]
    assert said and "name no image under root" in said[0] and said[0].endswith("renamed since?): not used"), said


def test_a_colab_line_naming_no_file_is_reported_whole_with_the_renamed_file(tmp_path: Path, run_cli) -> None:
    """`/content/drive/My Drive/.../1%0.jpg` in `Data-split/NonCOVID/` was reported as one missing file
    `Data-split/NonCOVID//content/drive/My` for every such line (its first word under the list's folder).
    Each line is its own missing file, named as written, with the file in no split that has its name
    but for punctuation (`1_0.jpg`)."""
    for n in range(5):
        _png(tmp_path / "Images" / "CT_A" / f"{n}.png", n)
    _png(tmp_path / "Images" / "CT_A" / "1_0.png", 7)
    _png(tmp_path / "Images" / "CT_A" / "1_1.png", 8)
    lists = tmp_path / "Data-split" / "A"
    lists.mkdir(parents=True)
    colab = "/content/drive/My Drive/Colab Notebooks/Images/CT_A/"
    (lists / "trainCT_A.txt").write_text("".join(f"{colab}{n}.png\n" for n in (0, 1, 2)) + f"{colab}1%0.png\n")
    (lists / "testCT_A.txt").write_text(f"{colab}3.png\n{colab}4.png\n{colab}1%1.png\n")
    write_policy(tmp_path, "version: 1\nsplits:\n  lists: {train: Data-split/A/trainCT_A.txt, "
                 "test: Data-split/A/testCT_A.txt}\n")
    code, out, err = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "-j", "1", "--format", "json")
    assert code == EXIT_LEAKS, err
    missing = {f["members"][0]["path"]: f["message"] for f in json.loads(out)["findings"] if f["kind"] == "missing-file"}
    assert set(missing) == {f"{colab}1%0.png", f"{colab}1%1.png"}, missing
    assert missing[f"{colab}1%1.png"] == ("listed for the test split, not on disk (Images/CT_A/1_1.png, in no split, "
                                          "has its name but for punctuation: renamed since?)")


def test_init_neither_reads_nor_quotes_a_list_linked_from_outside_the_repository(tmp_path: Path) -> None:
    """A pull request's `trainCT_X.txt -> ~/secret` is no split list: the check refuses a list outside
    root, and `init`, which quotes a set's first line when it cannot use it, must not read it either."""
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET_TOKEN_123 not-an-image\n")
    root = tmp_path / "ds"
    _covid_ct(root)
    (root / "Data-split" / "COVID" / "trainCT_COVID.txt").unlink()
    (root / "Data-split" / "COVID" / "trainCT_COVID.txt").symlink_to(secret)
    (root / "train.txt").symlink_to(secret)  # a plain list at the root, linked out too
    (root / "test.txt").write_text("COVID-p7-0.png\n")
    layout = recognise.detect(root)
    said = "\n".join([*layout.found, *layout.warnings, layout.splits_yaml or ""])
    assert "SECRET_TOKEN" not in said
    assert "trainCT_COVID.txt" not in said and "train.txt" not in said.replace("trainCT_NonCOVID.txt", "")
    assert "Data-split/NonCOVID/trainCT_NonCOVID.txt" in said  # the other class's set is still read
