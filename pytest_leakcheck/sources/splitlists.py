"""Split lists as academic datasets ship them: one text file per split, one image name or id a line.

::

    splits:
      lists:
        train: ImageSets/Main/train.txt              # Pascal VOC: one id a line
        val: {file: ImageSets/Main/val.txt, images: JPEGImages}
        test: {file: test.txt, images: images}       # bare lists beside an image folder

A split may also be a folder the dataset keeps beside its lists, with no list
of its own (``test: {images: test}``: every image under ``test/``).  A YOLOv3
repository of the NEU steel-defect crops trains on ``train.txt`` and
``val.txt`` and tests on ``test/images/``; lists alone cannot name that split.

A line names an image relative to ``images`` (default: the list's own
folder) as a path (``group20085/20085/20085000.jpg``), a path without its
extension, or an id (``2008_000008`` is ``JPEGImages/2008_000008.jpg``).  An id
may name several files: DeepPCB's ``20085000.jpg`` stands for
``20085000_temp.jpg`` and ``20085000_test.jpg``, the two images of one
sample, and both go to the line's split.  What follows the first white space
of a line is ignored unless the whole line names a file (VOC's class lists
add ``1`` or ``-1``; DeepPCB an annotation path).  A line that names nothing
on disk is listed as it is, so the inventory reports it as a missing file.

A path that names no file that way (an absolute path from the machine that
wrote the list, ``/content/cones-and-cells/train/10_jpg.rf.….jpg``, as a Colab
darknet export has them) is matched by its last path components against the
images under root (a bare name or id is not: it stays a missing file): the
longest tail that names exactly one file wins, and a tail naming several
(``a.jpg`` in ``obj/`` and in ``test/``) matches none, so the line stays a
missing file.  The line is only ever compared with names
under root: no path in a list is opened, resolved or followed (a list is the
pull request's), so ``/etc/x.jpg`` or ``../../x.jpg`` can at most name
``x.jpg`` inside the repository.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import PolicyError
from ..files.escape import yaml_scalar
from ..files import suffixes
from ..files.names import excerpt
from ..validate import Ctx, inside
from .base import (SPLIT_WORDS, Assignment, Guess, Rows, SourceFile, SplitSources, add, clean_path, per_split,
                   split_folder, split_word, under)

KIND = "lists"
IMAGE_EXTS = suffixes.PICTURES
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
    for name, where, spec in per_split(ctx, raw, KIND, "list file", "e.g. `lists: {train: trainval.txt, test: test.txt}`",
                                       many=True):
        files.append(_source(ctx, spec, where, root, name))
    return SplitSources(KIND, tuple(files))


def _source(ctx: Ctx, spec: dict, at: tuple[str, ...], root: Path, split: str) -> SourceFile:
    value = spec.get("file")
    if value is None and isinstance(spec.get("images"), str):  # a split kept as a folder, with no list
        return _folder(ctx, spec["images"], at, root, split)
    if not isinstance(value, str) or not value:
        raise ctx.fail((*at, "file"), "expected a path to a list of image names (.txt), or `images:` alone "
                       "for a split that is a folder")
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


def _folder(ctx: Ctx, images: str, at: tuple[str, ...], root: Path, split: str) -> SourceFile:
    """``{images: test}``: every image under the folder is in the split; the folder stands as the source's path."""
    folder = inside(ctx, (*at, "images"), images, root / images, (root,), "image folder")
    if not folder.is_dir():
        raise ctx.fail((*at, "images"), f"image folder {excerpt(images)} not found", "a folder relative to root")
    rel = folder.relative_to(root.resolve()).as_posix()
    return SourceFile(folder, split, "" if rel == "." else rel)


@dataclass(frozen=True)
class Matched:
    """How one list's lines were matched: by their path, by their last components, or not."""

    by_path: int = 0
    #: Lines that named no file as written, matched by a tail naming exactly one file under root.
    by_tail: int = 0
    #: Lines whose tail names several files under root: matched to none (each a missing file).
    ambiguous: int = 0
    #: The first such line, for the message.
    example: str = ""
    #: Lines naming no file at all (each a missing file).
    unmatched: int = 0


def read(spec: SplitSources, root: Path, extensions: tuple[str, ...] = IMAGE_EXTS) -> Assignment:
    return matched(spec, root, extensions)[0]


