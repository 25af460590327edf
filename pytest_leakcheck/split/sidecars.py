"""The annotation files that travel with the images ``leakcheck split`` moves between split folders.

A detection or document set keeps each image's annotations in a file of the
same name: YOLO's ``train/labels/x.txt`` beside ``train/images/x.jpg``, FUNSD's
``training_data/annotations/x.json`` beside ``training_data/images/x.png``,
LabelMe's ``x.json`` or a VOC ``x.xml`` in the image's own folder.  Moving the
image alone left its annotations in the old split: YOLO then trains the moved
image as background, and the old split holds a label of no image.  So each
moved image takes along the files of its stem in its own folder and in the
folders beside its ``images/`` folder, at the same place below the target.

A file that is itself a listed image is planned on its own, never taken along;
one claimed by two images bound for different places (``x.jpg`` and ``x.png``
beside one ``x.txt``) stays where it is.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path

from .moves import Move

#: The folder name under which a split keeps its images apart from their annotations.
IMAGES_FOLDER = "images"


def beside(root: Path, moves: Sequence[Move], listed: Collection[str]) -> list[Move]:
    """The moves of the annotation files of the images ``moves`` move (paths relative to ``root``)."""
    stems = _Stems(root)
    going = {m.src: os.path.dirname(m.dst) for m in moves}
    twins: dict[tuple[str, str], list[str]] = {}  # listed images by folder and stem, built once
    for p in listed:
        folder, name = os.path.split(p)
        twins.setdefault((folder, name.rsplit(".", 1)[0]), []).append(p)
    claimed: dict[str, str | None] = {}
    for m in moves:
        if not _sole_claim(m, going, twins):
            continue  # ``x.jpg`` leaves, ``x.png`` stays or goes elsewhere: whose is ``x.txt``?
        for src, dst in _along(stems, m):
            if src not in listed:
                claimed[src] = dst if claimed.get(src, dst) == dst else None
    return [Move(src, dst) for src, dst in sorted(claimed.items()) if dst is not None]


def _sole_claim(m: Move, going: dict[str, str], twins: dict[tuple[str, str], list[str]]) -> bool:
    """Whether every listed image of ``m``'s stem in its folder moves to where ``m`` goes."""
    folder, name = os.path.split(m.src)
    return all(going.get(p) == going[m.src] for p in twins.get((folder, name.rsplit(".", 1)[0]), []))


def _along(stems: "_Stems", m: Move) -> Iterator[tuple[str, str]]:
    """(source, target) of each file of ``m``'s stem beside it and in the folders beside its ``images/``."""
    src_dir, name = os.path.split(m.src)
    dst_dir = os.path.dirname(m.dst)
    stem = name.rsplit(".", 1)[0]
    for other in stems.of(src_dir, stem):
        if other != name:
            yield _join(src_dir, other), _join(dst_dir, other)
    src_parts, dst_parts = src_dir.split("/"), dst_dir.split("/")
    at = _images_at(src_parts)
    if at is None:
        return
    below = len(src_parts) - at - 1  # folders between images/ and the file (kept as they are)
    src_top, rest = "/".join(src_parts[:at]), src_parts[at + 1:]
    dst_top = "/".join(dst_parts[:len(dst_parts) - below - 1])
    for folder in stems.folders(src_top):
        if folder.casefold() == IMAGES_FOLDER:
            continue
        here = "/".join([p for p in (src_top, folder, *rest) if p])
        there = "/".join([p for p in (dst_top, folder, *rest) if p])
        for other in stems.of(here, stem):
            yield _join(here, other), _join(there, other)


def _images_at(parts: list[str]) -> int | None:
    """Index of the last ``images`` folder of a path's folders, or None."""
    found = [k for k, p in enumerate(parts) if p.casefold() == IMAGES_FOLDER]
    return found[-1] if found else None


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


class _Stems:
    """Each folder's regular files by stem, and its sub-folders, listed once however many images ask."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._files: dict[str, dict[str, list[str]]] = {}
        self._dirs: dict[str, list[str]] = {}

    def _list(self, folder: str) -> None:
        files: dict[str, list[str]] = {}
        dirs: list[str] = []
        try:
            with os.scandir(self.root / folder if folder else self.root) as entries:
                for e in entries:
                    if e.is_dir(follow_symlinks=False):
                        dirs.append(e.name)
                    elif e.is_file(follow_symlinks=False):
                        files.setdefault(e.name.rsplit(".", 1)[0], []).append(e.name)
        except OSError:  # a folder that is not there (or not readable) holds nothing to take along
            pass
        self._files[folder], self._dirs[folder] = files, sorted(dirs)

    def of(self, folder: str, stem: str) -> list[str]:
        if folder not in self._files:
            self._list(folder)
        return self._files[folder].get(stem, [])

    def folders(self, folder: str) -> list[str]:
        if folder not in self._dirs:
            self._list(folder)
        return self._dirs[folder]
