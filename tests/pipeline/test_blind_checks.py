"""Issue 10, class 3: a check that sees nothing fails (exit 2); a link leaving the root is a finding."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_leakcheck import detectors, render
from pytest_leakcheck.pipeline.run import check
from pytest_leakcheck.errors import EXIT_LEAKS, EXIT_USAGE
from pytest_leakcheck.testing import photo, save

GLOBS = "version: 1\nsplits: {train: [train/**], test: [test/**]}\n"


def _images(root: Path) -> None:
    save(photo(1), root / "train/a.jpg")
    save(photo(2), root / "train/b.jpg")
    save(photo(3), root / "test/c.jpg")


def _coco(images: list[str]) -> str:
    return json.dumps({"images": [{"id": i, "file_name": n} for i, n in enumerate(images)]})


def _all_off() -> str:
    return "".join(f"  {d.section}: {{severity: off}}\n" for d in detectors.registry())


#: name -> (files to write besides the images, policy, key the error must name)
BLIND: dict[str, tuple[dict[str, str], str, str]] = {
    "glob_typo": ({}, "version: 1\nsplits: {train: [train/**], test: [tset/**]}\n", "splits.test"),
    "every_split_empty": ({}, "version: 1\nsplits: {train: [trian/**], test: [tset/**]}\n", "splits.train"),
    "only_pair_has_an_empty_side": (
        {}, "version: 1\nsplits: {train: [train/**], val: [val/**], test: [test/**]}\n"
            "pairs: {compare: [train~val], within_split: off}\n", "splits.val"),
    "header_only_manifest": ({"splits.csv": "path,split\n"}, "version: 1\nsplits: {manifest: splits.csv}\n",
                             "splits.manifest"),
    "manifest_rows_all_missing": ({"splits.csv": "path,split\ngone/a.jpg,train\ngone/b.jpg,test\n"},
                                  "version: 1\nsplits: {manifest: splits.csv}\n", "splits.manifest"),
    "ignore_excludes_everything": ({}, GLOBS + "ignore: ['**/*.jpg']\n", "ignore"),
    "compare_is_empty": ({}, GLOBS + "pairs: {compare: []}\n", "pairs.compare"),
    "one_split_within_off": ({}, "version: 1\nsplits: {train: ['**']}\npairs: {within_split: off}\n", "pairs"),
    "coco_without_rows": ({"tr.json": _coco([]), "te.json": _coco([])},
                          "version: 1\nsplits: {coco: {train: tr.json, test: te.json}}\n", "splits.coco.train"),
    "metadata_without_rows": ({"metadata.csv": "file_name,split\n"}, "version: 1\nsplits: {metadata: metadata.csv}\n",
                              "splits.metadata"),
    "every_detector_off": ({}, GLOBS + "detectors:\n" + _all_off(), "detectors"),
}


@pytest.mark.parametrize("case", sorted(BLIND))
def test_check_over_nothing_exits_2(tmp_path: Path, run_cli: Callable, case: str) -> None:
    """Each form of a check that compares nothing is a policy error naming the policy file, the key and a fix."""
    extra, policy, key = BLIND[case]
    _images(tmp_path)
    for name, text in extra.items():
        (tmp_path / name).write_text(text)
    path = tmp_path / "leakcheck.yaml"
    path.write_text(policy)
    code, out, err = run_cli("check", "--policy", str(path), "--no-cache")
    assert code == EXIT_USAGE, out + err
    assert str(path) in err
    assert f"`{key}`:" in err
    assert err.rstrip().endswith(")")  # the fix, in parentheses, closes the message
    assert "Traceback" not in err


def test_the_same_datasets_pass_once_the_policy_sees_them(tmp_path: Path, run_cli: Callable) -> None:
    """The rule is about seeing nothing, not about these datasets: the plain policy passes."""
    _images(tmp_path)
    (tmp_path / "leakcheck.yaml").write_text(GLOBS)
    code, out, err = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "--no-cache")
    assert code == 0, out + err


def _linked_copy(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "repo", tmp_path / "elsewhere"
    _images(root)
    save(photo(1), outside / "x.jpg")  # the very image of train/a.jpg, out of reach
    (root / "test/linked.jpg").symlink_to(outside / "x.jpg")
    return root, outside


@pytest.mark.parametrize(("severity", "exit_code"), [(None, EXIT_LEAKS), ("warning", 0), ("off", 0)])
def test_link_leaving_the_root_is_an_error_finding(tmp_path: Path, severity: str | None, exit_code: int) -> None:
    """A file link out of root is not followed and not skipped: an `outside-root` finding, error by default."""
    root, _ = _linked_copy(tmp_path)
    files = f"files: {{outside_root: {severity}}}\n" if severity else ""
    (root / "leakcheck.yaml").write_text(GLOBS + files)
    report = check(root / "leakcheck.yaml", use_cache=False)
    found = [f for f in report.findings if f.kind == "outside-root"]
    assert report.exit_code == exit_code
    if severity == "off":
        assert found == []
        return
    assert [(f.severity, f.members[0].path, f.members[0].split) for f in found] == [
        (severity or "error", "test/linked.jpg", "test")]
    assert "outside root" in found[0].message
    for fmt in render.formats():  # every renderer knows the kind
        text = render.render(report, fmt)
        assert "linked.jpg" in text, fmt


def test_split_folder_linked_outside_the_root_names_the_link(tmp_path: Path, run_cli: Callable) -> None:
    """A split folder that is a link out of root: the check fails and names the link, never passes."""
    root, outside = tmp_path / "repo", tmp_path / "elsewhere"
    save(photo(1), root / "train/a.jpg")
    save(photo(1), outside / "test/a.jpg")
    (root / "test").symlink_to(outside / "test", target_is_directory=True)
    (root / "leakcheck.yaml").write_text(GLOBS)
    code, out, err = run_cli("check", "--policy", str(root / "leakcheck.yaml"), "--no-cache")
    assert code == EXIT_USAGE, out + err
    assert "`splits.test`: split `test` has no images: `test` is a symbolic link out of root" in err
    # A linked folder inside a split that has other images: an error finding naming the folder link.
    save(photo(5), root / "test2/b.jpg")
    (root / "test2/more").symlink_to(outside / "test", target_is_directory=True)
    (root / "leakcheck.yaml").write_text("version: 1\nsplits: {train: [train/**], test: [test2/**]}\n")
    code, out, err = run_cli("check", "--policy", str(root / "leakcheck.yaml"), "--no-cache", "--format", "json")
    assert code == EXIT_LEAKS, out + err
    found = [f for f in json.loads(out)["findings"] if f["kind"] == "outside-root"]
    assert [(f["severity"], [m["path"] for m in f["members"]]) for f in found] == [
        ("error", ["test"]), ("error", ["test2/more"])]


def test_a_split_of_an_unread_format_names_the_format(tmp_path: Path, run_cli: Callable) -> None:
    """A split whose files are all of a format `files.extensions` leaves out is no glob typo: the
    error names a file and the fix (held out: GTSRB's .ppm signs, once unread, were "no image")."""
    save(photo(1), tmp_path / "train/a.jpg")
    (tmp_path / "test").mkdir()
    (tmp_path / "test/c.jxl").write_bytes(b"\xff\x0a" + bytes(64))
    (tmp_path / "leakcheck.yaml").write_text(GLOBS)
    code, out, err = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "--no-cache")
    assert code == EXIT_USAGE, out + err
    assert ("split `test` has no images: `test/c.jxl`: this file: an image format "
            "`files.extensions` does not list") in err
    assert "add .jxl to it" in err


def test_netpbm_images_are_read_by_default(tmp_path: Path, run_cli: Callable) -> None:
    """GTSRB ships .ppm signs and the ORL faces .pgm: both are pictures Pillow reads, checked by default."""
    img = photo(1)
    img.save(tmp_path / "train.ppm")
    (tmp_path / "train").mkdir()
    (tmp_path / "train.ppm").rename(tmp_path / "train/a.ppm")
    save(photo(2), tmp_path / "train/b.jpg")
    (tmp_path / "test").mkdir()
    img.convert("L").save(tmp_path / "test/a.pgm")
    (tmp_path / "leakcheck.yaml").write_text(GLOBS)
    code, out, err = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "--no-cache",
                             "--format", "json")
    assert code == EXIT_LEAKS, out + err
    found = json.loads(out)["findings"]
    leaks = [sorted(m["path"] for m in f["members"]) for f in found if f["severity"] == "error"]
    assert ["test/a.pgm", "train/a.ppm"] in leaks, found