def matched(spec: SplitSources, root: Path, extensions: tuple[str, ...] = IMAGE_EXTS,
            ) -> tuple[Assignment, dict[str, Matched]]:
    """:func:`read`, and how each split's lines were matched (``init`` says it)."""
    rows: Rows = {}
    names: dict[str, None] = {}
    indexes: dict[str, _Index] = {}
    tails = _Tails(root, extensions)
    counts: dict[str, Matched] = {}
    for source in spec.files:
        assert source.split is not None
        names.setdefault(source.split)
        index = indexes.get(source.images)
        if index is None:
            index = indexes[source.images] = _Index(root, source.images, extensions)
        tally: Counter[str] = Counter()
        example = ""
        if source.path.is_dir():  # a split that is a folder: all of its images
            for path in sorted(index.files):
                add(rows, names, path, source.split)
            tally["path"] = len(index.files)
        for entry in entries(source.path) if not source.path.is_dir() else ():
            paths, how = index.find(entry, tails)
            tally[how] += 1
            example = example or (entry[1] if how == "ambiguous" else "")
            for path in paths:
                add(rows, names, path, source.split)
        counts[source.split] = _plus(counts.get(source.split), Matched(tally["path"], tally["tail"],
                                                                       tally["ambiguous"], example, tally["none"]))
    return Assignment(rows, tuple(names)), counts


def _plus(a: Matched | None, b: Matched) -> Matched:
    """Two lists of one split matched (one list per class): their counts added, the first example kept."""
    if a is None:
        return b
    return Matched(a.by_path + b.by_path, a.by_tail + b.by_tail, a.ambiguous + b.ambiguous, a.example or b.example,
                   a.unmatched + b.unmatched)


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

    def find(self, entry: tuple[str, str], tails: _Tails | None = None) -> tuple[list[str], str]:
        """The files a line names (its whole text first, then its first word) and how: ``path``;
        else ``tail`` or ``ambiguous`` (:class:`_Tails`, when given); else ``none``, with the literal path."""
        for text in dict.fromkeys(entry):
            path = under(self.folder, text)
            if path in self.files:
                return [path], "path"
            stem = path.rsplit(".", 1)[0] if path.lower().endswith(IMAGE_EXTS) else path
            hits = self.stems.get(stem) or self.stems.get(stem + "/")
            if hits:
                return hits, "path"
        for text in dict.fromkeys(entry) if tails is not None else ():
            hits = tails.find(text)
            if hits:
                return (hits, "tail") if len(hits) == 1 else ([self.literal(entry)], "ambiguous")
        return [self.literal(entry)], "none"

    def literal(self, entry: tuple[str, str]) -> str:
        """The path a line that names no file is reported as: its whole text when that is a path to an
        image, else its first word; under the list's image folder unless written absolute elsewhere.

        A Colab list's ``/content/drive/My Drive/…/x%0.png`` was ``Data-split/NonCOVID//content/drive/My``
        (first word, under the list's folder): the 167 such lines of ``covidct2`` (benchmarks/field.py)
        were one missing file of a name no one wrote."""
        text = entry[0] if entry[0].lower().endswith(IMAGE_EXTS) else entry[1]
        if text.startswith("/") or (len(text) > 1 and text[1] == ":"):  # another machine's path: as written
            return clean_path(text)
        return under(self.folder, text)


class _Tails:
    """Every image under root by its file name, to match a line by its last path components.

    Built on first use (most lists name their files as they are).  The walk is root's own,
    links to folders not followed, hidden folders skipped as :class:`_Index` skips them.
    """

    def __init__(self, root: Path, extensions: tuple[str, ...]) -> None:
        self.root, self.extensions = root, extensions
        self.by_name: dict[str, list[str]] | None = None

    def _names(self) -> dict[str, list[str]]:
        if self.by_name is None:
            self.by_name = {}
            for path in sorted(_Index(self.root, "", self.extensions).files):
                self.by_name.setdefault(path.rsplit("/", 1)[-1], []).append(path)
        return self.by_name

    def find(self, text: str) -> list[str]:
        """The files under root whose path ends with the longest tail of ``text`` that names any:
        one file, or several (ambiguous: the caller matches none); ``[]`` when no tail names a file.

        Only a path is matched (a folder, then a file name with an image extension): a bare name
        or id that its list's folder lacks stays a missing file, not some other file of that name
        (VOC's ``SegmentationClass/<id>.png`` beside a missing ``JPEGImages/<id>.jpg``).  Only the
        components after the last ``..`` count, and never a drive (``C:``): the line is compared
        with names under root, not looked up anywhere.
        """
        parts = [p for p in text.replace("\\", "/").split("/") if p not in ("", ".")]
        if ".." in parts:
            parts = parts[len(parts) - parts[::-1].index(".."):]
        parts = [p for p in parts if not (len(p) == 2 and p[1] == ":")]
        if len(parts) < 2 or not parts[-1].lower().endswith(IMAGE_EXTS):
            return []
        candidates = self._names().get(parts[-1], [])
        for k in range(len(parts), 0, -1):
            tail = "/".join(parts[-k:])
            hits = [p for p in candidates if p == tail or p.endswith("/" + tail)]
            if hits:
                return hits
        return []


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
        lists = _lists(folder, root)
        if not lists:
            continue
        try:
            guess = _guess(root, folder, lists, files)
        except PolicyError:  # a list init cannot read is no split list; the check would name its line
            continue
        if guess is not None:
            return guess
    return None


