"""Anything the check does not examine is named in the report, never silently dropped.

Per case (docs/json-report.md, kind `not-examined`):
- a folder that cannot be listed (mode 000) or a path longer than PATH_MAX:
  a `not-examined` finding, error-level (`files.unreadable`) when it lies in a
  split, since it may hide a leak;
- a hidden file or folder: examined like any other (torchvision's ImageFolder
  loads them), only version-control folders are not walked;
- a split that `pairs.compare` leaves out of every pair: a `not-examined` warning;
- the pages after the first of a multi-page TIFF: a `not-examined` warning per folder.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_leakcheck import EXIT_LEAKS, check
from pytest_leakcheck.render import formats, render
from pytest_leakcheck.testing import photo, save

from ..conftest import write_policy

GLOBS = "version: 1\nsplits: {train: [train/**], test: [test/**]}\n"


def _tree(root: Path) -> Path:
    for i in range(3):
        save(photo(i), root / f"train/t{i}.jpg")
        save(photo(40 + i), root / f"test/e{i}.jpg")
    return write_policy(root, GLOBS)


def _unprivileged() -> list[str]:
    """A command prefix under which a mode-000 folder cannot be read, even by root."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: a mode-000 folder stays readable")
    return ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]


def _cli_json(policy: Path, prefix: list[str] | None = None) -> tuple[int, dict]:
    out = policy.parent.parent / "report.json"
    proc = subprocess.run([*(prefix or []), sys.executable, "-m", "pytest_leakcheck", "check", "--policy",
                           str(policy), "--no-cache", "-j", "1", "--format", "json", "-o", str(out)],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(out.read_text())


def _not_examined(report: dict) -> list[tuple[str, str, str]]:
    return [(f["severity"], f["members"][0]["path"] if f["members"] else "", f["message"])
            for f in report["findings"] if f["kind"] == "not-examined"]


def test_a_folder_that_cannot_be_listed_is_named_and_fails(tmp_path: Path) -> None:
    """A copy in a mode-000 folder under test was skipped without a word: exit 0."""
    policy = _tree(tmp_path / "ds")
    locked = tmp_path / "ds/test/locked"
    shutil.copyfile(tmp_path / "ds/train/t0.jpg", tmp_path / "ds/test/locked-copy.jpg")
    locked.mkdir()
    os.replace(tmp_path / "ds/test/locked-copy.jpg", locked / "copy.jpg")
    locked.chmod(0)
    try:
        code, report = _cli_json(policy, _unprivileged())
    finally:
        locked.chmod(0o755)
    assert code == EXIT_LEAKS
    ((severity, path, message),) = _not_examined(report)
    assert (severity, path) == ("error", "test/locked")
    assert "cannot list this folder" in message and "Permission denied" in message


def _deep(root: Path, depth: int) -> str:
    """Folders ``d{k}_xxx...`` nested ``depth`` deep below ``root``, made through folder descriptors
    (a path longer than PATH_MAX cannot be opened in one piece); returns the first path too long."""
    name = "n" * 250
    fd = os.open(root, os.O_RDONLY)
    parts = []
    try:
        for k in range(depth):
            os.mkdir(f"{name}{k}", dir_fd=fd)
            nxt = os.open(f"{name}{k}", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nxt
            parts.append(f"{name}{k}")
        with open(os.open("x.jpg", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "wb") as fh:
            fh.write((root.parent / "train/t0.jpg").read_bytes())
    finally:
        os.close(fd)
    return "/".join(parts)


def test_a_path_deeper_than_path_max_is_named_and_fails(tmp_path: Path) -> None:
    policy = _tree(tmp_path / "ds")
    deep = _deep(tmp_path / "ds/test", 20)  # 20 x 251 bytes: over Linux's 4,096
    report = check(policy, use_cache=False, jobs=1)
    found = [f for f in report.findings if f.kind == "not-examined"]
    assert len(found) == 1 and found[0].severity == "error"
    assert ("test/" + deep).startswith(found[0].members[0].path) and found[0].members[0].split == "test"
    assert "File name too long" in found[0].message
    assert report.exit_code == EXIT_LEAKS


@pytest.mark.parametrize("hidden", ["train/.copy.jpg", "train/.ipynb_checkpoints/copy.jpg"])
def test_a_hidden_copy_is_examined(tmp_path: Path, hidden: str) -> None:
    """A hidden file (or a file in a hidden folder), which ImageFolder loads, once passed unseen."""
    policy = _tree(tmp_path / "ds")
    (tmp_path / "ds" / hidden).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(tmp_path / "ds/test/e1.jpg", tmp_path / "ds" / hidden)
    report = check(policy, use_cache=False, jobs=1)
    assert report.exit_code == EXIT_LEAKS
    assert {m.path for f in report.errors for m in f.members} == {hidden, "test/e1.jpg"}


def test_version_control_folders_are_not_walked(tmp_path: Path) -> None:
    policy = _tree(tmp_path / "ds")
    shutil.copyfile(tmp_path / "ds/test/e1.jpg", tmp_path / "ds/.git-copy.jpg")
    (tmp_path / "ds/train/.git").mkdir()
    shutil.copyfile(tmp_path / "ds/test/e1.jpg", tmp_path / "ds/train/.git/blob.jpg")
    report = check(policy, use_cache=False, jobs=1)
    assert [(f.kind, f.members[0].path) for f in report.findings] == [("unassigned-file", ".git-copy.jpg")]


def test_a_split_left_out_of_every_pair_is_a_warning(tmp_path: Path) -> None:
    """`pairs.compare: [train~test]` with a split `extra`: a copy placed there passed with no warning."""
    rows = ["path,split"]
    for i in range(3):
        save(photo(i), tmp_path / f"img/t{i}.jpg")
        save(photo(40 + i), tmp_path / f"img/e{i}.jpg")
        rows += [f"img/t{i}.jpg,train", f"img/e{i}.jpg,test"]
    shutil.copyfile(tmp_path / "img/e0.jpg", tmp_path / "img/copy.jpg")
    rows.append("img/copy.jpg,extra")
    (tmp_path / "splits.csv").write_text("\n".join(rows) + "\n")
    policy = write_policy(tmp_path, "version: 1\nsplits: {manifest: splits.csv}\npairs: {compare: [train~test]}\n")
    report = check(policy, use_cache=False, jobs=1)
    (found,) = [f for f in report.findings if f.kind == "not-examined"]
    assert found.severity == "warning" and found.members == ()
    assert "split extra (1 images) is in no pair of `pairs.compare`" in found.message
    for fmt in formats():  # every renderer names it
        assert "extra" in render(report, fmt, root=tmp_path), fmt


def test_the_later_pages_of_a_multi_page_tiff_are_named_not_failing(tmp_path: Path) -> None:
    """A fax or scanned document kept as one TIFF of several pages: the check decodes the first
    page only, so a train page filed as page 2 of a test TIFF was compared with nothing, silently."""
    from PIL import Image

    _tree(tmp_path)
    first = Image.open(tmp_path / "test/e0.jpg").convert("1")
    second = Image.open(tmp_path / "train/t1.jpg").convert("1")
    first.save(tmp_path / "test/fax.tif", compression="group4", save_all=True, append_images=[second, second])
    first.save(tmp_path / "test/one.tif", compression="group4")
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    (f,) = [f for f in report.findings if f.kind == "not-examined"]
    assert f.severity == "warning" and [m.path for m in f.members] == ["test/fax.tif"]
    assert "a TIFF of 3 pages: only the first page of each is checked" in f.message
    assert not report.failing


def test_vector_and_icon_files_beside_pngs_are_named(tmp_path: Path) -> None:
    """An icon set ships SVGs (and .ico files) beside its PNGs: each folder of them is named, an
    error inside a split; an SVG is to be rasterised, since listing its suffix cannot make it read."""
    policy = _tree(tmp_path)
    (tmp_path / "train/t0.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"/>')
    (tmp_path / "test/favicon.ico").write_bytes(b"\x00\x00\x01\x00" + bytes(16))
    report = check(policy, use_cache=False, jobs=1)
    unseen = {f.members[0].path: f for f in report.findings if f.kind == "not-examined" and f.members}
    assert set(unseen) == {"train/t0.svg", "test/favicon.ico"}, report.findings
    assert all(f.severity == "error" for f in unseen.values())
    assert "rasterise to PNG" in unseen["train/t0.svg"].message
    assert "add .ico to it" in unseen["test/favicon.ico"].message
    assert "list an image format Pillow reads under `files.extensions`" in render(report, "text")
