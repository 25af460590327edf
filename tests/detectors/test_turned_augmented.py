"""An export augmented by turning: most pictures have flipped and turned, re-contrasted versions.

A held-out Roboflow export of brain MRI slices (issue 37, docs/field.md) held flipped, turned and
re-contrasted versions of its pictures, some uploaded twice under two names.  Its name parts
(``no*``, ``y*``) failed the look-alike part test on those versions, and 129 of the 131 held-out
images with a copy in another split were warnings only.  The data here is built from numpy and Pillow; each test fails on the code
before the change.
"""

from __future__ import annotations

from pathlib import Path

from PIL import Image, ImageEnhance

from pytest_leakcheck import check
from pytest_leakcheck.testing import photo, save

from ..conftest import write_policy

POLICY = """\
version: 1
splits: {train: [train/**], test: [test/**]}
augmentations: [hflip, vflip, rot90, rot180, rot270, transpose, transverse]
"""


def _versions(img: Image.Image) -> list[Image.Image]:
    """What an export that augments by turning keeps of one picture: it, flipped, turned, re-contrasted."""
    return [img, ImageEnhance.Contrast(img.transpose(Image.Transpose.FLIP_TOP_BOTTOM)).enhance(1.4),
            ImageEnhance.Brightness(img.transpose(Image.Transpose.ROTATE_180)).enhance(0.8)]


def _export(root: Path, pictures: int = 120, leaked: int = 12) -> list[tuple[str, str]]:
    """Each train picture in three versions; test holds other pictures and, for ``leaked`` of them, a
    flipped re-contrasted copy of a train picture.  Returns the (train, test) copy pairs."""
    for k in range(pictures):
        for n, version in enumerate(_versions(photo(5000 + k, (96, 96)))):
            save(version, root / "train" / f"scan{k:03d}_v{n}.jpg", quality=90)
    for k in range(40):
        save(photo(9000 + k, (96, 96)), root / "test" / f"scan{500 + k:03d}.jpg", quality=90)
    pairs = []
    for k in range(leaked):
        copy = ImageEnhance.Contrast(photo(5000 + k, (96, 96)).transpose(Image.Transpose.FLIP_LEFT_RIGHT)).enhance(1.2)
        save(copy, root / "test" / f"scan{600 + k:03d}.jpg", quality=85)
        pairs.append((f"train/scan{k:03d}_v0.jpg", f"test/scan{600 + k:03d}.jpg"))
    return pairs


def test_copies_in_an_export_augmented_by_turning_are_errors(tmp_path: Path) -> None:
    pairs = _export(tmp_path)
    report = check(write_policy(tmp_path, POLICY))
    # The upside-down impostors that met a version of themselves are turned copies, not impostors.
    assert report.stats["aligned"]["turned_copies"] >= 100, report.stats["aligned"]
    errors = [{m.path for m in f.members} for f in report.findings if f.severity == "error"]
    found = [p for p in pairs if any(set(p) <= e for e in errors)]
    assert len(found) == len(pairs), (found, errors)
    # Nothing else crosses the splits at error: the other test pictures are distinct.
    crossing = [e for e in errors if {p.split("/")[0] for p in e} == {"train", "test"}]
    assert all(any(set(p) <= e for p in pairs) for e in crossing), crossing