def _image_folder(root: Path, folder: Path, lists: dict[str, Path], files: list[str],
                  near: list[str] | None = None) -> str | None:
    """VOC's ``JPEGImages``; else the list's folder or a folder holding images, where most names resolve;
    then the folders in ``near`` (``classlists``: where files named as the lines are)."""
    if folder.name == "Main" and folder.parent.name == "ImageSets":
        tries = [folder.parent.parent / "JPEGImages"]
    else:
        parents = sorted({f.rsplit("/", 1)[0] for f in files if "/" in f}, key=lambda f: (f.count("/"), f))
        tops = dict.fromkeys(p.split("/")[0] for p in parents)
        tries = [folder, *(root / t for t in list(tops)[:MAX_IMAGE_FOLDERS])]
    tries += [root / n if n else root for n in near or ()]
    samples = [entries(path, 200) for path in lists.values()]
    tails = _Tails(root, IMAGE_EXTS)
    # Names as written first, in any folder; only then by their last components (Colab paths):
    # bare ids beside ``images/`` would otherwise match from the root, and the policy not say where.
    for matching in (None, tails):
        for base in dict.fromkeys(tries):
            if not base.is_dir():
                continue
            rel = base.relative_to(root).as_posix()
            images = "" if rel == "." else rel
            index = _Index(root, images, IMAGE_EXTS)
            if all(sample and sum(index.find(e, matching)[1] in ("path", "tail") for e in sample) * 2 > len(sample)
                   for sample in samples):
                return images
    return None


def on_disk(root: Path) -> tuple[Path, ...]:
    """Every split list ``init`` would take under ``root`` (each folder's train/val/test lists): a
    check whose policy reads none of them, and compares little, says they are there."""
    # A folder linked from elsewhere is not the dataset's (and the check does not follow it either).
    return tuple(path for folder in _list_folders(root) if not folder.is_symlink()
                 for path in _lists(folder, root).values())


def _list_folders(root: Path) -> list[Path]:
    voc = sorted(root.glob("ImageSets/Main")) + sorted(root.glob("*/ImageSets/Main"))
    return [*voc, root, *sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))]


def ours(path: Path, root: Path) -> bool:
    """Whether ``path`` is a file that is inside ``root`` once links are followed.  ``init`` reads
    and quotes the lists it finds (their first lines name its image folder, or why a set is not
    used): a list linked from outside the repository (``train.txt -> ~/.ssh/id_rsa``) is not the
    dataset's, the check would refuse it, and ``init`` must not read it either."""
    try:
        return path.is_file() and path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):  # a link loop
        return False


def _lists(folder: Path, root: Path) -> dict[str, Path]:
    """Split -> list file in ``folder`` (inside ``root``): train and val when both exist, else trainval as train."""
    found = {}
    for split, words in LIST_NAMES.items():
        for word in words:
            if ours(folder / f"{word}.txt", root):
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
        assignment, how = matched(spec, root)
    except PolicyError:
        return None
    copies = _copies(lists, assignment, root)
    if copies:  # read without the copies: the lists left still name every file they named
        lists = {s: p for s, p in lists.items() if s not in copies}
        spec = SplitSources(KIND, tuple(SourceFile(p.resolve(), s, images) for s, p in lists.items()))
        assignment, how = matched(spec, root)
    kept = _kept_folders(files, assignment, lists)
    if kept:  # the test images beside train.txt and val.txt: a split of its own, all of the folder
        spec = SplitSources(KIND, (*spec.files, *(SourceFile((root / f).resolve(), s, f) for s, f in kept.items())))
        assignment, how = matched(spec, root)
    yaml, found = "splits:\n  lists:\n", []
    on_disk = set(files)
    own = images == (folder.relative_to(root).as_posix() if folder != root else "")
    for split in (s for s in SPLIT_WORDS if s in lists or s in kept):
        n = sum(1 for p, e in assignment.rows.items() if any(x[0] == split for x in e) and p in on_disk)
        if split in kept:
            yaml += f"    {split}: {{images: {yaml_scalar(kept[split])}}}\n"
            found.append(f"split folder {kept[split]}/: {n} image{'s' * (n != 1)} in {split} (in no list: "
                         "the whole folder)")
            continue
        rel = lists[split].relative_to(root).as_posix()
        yaml += (f"    {split}: {yaml_scalar(rel)}\n" if own
                 else f"    {split}: {{file: {yaml_scalar(rel)}, images: {yaml_scalar(images or '.')}}}\n")
        under_images = f" (under {images}/)" if images else ""
        found.append(f"split list {rel}: {n} image{'s' * (n != 1)} in {split}{under_images}{_how(how[split])}")
    twice = sum(1 for p, e in assignment.rows.items() if len({x[0] for x in e}) > 1 and p in on_disk)
    if twice:  # a val.txt that is a copy of train.txt: every such image is in two splits, a leak
        found.append(f"{twice} image{'s' * (twice != 1)} listed in more than one split "
                     "(reported as ambiguous files: errors)")
    listed = set(assignment.rows)
    unlisted = sum(1 for f in files if f.startswith(images + "/" if images else "") and f not in listed)
    if unlisted:
        found.append(f"{unlisted} image{'s' * (unlisted != 1)} under {images or 'the root'} in no list "
                     "(reported as unassigned files)")
    return Guess(yaml, tuple(found), assignment, warnings=tuple(copies.values()))


