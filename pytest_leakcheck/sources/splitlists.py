"""Split lists as academic datasets ship them: one text file per split, one image name or id a line.

::

    splits:
      lists:
        train: ImageSets/Main/train.txt              # Pascal VOC: one id a line
        val: {file: ImageSets/Main/val.txt, images: JPEGImages}
        test: {file: test.txt, images: images}       # bare lists beside an image folder

A line names an image relative to ``images`` (default: the list's own
folder) as a path (``group20085/20085/20085000.jpg``), a path without its
extension, or an id (``2008_000008`` is ``JPEGImages/2008_000008.jpg``).  An id
may name several files: DeepPCB's ``20085000.jpg`` stands for
``20085000_temp.jpg`` and ``20085000_test.jpg``, the two images of one
sample, and both go to the line's split.  What follows the first white space
of a line is ignored unless the whole line names a file (VOC's class lists
add ``1`` or ``-1``; DeepPCB an annotation path).  A line that names nothing
on disk is listed as it is, so the inventory reports it as a missing file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import PolicyError
from ..files.escape import yaml_scalar
from ..files.names import excerpt
from ..validate import Ctx, inside
from .base import SPLIT_WORDS, Assignment, Guess, Rows, SourceFile, SplitSources, add, clean_path, per_split, under

KIND = "lists"
IMAGE_EXTS = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp")
#: A longer line is refused with its number: no image name is that long.
MAX_LINE = 4096
#: List names init takes for each split (with ``_list``, ``_files``, ``_ids`` or ``_images`` after them:
#: ``train_list.txt``); ``trainval`` is train when no separate train/val lists exist.
_WORDS = {"train": ("train", "training"), "val": ("val", "valid", "validation"), "test": ("test", "testing"),
          "trainval": ("trainval", "train_val")}
LIST_NAMES = {split: tuple(w + tail for w in words for tail in ("", "_list", "list", "_files", "_ids", "_images"))
              for split, words in _WORDS.items()}


def parse(ctx: Ctx, raw: Any, root: Path, kind: str = KIND) -> SplitSources:
    """``lists: {SPLIT: FILE | {file, images}, ...}``: each list inside root, each image folder too."""
    files = []
    for name, where, spec in per_split(ctx, raw, KIND, "list file", "e.g. `lists: {train: trainval.txt, test: test.txt}`"):
        files.append(_source(ctx, spec, where, root, name))
    return SplitSources(KIND, tuple(files))


def _source(ctx: Ctx, spec: dict, at: tuple[str, ...], root: Path, split: str) -> SourceFile:
    value = spec.get("file")
    if not isinstance(value, str) or not value:
        raise ctx.fail((*at, "file"), "expected a path to a list of image names (.txt)")
    path = inside(ctx, (*at, "file"), value, root / value, (ctx.path.parent, root), "split list")
    if not path.is_file():
        raise ctx.fail((*at, "file"), f"split list {excerpt(value)} not found ({path})",
                       "fix the path; it is relative to `root`")
    images = spec.get("images")
    if images is None:
        folder = path.parent
    elif not isinstance(images, str):
        raise ctx.fail((*at, "images"), "expected a folder relative to root")
    else:
        folder = inside(ctx, (*at, "images"), images, root / images, (root,), "image folder")
        if not folder.is_dir():
            raise ctx.fail((*at, "images"), f"image folder {excerpt(images)} not found",
                           "the folder the list's names are relative to, relative to root")
    try:
        rel = folder.relative_to(root.resolve()).as_posix()
    except ValueError:
        raise ctx.fail((*at, "file"), f"split list {excerpt(value)} is outside root",
                       "keep it beside the images, or name their folder with `images:`") from None
    return SourceFile(path, split, "" if rel == "." else rel)


def read(spec: SplitSources, root: Path, extensions: tuple[str, ...] = IMAGE_EXTS) -> Assignment:
    rows: Rows = {}
    names: dict[str, None] = {}
    indexes: dict[str, _Index] = {}
    for source in spec.files:
        assert source.split is not None
        names.setdefault(source.split)
        index = indexes.get(source.images)
        if index is None:
            index = indexes[source.images] = _Index(root, source.images, extensions)
        for entry in entries(source.path):
            for path in index.find(entry):
                add(rows, names, path, source.split)
    return Assignment(rows, tuple(names))


def entries(path: Path, limit: int | None = None) -> list[tuple[str, str]]:
    """Each line's whole text and its first word (both cleaned), blank lines and ``#`` comments left out.

    Read a bounded line at a time: a list is pull-request content, and one
    line of gigabytes must fail with its number, not fill memory first.
    """
    out: list[tuple[str, str]] = []
    try:
        with open(path, encoding="utf-8", errors="surrogateescape", newline=None) as fh:
            for n, line in enumerate(iter(lambda: fh.readline(MAX_LINE + 2), ""), 1):
                if len(line.rstrip("\r\n")) > MAX_LINE:  # a longer line comes back cut, without its newline
                    raise PolicyError(f"line {n} is over {MAX_LINE:,} characters long", path=str(path), line=n,
                                      fix="one image name or id per line")
                text = line.strip()
                if text and not text.startswith("#"):
                    out.append((clean_path(text), clean_path(text.split()[0])))
                    if limit is not None and len(out) >= limit:
                        break
    except OSError as exc:
        raise PolicyError(f"cannot read split list: {exc.strerror or exc}", path=str(path)) from None
    return out


class _Index:
    """The images under one folder, found by path, by path without extension, or by id prefix."""

    def __init__(self, root: Path, folder: str, extensions: tuple[str, ...]) -> None:
        self.folder = folder
        self.files: set[str] = set()
        self.stems: dict[str, list[str]] = {}
        base = root / folder if folder else root
        for here, dirs, found in os.walk(base):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            rel = Path(here).relative_to(root).as_posix()
            prefix = "" if rel == "." else rel + "/"
            for name in sorted(found):
                if name.startswith(".") or not name.lower().endswith(extensions):
                    continue
                path = prefix + name
                self.files.add(path)
                stem = path.rsplit(".", 1)[0]
                self.stems.setdefault(stem, []).append(path)
                cut = _id_cut(stem)
                if cut != stem:
                    self.stems.setdefault(cut + "/", []).append(path)  # "/": an id, never a stem itself

    def find(self, entry: tuple[str, str]) -> list[str]:
        """The files a line names (its whole text first, then its first word); the literal path when none."""
        for text in dict.fromkeys(entry):
            path = under(self.folder, text)
            if path in self.files:
                return [path]
            stem = path.rsplit(".", 1)[0] if path.lower().endswith(IMAGE_EXTS) else path
            hits = self.stems.get(stem) or self.stems.get(stem + "/")
            if hits:
                return hits
        return [under(self.folder, entry[1])]


def _id_cut(stem: str) -> str:
    """``…/20085000`` of ``…/20085000_temp``: the stem up to its last ``_`` or ``-`` (the id a list may name)."""
    head, _, name = stem.rpartition("/")
    cut = max(name.rfind("_"), name.rfind("-"))
    return stem if cut <= 0 else (f"{head}/" if head else "") + name[:cut]


# --------------------------------------------------------------------------
# Recognition (init)


def recognise(root: Path, files: list[str]) -> Guess | None:
    """VOC ``ImageSets/Main/*.txt`` beside ``JPEGImages/``, or bare ``train.txt``/``test.txt`` lists."""
    for folder in _list_folders(root):
        lists = _lists(folder)
        if not lists:
            continue
        try:
            guess = _guess(root, folder, lists, files)
        except PolicyError:  # a list init cannot read is no split list; the check would name its line
            continue
        if guess is not None:
            return guess
    return None


def _image_folder(root: Path, folder: Path, lists: dict[str, Path], files: list[str]) -> str | None:
    """VOC's ``JPEGImages``; else the list's folder or a folder holding images, where most names resolve."""
    if folder.name == "Main" and folder.parent.name == "ImageSets":
        tries = [folder.parent.parent / "JPEGImages"]
    else:
        parents = sorted({f.rsplit("/", 1)[0] for f in files if "/" in f}, key=lambda f: (f.count("/"), f))
        tops = dict.fromkeys(p.split("/")[0] for p in parents)
        tries = [folder, *(root / t for t in list(tops)[:MAX_IMAGE_FOLDERS])]
    samples = [entries(path, 200) for path in lists.values()]
    for base in dict.fromkeys(tries):
        if not base.is_dir():
            continue
        rel = base.relative_to(root).as_posix()
        images = "" if rel == "." else rel
        index = _Index(root, images, IMAGE_EXTS)
        if all(sample and sum(index.find(e)[0] in index.files for e in sample) * 2 > len(sample)
               for sample in samples):
            return images
    return None


def _list_folders(root: Path) -> list[Path]:
    voc = sorted(root.glob("ImageSets/Main")) + sorted(root.glob("*/ImageSets/Main"))
    return [*voc, root, *sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))]


