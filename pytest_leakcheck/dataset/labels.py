"""Each image's class label, which label conflicts are read from (``pipeline/conflicts.py``).

A label comes from the split source's label column when it has one (a table's,
a Hugging Face dataset's: ``sources/``); otherwise from ImageFolder class folders:
``train/shorts/1.jpg`` is ``shorts`` when the images of its split lie one folder
below the split's own folder and the class folders recur across splits, as an
ImageFolder's classes do (date, camera or batch folders mostly do not).  YOLO and
COCO annotations label boxes, not images: they give no image label.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from typing import Any

#: Share of a split's images that must lie one folder below it for its folders to be
#: classes: a stray file beside the class folders does not undo them.
ONE_BELOW = 0.9
#: Share of class names found in more than one split for folders to be classes.
RECUR = 0.5


def of(inv: Any) -> dict[str, str]:
    """path -> label for the inventory's images that have one (``inv``: a ``dataset.inventory.Inventory``)."""
    given: Mapping[str, str] = getattr(inv, "labels", {}) or {}
    if given:
        return {r.path: str(given[r.path]) for r in inv.records if given.get(r.path)}
    return class_folders([(r.path, r.split) for r in inv.records])


def class_folders(files: Sequence[tuple[str, str]]) -> dict[str, str]:
    """path -> class folder of ``(path, split)`` files laid out as an ImageFolder; empty when they are not one."""
    by_split: dict[str, list[str]] = {}
    for path, split in files:
        by_split.setdefault(split, []).append(path)
    out: dict[str, str] = {}
    splits_of: dict[str, set[str]] = {}
    for split, paths in by_split.items():
        found = _one_below(paths)
        out.update(found)
        for label in found.values():
            splits_of.setdefault(label, set()).add(split)
    if len(splits_of) < 2:
        return {}
    if len(by_split) > 1 and sum(len(s) > 1 for s in splits_of.values()) < RECUR * len(splits_of):
        return {}
    return out


def _one_below(paths: Sequence[str]) -> dict[str, str]:
    """The folder right below the split's own folder (the deepest one holding all its images), per image."""
    folders = [posixpath.dirname(p) for p in paths]
    base = posixpath.commonpath(folders) if all(folders) else ""
    depth = len(base.split("/")) if base else 0
    rel = [p.split("/")[depth:] for p in paths]
    if sum(len(r) == 2 for r in rel) < ONE_BELOW * len(paths):
        return {}
    return {p: r[0] for p, r in zip(paths, rel) if len(r) == 2}
