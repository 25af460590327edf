"""Folders of label masks beside the data: ``init`` proposes to ignore them, since they are annotations, not images.

Segmentation datasets ship one mask per image, named like it: Oxford-IIIT Pet's
``annotations/trimaps/Abyssinian_1.png`` for ``images/Abyssinian_1.jpg``, Pascal VOC's
``SegmentationClass/2007_000032.png``, CUB's ``segmentations/``.  No split source lists them,
so the check reported the whole folder as files in no split (a warning on the first run).
A folder is taken for masks when

- it holds no image of a split, and most of its file names (:data:`NAMED_LIKE`) are the
  names of split images with another extension;
- every sampled file (:data:`SAMPLE`) has few distinct values (:data:`MAX_VALUES`): a class
  index or a palette.  A photograph has thousands, so a copy of the data left beside it is
  not taken for masks: the check still reports it.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

#: Share of a folder's files named like split images for it to be a folder of masks.
NAMED_LIKE = 0.8
#: Files of a folder read to see that they are masks.
SAMPLE = 8
#: A mask holds a class index (trimaps: 3 values; VOC: 21 classes and a border) or a colour per class.
MAX_VALUES = 64
#: Decompression bound of a sampled file (the policy's default ``files.max_pixels``: no policy yet).
MAX_PIXELS = 178_956_970


@dataclass(frozen=True)
class Masks:
    """Globs to ignore (``<folder>/**``, one a folder of masks) and how many files they hold."""

    globs: tuple[str, ...] = ()
    images: int = 0


def find(root: Path, files: Iterable[str], assigned: Iterable[str]) -> Masks:
    """The folders under ``root`` holding only masks of the images a split holds (``assigned``)."""
    in_split = set(assigned)
    stems = {_stem(p) for p in in_split}
    folders: dict[str, list[str]] = defaultdict(list)
    for path in files:
        folders[path.rsplit("/", 1)[0] if "/" in path else ""].append(path)
    globs, images = [], 0
    for folder, paths in sorted(folders.items()):
        if not folder or any(p in in_split for p in paths):
            continue
        if sum(_stem(p) in stems for p in paths) < NAMED_LIKE * len(paths):
            continue
        if all(_few_values(root / p) for p in paths[:: max(1, len(paths) // SAMPLE)][:SAMPLE]):
            globs.append(f"{folder}/**")
            images += len(paths)
    return Masks(tuple(globs), images)


def _stem(path: str) -> str:
    return os.path.splitext(path.rsplit("/", 1)[-1])[0]


def _few_values(path: Path) -> bool:
    """Whether the image holds at most :data:`MAX_VALUES` distinct values (False when it cannot be read)."""
    from PIL import Image

    try:
        with Image.open(path) as im:
            if im.width * im.height > MAX_PIXELS:
                return False
            return im.getcolors(MAX_VALUES) is not None
    except Exception:  # noqa: BLE001 - an unreadable file is not taken for a mask; the check reports it
        return False
