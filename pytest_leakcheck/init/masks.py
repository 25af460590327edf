"""Label masks beside the data: ``init`` proposes to ignore them, since they are annotations, not images.

Segmentation datasets ship one mask per image, named like it: Oxford-IIIT Pet's
``annotations/trimaps/Abyssinian_1.png`` for ``images/Abyssinian_1.jpg``, Pascal VOC's
``SegmentationClass/``, ``train/masks/`` beside ``train/images/``, or ``<name>_mask.png`` beside
``<name>.jpg`` in one folder (Roboflow's semantic-segmentation export, Kaggle's Carvana).
Read as data they do harm beyond noise: in a split folder they are compared with each other,
and blobs on a plain ground look alike, so the calibration of every detector rises to them and
a mirrored or re-compressed photo copied into test was no error at all (a 200-photo set with a
mask beside each photo: both missed; with the masks ignored, both errors at 0.9999).

Files are taken for masks when

- they are named like images in another folder, or like another image of their folder plus a
  mask word (``_mask``, ``_label``, ``_gt``, ``_segmentation``...), for most of them
  (:data:`NAMED_LIKE`);
- every sampled one (:data:`SAMPLE`) holds few distinct values (:data:`MAX_VALUES`): a class
  index or a palette.  A photograph has thousands, so a copy of the photos left beside them
  is not taken for masks, nor the photos beside the masks: the check still reads them.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

#: Share of a folder's files named like images elsewhere for it to be a folder of masks.
NAMED_LIKE = 0.8
#: Files read to see that they are masks.
SAMPLE = 8
#: A mask holds a class index (trimaps: 3 values; VOC: 21 classes and a border) or a colour per class.
MAX_VALUES = 64
#: Decompression bound of a sampled file (the policy's default ``files.max_pixels``: no policy yet).
MAX_PIXELS = 178_956_970
#: ``<image stem><sep><word>``: a mask named after its image in the same folder.
_SUFFIX = re.compile(r"^(?P<base>.+?)(?P<tail>[_-](?:mask|masks|label|labels|gt|seg|segmentation|trimap|annotation))$",
                     re.IGNORECASE)


@dataclass(frozen=True)
class Masks:
    """Globs to ignore (``<folder>/**`` or ``<folder>/*_mask.png``) and how many files they hold."""

    globs: tuple[str, ...] = ()
    images: int = 0
    #: The masks themselves: left out of what init counts and reads ids from, as the check leaves them out.
    files: frozenset[str] = frozenset()


def find(root: Path, files: Iterable[str]) -> Masks:
    """The label masks among ``files`` (relative to ``root``), as globs a policy can ignore."""
    folders: dict[str, list[str]] = defaultdict(list)
    for path in files:
        folders[_folder(path)].append(path)
    homes: dict[str, set[str]] = defaultdict(set)  # stem -> folders holding a file of that stem
    for folder, paths in folders.items():
        for p in paths:
            homes[_stem(p)].add(folder)
    found: list[tuple[str, list[str]]] = []
    for folder, paths in sorted(folders.items()):
        stems = {_stem(p) for p in paths}
        suffixed: dict[str, list[str]] = defaultdict(list)  # "_mask.png" -> files
        for p in paths:
            m = _SUFFIX.match(_stem(p))
            if m and m["base"] in stems:
                suffixed[m["tail"] + os.path.splitext(p)[1]].append(p)
        for tail, named in sorted(suffixed.items()):
            if _masks(root, named):
                found.append((f"{folder}/*{tail}" if folder else f"*{tail}", named))
        if folder and not suffixed and sum(_elsewhere(p, folder, homes) for p in paths) >= NAMED_LIKE * len(paths) \
                and _masks(root, paths):
            found.append((f"{folder}/**", paths))
    return Masks(tuple(g for g, _ in found), sum(len(p) for _, p in found), frozenset(p for _, ps in found for p in ps))


def _folder(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def _stem(path: str) -> str:
    return os.path.splitext(path.rsplit("/", 1)[-1])[0]


def _elsewhere(path: str, folder: str, homes: dict[str, set[str]]) -> bool:
    """Whether an image of another folder has the file's name (its mask word dropped)."""
    stem = _stem(path)
    m = _SUFFIX.match(stem)
    return any(homes.get(s, set()) - {folder} for s in (stem, m["base"] if m else stem))


def _masks(root: Path, paths: list[str]) -> bool:
    """Whether every sampled file holds at most :data:`MAX_VALUES` distinct values."""
    return all(_few_values(root / p) for p in paths[:: max(1, len(paths) // SAMPLE)][:SAMPLE])


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
