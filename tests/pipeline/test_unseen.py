"""A check that compares little says so, and fails when the data shows splits the policy leaves out.

Probe 2: a policy of train alone beside valid/ and test/ (cavity), and one of test/ alone beside
train.txt and valid.txt (cones), both passed with `0 errors`, exit 0, on data with real leaks.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

from pytest_leakcheck.errors import EXIT_CLEAN, EXIT_LEAKS
from pytest_leakcheck.testing import photo, save

from ..conftest import write_policy

SMALL = (48, 32)


def _images(root: Path, folder: str, n: int, seed: int) -> None:
    for k in range(n):
        save(photo(seed + k, SMALL), root / folder / f"{folder.replace('/', '_')}{k}.jpg")


def _check(run_cli: Callable, root: Path) -> tuple[int, dict, str]:
    code, out, _ = run_cli("check", "--policy", str(root / "leakcheck.yaml"), "-j", "1", "--format", "json")
    _, text, _ = run_cli("check", "--policy", str(root / "leakcheck.yaml"), "-j", "1")
    return code, json.loads(out), text


def _unseen(report: dict) -> list[dict]:
    return [f for f in report["findings"] if f["kind"] == "not-examined"]


def test_one_split_beside_a_split_folder_it_leaves_out_fails(tmp_path: Path, run_cli: Callable) -> None:
    """cavity: `splits: {train: [train/**]}`; valid/ holds a copy of a train image and is in no split."""
    _images(tmp_path, "train", 3, 0)
    _images(tmp_path, "valid", 2, 10)
    shutil.copyfile(tmp_path / "train/train0.jpg", tmp_path / "valid/copy.jpg")
    write_policy(tmp_path, "version: 1\nsplits: {train: [train/**]}\n")
    code, report, text = _check(run_cli, tmp_path)
    assert code == EXIT_LEAKS
    (found,) = _unseen(report)
    assert found["severity"] == "error"
    assert found["message"].startswith("only split train holds images (3): no copy across splits is searched")
    assert "folder named like a split valid/ (3 images), in no split" in found["message"]
    summary = [line for line in text.splitlines() if line.startswith("leakcheck: ")][0]
    assert "; only split train holds images: nothing compared across splits;" in summary


def test_one_split_beside_split_lists_it_does_not_read_fails(tmp_path: Path, run_cli: Callable) -> None:
    """cones: `splits: {test: [test/**]}`; train.txt and valid.txt name obj/'s images."""
    _images(tmp_path, "obj", 4, 0)
    _images(tmp_path, "test", 2, 10)
    (tmp_path / "train.txt").write_text("obj/obj0.jpg\nobj/obj1.jpg\nobj/obj2.jpg\n")
    (tmp_path / "valid.txt").write_text("obj/obj3.jpg\n")
    write_policy(tmp_path, "version: 1\nsplits: {test: [test/**]}\n")
    code, report, text = _check(run_cli, tmp_path)
    assert code == EXIT_LEAKS
    (found,) = _unseen(report)
    assert found["severity"] == "error"
    assert "4 of 6 images are in no split (obj/ 4) and are compared with nothing" in found["message"]
    assert "split lists train.txt, valid.txt not read" in found["message"]
    assert "4 in no split" in text


def test_a_one_split_policy_is_a_warning_and_ignore_silences_the_error(tmp_path: Path, run_cli: Callable) -> None:
    """A policy of one split that exists to find copies within it passes, saying what it does not compare;
    a split folder the policy leaves out on purpose is put in `ignore:`."""
    _images(tmp_path, "train", 3, 0)
    _images(tmp_path, "valid", 2, 10)
    write_policy(tmp_path, "version: 1\nsplits: {train: [train/**]}\nignore: [valid/**]\n")
    code, report, text = _check(run_cli, tmp_path)
    assert code == EXIT_CLEAN
    (found,) = _unseen(report)
    assert found["severity"] == "warning"
    assert found["message"] == ("only split train holds images (3): no copy across splits is searched, only copies "
                                "within it: if the data has other splits, add them to `splits:`")
    assert "only split train holds images: nothing compared across splits" in text


def test_two_splits_covering_most_images_add_nothing(tmp_path: Path, run_cli: Callable) -> None:
    _images(tmp_path, "train", 3, 0)
    _images(tmp_path, "test", 2, 10)
    save(photo(30, SMALL), tmp_path / "stray/x.jpg")
    write_policy(tmp_path, "version: 1\nsplits: {train: [train/**], test: [test/**]}\n")
    code, report, text = _check(run_cli, tmp_path)
    assert code == EXIT_CLEAN and _unseen(report) == []
    assert "nothing compared" not in text and "compared with nothing" not in text
