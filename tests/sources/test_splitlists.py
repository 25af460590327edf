"""Split lists (`splits: {lists: ...}`): VOC ImageSets, bare train.txt/test.txt, ids naming two files (issue 37)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from pytest_leakcheck import EXIT_LEAKS, sources
from pytest_leakcheck.dataset.inventory import scan
from pytest_leakcheck.errors import PolicyError
from pytest_leakcheck.init import recognise
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.testing import photo

from ..conftest import write_policy

SMALL = (64, 48)


def _jpeg(path: Path, seed: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    photo(seed, SMALL).save(buf, "JPEG", quality=90)
    path.write_bytes(buf.getvalue())


def _voc(root: Path) -> None:
    """VOC: ids in ImageSets/Main/{train,val,trainval,test}.txt, images in JPEGImages/."""
    ids = [f"2008_{n:06d}" for n in range(8)]
    for n, i in enumerate(ids):
        _jpeg(root / "VOC2012" / "JPEGImages" / f"{i}.jpg", n)
    main = root / "VOC2012" / "ImageSets" / "Main"
    main.mkdir(parents=True)
    (main / "train.txt").write_text("\n".join(ids[:5]) + "\n")
    (main / "val.txt").write_text("\n".join(ids[5:7]) + "\n")
    (main / "trainval.txt").write_text("\n".join(ids[:7]) + "\n")
    (main / "test.txt").write_text(ids[7] + "\n")
    (main / "aeroplane_train.txt").write_text("".join(f"{i} -1\n" for i in ids[:5]))


def test_init_recognises_voc_imagesets_and_the_policy_reads_them(tmp_path: Path) -> None:
    _voc(tmp_path)
    layout = recognise.detect(tmp_path)
    assert "lists:" in layout.splits_yaml and "trainval" not in layout.splits_yaml
    assert "VOC2012/ImageSets/Main/val.txt: 2 images in val (under VOC2012/JPEGImages/)" in "\n".join(layout.found)
    write_policy(tmp_path, recognise.policy_text(layout))
    policy = load(tmp_path / "leakcheck.yaml")
    assert policy.split_names == ("train", "val", "test")
    records = {r.path: r.split for r in scan(policy).records}
    assert records["VOC2012/JPEGImages/2008_000006.jpg"] == "val"
    assert records["VOC2012/JPEGImages/2008_000007.jpg"] == "test"
    # Every list the policy reads is an input: staging one re-checks everything (pre-commit, --changed-since).
    assert {p.name for p in sources.inputs(policy.split_sources)} == {"train.txt", "val.txt", "test.txt"}


def test_ids_naming_two_files_and_an_image_in_no_list(tmp_path: Path) -> None:
    """DeepPCB: `group1/1/10001.jpg` stands for 10001_temp.jpg and 10001_test.jpg; trainval is the train split."""
    for n in range(6):
        for kind in ("temp", "test"):
            _jpeg(tmp_path / "group1" / "1" / f"1000{n}_{kind}.jpg", 2 * n + (kind == "test"))
    _jpeg(tmp_path / "group1" / "1" / "extra.jpg", 99)
    line = "group1/1/1000{n}.jpg group1/1_not/1000{n}.txt\n"
    (tmp_path / "trainval.txt").write_text("".join(line.format(n=n) for n in range(4)))
    (tmp_path / "test.txt").write_text("".join(f"group1/1/1000{n}.jpg group1/1_not/1000{n}.txt\n" for n in (4, 5)))
    layout = recognise.detect(tmp_path)
    assert layout.splits_yaml == 'splits:\n  lists:\n    train: "trainval.txt"\n    test: "test.txt"\n'
    found = "\n".join(layout.found)
    assert "trainval.txt: 8 images in train" in found and "1 image under the root in no list" in found
    assert "files per group: 6 of 2-5 files" in found  # the id, template and tested image, is the group
    write_policy(tmp_path, recognise.policy_text(layout))
    inv = scan(load(tmp_path / "leakcheck.yaml"))
    assert {r.path: r.split for r in inv.records}["group1/1/10005_temp.jpg"] == "test"
    assert [(i.kind, i.path) for i in inv.issues] == [("unassigned", "group1/1/extra.jpg")]


def test_a_copy_across_two_lists_fails_and_a_name_on_no_file_is_missing(tmp_path: Path, run_cli) -> None:
    for n in range(4):
        _jpeg(tmp_path / "images" / f"im{n}.png", n if n != 3 else 0)  # im3 is im0 again
    (tmp_path / "lists").mkdir()
    (tmp_path / "lists" / "train.txt").write_text("im0.png\nim1\n\n# a comment\n")
    (tmp_path / "lists" / "test.txt").write_text("im2.png\nim3.png\ngone.png\n")
    write_policy(tmp_path, "version: 1\nsplits:\n  lists:\n    train: {file: lists/train.txt, images: images}\n"
                 "    test: {file: lists/test.txt, images: images}\n")
    code, out, _ = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "-j", "1", "--format", "json")
    report = json.loads(out)
    assert code == EXIT_LEAKS
    kinds = {(f["kind"], tuple(sorted(m["path"] for m in f["members"]))) for f in report["findings"]}
    assert ("missing-file", ("images/gone.png",)) in kinds
    missing = next(f for f in report["findings"] if f["kind"] == "missing-file")
    assert missing["message"] == "listed for the test split, not on disk"  # no manifest in this policy
    assert any(k != "missing-file" and paths == ("images/im0.png", "images/im3.png") for k, paths in kinds)


def test_a_val_list_that_is_a_copy_of_train_is_every_file_ambiguous_not_a_missing_split(tmp_path: Path,
                                                                                      run_cli) -> None:
    """A policy that reads a val.txt repeating train.txt (held-out probe, docs/field.md): the check reports
    each file in two splits as an error, not a policy error calling the splits empty."""
    _voc(tmp_path)
    main = tmp_path / "VOC2012" / "ImageSets" / "Main"
    (main / "val.txt").write_text((main / "train.txt").read_text())
    lists = "".join(f"    {s}: {{file: VOC2012/ImageSets/Main/{s}.txt, images: VOC2012/JPEGImages}}\n"
                    for s in ("train", "val", "test"))
    write_policy(tmp_path, "version: 1\nsplits:\n  lists:\n" + lists)
    code, out, err = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "-j", "1", "--format", "json")
    assert code == EXIT_LEAKS, err
    report = json.loads(out)
    ambiguous = {m["path"] for f in report["findings"] if f["kind"] == "ambiguous-file" for m in f["members"]}
    assert ambiguous == {f"VOC2012/JPEGImages/2008_{n:06d}.jpg" for n in range(5)}


def test_init_leaves_out_a_list_that_copies_another_and_the_check_compares_train_with_test(tmp_path: Path,
                                                                                          run_cli) -> None:
    """held-out probe 8 (linto-ai's meeting-room frames): val.txt repeats train.txt.  Read as a split, it put
    every train image in two splits, and so out of every comparison: the check compared test with
    nothing.  ``init`` leaves the copy out and says so; the check finds a test image copied from train."""
    _voc(tmp_path)
    main = tmp_path / "VOC2012" / "ImageSets" / "Main"
    (main / "val.txt").write_text((main / "train.txt").read_text())
    images = tmp_path / "VOC2012" / "JPEGImages"
    (images / "2008_000007.jpg").write_bytes((images / "2008_000002.jpg").read_bytes())  # test = a train image
    layout = recognise.detect(tmp_path)
    policy = recognise.policy_text(layout)
    assert "    train: " in policy and "    test: " in policy and "    val: " not in policy, policy
    said = "\n".join(layout.warnings)
    assert ("VOC2012/ImageSets/Main/val.txt names the same 5 images as VOC2012/ImageSets/Main/train.txt: "
            "not read as split val") in said, said
    write_policy(tmp_path, policy)
    code, out, err = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "-j", "1", "--format", "json")
    assert code == EXIT_LEAKS, err
    findings = json.loads(out)["findings"]
    assert not [f for f in findings if f["kind"] == "ambiguous-file"]
    assert any(f["kind"] == "identical-file" and {m["split"] for m in f["members"]} == {"train", "test"}
               for f in findings), findings


def test_init_takes_a_split_folder_beside_the_lists_and_the_check_compares_it(tmp_path: Path, run_cli) -> None:
    """held-out probe 12 (NEU-DET in a YOLOv3 repository): ``train.txt`` and ``val.txt`` name crops of
    ``NEU-DET/IMAGES/``, and the test script reads ``test/images/``, copies of listed train crops.
    ``init`` wrote the two lists alone, and the check compared nothing with the test folder; lists
    could not name it, and a glob beside ``lists:`` is refused.  Now ``test: {images: test}``."""
    for n in range(6):
        _jpeg(tmp_path / "NEU-DET" / "IMAGES" / f"inclusion_{n}.jpg", n)
    (tmp_path / "NEU-DET" / "train.txt").write_text("".join(f"e:/p/NEU-DET/IMAGES/inclusion_{n}.jpg\n" for n in range(4)))
    (tmp_path / "NEU-DET" / "val.txt").write_text("e:/p/NEU-DET/IMAGES/inclusion_4.jpg\n")
    (tmp_path / "test" / "images").mkdir(parents=True)
    for n in (1, 5):  # a listed train crop, and the unlisted one
        (tmp_path / "test" / "images" / f"inclusion_{n}.jpg").write_bytes(
            (tmp_path / "NEU-DET" / "IMAGES" / f"inclusion_{n}.jpg").read_bytes())
    layout = recognise.detect(tmp_path)
    assert '    test: {images: "test"}\n' in layout.splits_yaml, layout.splits_yaml
    assert "split folder test/: 2 images in test" in "\n".join(layout.found)
    assert not [w for w in layout.warnings if "test/" in w], layout.warnings
    write_policy(tmp_path, recognise.policy_text(layout))
    policy = load(tmp_path / "leakcheck.yaml")
    assert {r.path: r.split for r in scan(policy).records}["test/images/inclusion_5.jpg"] == "test"
    code, out, err = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "-j", "1", "--format", "json")
    assert code == EXIT_LEAKS, err
    findings = json.loads(out)["findings"]
    assert any(f["kind"] == "identical-file" and {m["path"] for m in f["members"]} ==
               {"NEU-DET/IMAGES/inclusion_1.jpg", "test/images/inclusion_1.jpg"} for f in findings), findings
    assert not [f for f in findings if f["kind"] in ("not-examined", "missing-file")], findings


@pytest.mark.parametrize("spec, key, message", [
    ("{train: nope.txt}", "splits.lists.train.file", "split list 'nope.txt' not found"),
    ("{train: {file: a.txt, images: ../x}}", "splits.lists.train.images", "outside the policy's folder"),
    ("{train: {file: a.txt, colour: x}}", "splits.lists.train.colour", "unknown key"),
    ("{train: a.txt, test: {images: gone}}", "splits.lists.test.images", "image folder 'gone' not found"),
    ("{train: a.txt, test: {}}", "splits.lists.test.file", "or `images:` alone for a split that is a folder"),
    ("[a.txt]", "splits.lists", "expected a mapping of split name to list file"),
])
def test_list_policy_errors_name_the_key(tmp_path: Path, spec: str, key: str, message: str) -> None:
    (tmp_path / "a.txt").write_text("x.jpg\n")
    write_policy(tmp_path, f"version: 1\nsplits:\n  lists: {spec}\n")
    with pytest.raises(PolicyError) as err:
        load(tmp_path / "leakcheck.yaml")
    assert message in str(err.value) and key in str(err.value)


def test_an_overlong_line_is_refused_naming_it(tmp_path: Path) -> None:
    (tmp_path / "train.txt").write_text("a.jpg\n" + "y" * 5000 + "\n")
    (tmp_path / "test.txt").write_text("b.jpg\n")
    write_policy(tmp_path, "version: 1\nsplits:\n  lists: {train: train.txt, test: test.txt}\n")
    with pytest.raises(PolicyError) as err:
        scan(load(tmp_path / "leakcheck.yaml"))
    assert "line 2 is over 4,096 characters long" in str(err.value) and "train.txt" in str(err.value)


def test_bare_lists_of_ids_beside_an_image_folder(tmp_path: Path) -> None:
    """`train.txt`, `val.txt` at the root naming ids of `images/*.png`: the folder is found, not guessed as root."""
    for n in range(6):
        _jpeg(tmp_path / "images" / f"s{n}.png", n)
    (tmp_path / "README.md").write_text("data\n")
    (tmp_path / "train.txt").write_text("s0\ns1\ns2\ns3\n")
    (tmp_path / "val.txt").write_text("s4\ns5\n")
    layout = recognise.detect(tmp_path)
    assert layout.splits_yaml == ('splits:\n  lists:\n    train: {file: "train.txt", images: "images"}\n'
                                  '    val: {file: "val.txt", images: "images"}\n')
    write_policy(tmp_path, recognise.policy_text(layout))
    assert {r.path: r.split for r in scan(load(tmp_path / "leakcheck.yaml")).records}["images/s5.png"] == "val"


def test_oxford_pets_lists_of_ids_with_class_columns(tmp_path: Path) -> None:
    """`annotations/trainval.txt` lines `Abyssinian_100 1 1 1` name `images/Abyssinian_100.jpg`."""
    names = [f"{breed}_{n}" for breed in ("Abyssinian", "beagle") for n in range(100, 104)]
    for k, name in enumerate(names):
        _jpeg(tmp_path / "images" / f"{name}.jpg", k)
    (tmp_path / "annotations").mkdir()
    (tmp_path / "annotations" / "trainval_list.txt").write_text("".join(f"{n} 1 1 1\n" for n in names[::2]))
    (tmp_path / "annotations" / "test_list.txt").write_text("# id class species breed\n"
                                                            + "".join(f"{n} 2 2 1\n" for n in names[1::2]))
    layout = recognise.detect(tmp_path)
    assert layout.splits_yaml == ('splits:\n  lists:\n'
                                  '    train: {file: "annotations/trainval_list.txt", images: "images"}\n'
                                  '    test: {file: "annotations/test_list.txt", images: "images"}\n')
    assert {r.split for r in layout_records(tmp_path, layout) if "beagle_101" in r.path} == {"test"}


def layout_records(root: Path, layout: recognise.Layout) -> tuple:
    write_policy(root, recognise.policy_text(layout))
    return scan(load(root / "leakcheck.yaml")).records


def test_a_list_naming_no_image_on_disk_is_a_policy_error_naming_its_key(tmp_path: Path, run_cli) -> None:
    _jpeg(tmp_path / "a.jpg", 1)
    (tmp_path / "train.txt").write_text("a.jpg\n")
    (tmp_path / "test.txt").write_text("gone.jpg\n")
    write_policy(tmp_path, "version: 1\nsplits:\n  lists:\n    train: train.txt\n    test: test.txt\n")
    code, _, err = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "-j", "1")
    assert code == 2 and "split `test` has no images" in err and "splits.lists.test" in err


# --------------------------------------------------------------------------
# Lines written on another machine (probe 2, cones): matched by their tail under root


def _darknet(root: Path) -> None:
    """A Colab darknet export: obj/ holds every image, test/ a copy of test's; the lists name
    `/content/proj/<split>/<name>`, a folder that exists on no machine but Colab's."""
    for n in range(7):
        _jpeg(root / "obj" / f"im{n}.jpg", n)
    (root / "test").mkdir()
    for n in (4, 5, 6):
        (root / "test" / f"im{n}.jpg").write_bytes((root / "obj" / f"im{n}.jpg").read_bytes())
    (root / "train.txt").write_text("".join(f"/content/proj/train/im{n}.jpg\n" for n in (0, 1, 2)))
    (root / "valid.txt").write_text("/content/proj/valid/im3.jpg\n")
    # im6 lives in obj/ and test/, and `other/` is nowhere: its name alone is ambiguous, so it matches none.
    (root / "test.txt").write_text("/content/proj/test/im4.jpg\n/content/proj/test/im5.jpg\n"
                                   "/content/proj/other/im6.jpg\n")


def test_a_bare_name_the_folder_lacks_stays_missing(tmp_path: Path) -> None:
    """Only a path is matched by its tail: a VOC id whose JPEG is gone is not its mask elsewhere."""
    for n in range(3):
        _jpeg(tmp_path / "JPEGImages" / f"2008_00000{n}.jpg", n)
    _jpeg(tmp_path / "SegmentationClass" / "2008_000009.png", 9)
    main = tmp_path / "ImageSets" / "Main"
    main.mkdir(parents=True)
    (main / "train.txt").write_text("2008_000000\n2008_000001\n2008_000009\n")
    (main / "test.txt").write_text("2008_000002\n")
    inv = scan(load(write_policy(tmp_path, recognise.policy_text(recognise.detect(tmp_path)))))
    assert ("missing", "JPEGImages/2008_000009") in {(i.kind, i.path) for i in inv.issues}
    assert "SegmentationClass/2008_000009.png" not in {r.path for r in inv.records}


def test_colab_paths_are_matched_by_their_tail_under_root(tmp_path: Path) -> None:
    _darknet(tmp_path)
    layout = recognise.detect(tmp_path)
    assert layout.splits_yaml == ('splits:\n  lists:\n    train: "train.txt"\n    val: "valid.txt"\n'
                                  '    test: "test.txt"\n')
    found = "\n".join(layout.found)
    assert "split list train.txt: 3 images in train; 3 lines name a path not under root" in found
    assert "1 line ends like several files under root (e.g. '/content/proj/other/im6.jpg') and matches none" in found
    inv = scan(load(write_policy(tmp_path, recognise.policy_text(layout))))
    splits = {r.path: r.split for r in inv.records}
    # The longest tail naming one file wins: test/im4.jpg, not its copy obj/im4.jpg.
    assert splits == {"obj/im0.jpg": "train", "obj/im1.jpg": "train", "obj/im2.jpg": "train",
                      "obj/im3.jpg": "val", "test/im4.jpg": "test", "test/im5.jpg": "test"}
    issues = {(i.kind, i.path) for i in inv.issues}
    assert ("missing", "/content/proj/other/im6.jpg") in issues  # ambiguous: reported, not guessed
    assert ("unassigned", "obj/im4.jpg") in issues


def test_a_list_line_is_never_looked_up_outside_root(tmp_path: Path) -> None:
    """Lines are the pull request's: `..`, absolute paths and a folder linked out of root can only
    name, by their last components, a file under root; nothing outside is listed or opened."""
    import sys

    outside, root = tmp_path / "outside", tmp_path / "repo"
    _jpeg(outside / "secret.jpg", 1)
    _jpeg(outside / "only_there.jpg", 2)
    _jpeg(root / "images" / "secret.jpg", 3)
    _jpeg(root / "images" / "b.jpg", 4)
    (root / "linked").symlink_to(outside, target_is_directory=True)
    (root / "train.txt").write_text(f"../outside/secret.jpg\n{outside}/only_there.jpg\nlinked/only_there.jpg\n")
    (root / "test.txt").write_text("images/b.jpg\n")
    touched: list[str] = []
    watching = [True]

    def audit(event: str, args: tuple) -> None:
        if watching[0] and event in ("open", "os.scandir", "os.listdir") and args \
                and str(args[0]).startswith(str(outside)):
            touched.append(f"{event} {args[0]}")

    sys.addaudithook(audit)  # a hook cannot be removed: it stops watching when the test ends
    try:
        policy = load(write_policy(root, "version: 1\nsplits:\n  lists: {train: train.txt, test: test.txt}\n"))
        found = sources.read(policy.split_sources, root)
        records = {r.path for r in scan(policy).records}
    finally:
        watching[0] = False
    assert touched == []
    assert {p: e[0][0] for p, e in found.rows.items() if not p.startswith(("/", "linked/"))} == {
        "images/secret.jpg": "train", "images/b.jpg": "test"}
    assert records == {"images/secret.jpg", "images/b.jpg"}