def _kept_folders(files: list[str], assignment: Assignment, lists: dict[str, Path]) -> dict[str, str]:
    """Split -> the one folder named like a split that no list has, none of whose images is listed.

    NEU-DET as a YOLOv3 repository keeps it (held-out probe 12): ``train.txt`` and ``val.txt``
    of 300 crops, and ``test/images/`` of 300 more that the test script reads; a policy of the
    two lists left the test split out, and ``check`` compared nothing with it."""
    found: dict[str, set[str]] = {}
    listed: set[str] = set()
    for path in files:
        top = split_folder(path)
        if top is not None:
            found.setdefault(top, set())
            if path in assignment.rows:
                listed.add(top)
    by_split: dict[str, list[str]] = {}
    for top in found:
        split = split_word(top.rsplit("/", 1)[-1])
        if split and split not in lists and top not in listed:
            by_split.setdefault(split, []).append(top)
    return {s: tops[0] for s, tops in by_split.items() if len(tops) == 1}


def _copies(lists: dict[str, Path], assignment: Assignment, root: Path) -> dict[str, str]:
    """Split -> what init says of its list, for each list naming exactly the images of an earlier one.

    A VOC set whose ``val.txt`` is a copy of ``train.txt`` (``panoramic-dataset-for-gestures-detection``,
    held-out probe 8) put every train image in two splits: each an ``ambiguous-file`` error, and none
    compared with test, so the frames train and test share went unseen.  A copy is no split: it is
    left out of the policy and said once, and the check compares the splits that remain."""
    named: dict[str, set[str]] = {s: set() for s in lists}
    for path, entries in assignment.rows.items():
        for entry in entries:
            named[entry[0]].add(path)
    out: dict[str, str] = {}
    kept: list[str] = []
    for split in (s for s in SPLIT_WORDS if s in lists):
        first = next((k for k in kept if named[k] == named[split]), None)
        if first is None or not named[split]:
            kept.append(split)
            continue
        n, rel = len(named[split]), lists[split].relative_to(root).as_posix()
        out[split] = (f"split list {rel} names the same {n} image{'s' * (n != 1)} as "
                      f"{lists[first].relative_to(root).as_posix()}: not read as split {split} (each would be in two splits, an error, and "
                      f"left out of every comparison); a model chosen on {split} is chosen on its "
                      f"{first} images")
    return out


def _how(counts: Matched) -> str:
    """What ``init`` says about lines matched by their last path components, or not matched."""
    out = ""
    if counts.by_tail:
        out += (f"; {_lines(counts.by_tail, 'names')} a path not under root (written on "
                "another machine), matched by the one file under root ending the same way")
    if counts.ambiguous:
        out += (f"; {_lines(counts.ambiguous, 'ends')} like several files under root (e.g. {excerpt(counts.example)}) "
                "and matches none (reported as missing files)")
    if counts.by_tail and counts.unmatched:  # said beside the matched ones, which they resemble
        out += f"; {_lines(counts.unmatched, 'names')} no file (reported as missing files)"
    return out


def _lines(n: int, verb: str) -> str:
    """``1 line names`` / ``3 lines name``: a count of lines with its verb agreeing."""
    return f"{n} line {verb}" if n == 1 else f"{n} lines {verb[:-1]}"