def _lists(folder: Path) -> dict[str, Path]:
    """Split -> list file in ``folder``: train and val when both exist, else trainval as train."""
    found = {}
    for split, words in LIST_NAMES.items():
        for word in words:
            if (folder / f"{word}.txt").is_file():
                found[split] = folder / f"{word}.txt"
                break
    if "trainval" in found and not ("train" in found and "val" in found):
        found["train"] = found.pop("trainval")
    found.pop("trainval", None)
    return found if len(found) >= 2 and "train" in found else {}


#: Image folders ``init`` tries for bare lists, beside the list's own folder and the top-level ones.
MAX_IMAGE_FOLDERS = 8


def _guess(root: Path, folder: Path, lists: dict[str, Path], files: list[str]) -> Guess | None:
    """The image folder most of each list's first lines resolve in; None when no list names images."""
    images = _image_folder(root, folder, lists, files)
    if images is None:
        return None
    spec = SplitSources(KIND, tuple(SourceFile(p.resolve(), s, images) for s, p in lists.items()))
    try:
        assignment = read(spec, root)
    except PolicyError:
        return None
    yaml, found = "splits:\n  lists:\n", []
    own = images == (folder.relative_to(root).as_posix() if folder != root else "")
    for split in (s for s in SPLIT_WORDS if s in lists):
        rel = lists[split].relative_to(root).as_posix()
        n = sum(1 for e in assignment.rows.values() if e[0][0] == split)
        yaml += (f"    {split}: {yaml_scalar(rel)}\n" if own
                 else f"    {split}: {{file: {yaml_scalar(rel)}, images: {yaml_scalar(images or '.')}}}\n")
        under_images = f" (under {images}/)" if images else ""
        found.append(f"split list {rel}: {n} image{'s' * (n != 1)} in {split}{under_images}")
    listed = set(assignment.rows)
    unlisted = sum(1 for f in files if f.startswith(images + "/" if images else "") and f not in listed)
    if unlisted:
        found.append(f"{unlisted} image{'s' * (unlisted != 1)} under {images or 'the root'} in no list "
                     "(reported as unassigned files)")
    return Guess(yaml, tuple(found), assignment)

