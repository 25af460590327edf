"""Versions of one upload in an augmented export are no impostors of each other (``aligned.uploads``).

An augmented Roboflow export keeps several versions of each upload, named ``<source>_<ext>.rf.<hash>``:
a val picture whose upload also went to train meets three or more of its own versions there, and its
third-best neighbour, meant to stand for an unrelated image, is a copy (``pakcoy`` of
``benchmarks/field.py``: both levels at 1.0, no aligned link at all).  Each test fails on the code
before the change.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
from PIL import Image, ImageEnhance

from pytest_leakcheck import check
from pytest_leakcheck.testing import photo, save

from ...conftest import write_policy

POLICY = """\
version: 1
splits: {train: [train/**], val: [valid/**]}
"""


def _name(source: str, version: int) -> str:
    return f"{source}_jpg.rf.{hashlib.md5(f'{source}/{version}'.encode()).hexdigest()}.jpg"


def _versions(img: Image.Image) -> list[Image.Image]:
    """Four versions an export keeps of one upload: brighter, darker, re-contrasted, re-coloured."""
    return [ImageEnhance.Brightness(img).enhance(1.15), ImageEnhance.Brightness(img).enhance(0.85),
            ImageEnhance.Contrast(img).enhance(1.3), ImageEnhance.Color(img).enhance(0.5)]


def _export(root: Path, uploads_: int = 60, leaked: int = 10) -> list[str]:
    """Each train upload in four versions; val holds 20 other uploads and, for ``leaked`` train uploads,
    a version cropped to 85 % (which no hash matches).  Returns the leaked val names."""
    for k in range(uploads_):
        for n, version in enumerate(_versions(photo(7000 + k, (96, 96)))):
            save(version, root / "train" / _name(f"pic{k:03d}", n), quality=90)
    for k in range(20):
        save(photo(8000 + k, (96, 96)), root / "valid" / _name(f"pic{500 + k:03d}", 0), quality=90)
    out = []
    for k in range(leaked):
        name = _name(f"pic{k:03d}", 9)
        save(photo(7000 + k, (96, 96)).crop((7, 7, 89, 89)).resize((96, 96)), root / "valid" / name, quality=90)
        out.append(f"valid/{name}")
    return out


def test_one_uploads_versions_do_not_set_the_levels(tmp_path: Path) -> None:
    """The leaked val pictures' train versions are left out of the neighbours: the neighbour level is
    where unrelated pictures reach (it was at the copies' 0.97 and more), and every cropped copy is an
    error-level aligned link (they were warnings)."""
    leaked = _export(tmp_path)
    report = check(write_policy(tmp_path, POLICY))
    stats = report.stats["aligned"]
    assert stats["neighbour_level"] < 0.9, stats
    errors = [{m.path for m in f.members} for f in report.findings if f.severity == "error"]
    assert all(any(v in e for e in errors) for v in leaked), (errors, stats)


def test_upload_ids_by_export_name() -> None:
    """One id per upload name (the version's hash and the folder do not count); other names have none."""
    from pytest_leakcheck.detectors.aligned import uploads  # here: the module is new

    paths = ["train/" + _name("pic001", 0), "valid/" + _name("pic001", 3), "train/" + _name("pic002", 0),
             "train/IMG_0001.jpg"]
    got = uploads.ids(paths)
    assert got is not None and got[0] == got[1] != got[2] and got[3] == uploads.NONE
    assert uploads.ids(["a/IMG_0001.jpg"]) is None
    cand = np.array([[1, 2, 3, -1]])
    assert uploads.same(got, np.array([0]), cand).tolist() == [[True, False, False, False]]
