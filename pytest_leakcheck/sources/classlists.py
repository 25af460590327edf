"""Split lists kept one set per class, for ``init``: a list named after its split and a tail the
set shares, in a folder of its own, its bare names in a class folder of their own.

COVID-CT as its authors ship it (``benchmarks/field_sources.py``, ``covidct``)::

    Data-split/COVID/trainCT_COVID.txt       2020.01.24.919183-p27-132.png, one name a line
    Data-split/COVID/valCT_COVID.txt
    Data-split/COVID/testCT_COVID.txt
    Data-split/NonCOVID/trainCT_NonCOVID.txt
    ...
    Images/CT_COVID/2020.01.24.919183-p27-132.png
    Images/CT_NonCOVID/...

:mod:`splitlists` takes lists named ``train.txt`` (``train_list.txt``...) at the root, in its
top-level folders and in VOC's ``ImageSets/Main``, one list per split.  Here each folder holds
lists named ``<split><tail>.txt`` with one tail (``CT_COVID``), a few folders down, and the
sets of several folders are one split together when they name different images (one set per
class); sets naming the same images are alternatives (folds, ``train_1.txt``/``test_1.txt``
beside ``train_2.txt``/``test_2.txt``), and only the first is read.  The policy is the
``lists`` source with several lists per split (``train: [{file, images}, ...]``).  Asked only
after :mod:`splitlists`, so what it recognised before is recognised the same way.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ..errors import PolicyError
from ..files.escape import yaml_scalar
from ..files.names import excerpt, same_but_punctuation
from .base import Guess, SourceFile, SplitSources, folders
from .splitlists import (IMAGE_EXTS, KIND, MAX_IMAGE_FOLDERS, _WORDS, _how, _image_folder, entries, matched, on_disk,
                         ours)

#: How deep ``init`` looks for per-class list folders (``Data-split/COVID/`` is 2).
MAX_DEPTH = 3
#: Split words a list's name may start with, longest first (``training`` before ``train``).
_FIRST = sorted(((w, s) for s, words in _WORDS.items() for w in words), key=lambda ws: -len(ws[0]))

Set = tuple[Path, dict[str, Path], str]  # the lists' folder, split -> list, their image folder


def recognise(root: Path, files: list[str]) -> Guess | None:
    """Sets of ``<split><tail>.txt`` lists whose lines name images, read together when they name different ones."""
    taken = set(on_disk(root))  # splitlists' own: it read (or refused) them already
    sets: list[Set] = []
    unread: list[str] = []
    for rel in ["", *folders(root, MAX_DEPTH)]:
        folder = root / rel if rel else root
        for lists in tailed(folder, root):
            if set(lists.values()) <= taken:
                continue
            try:
                images = _image_folder(root, folder, lists, files, near=named_folders(lists, files))
            except PolicyError:  # a list init cannot read is no split list; the check would name its line
                continue
            if images is not None:
                sets.append((folder, lists, images))
            else:
                unread.append(_unread(root, lists, files))
    return _together(root, sets, files, unread) if sets else None


def _unread(root: Path, lists: dict[str, Path], files: list[str]) -> str:
    """What ``init`` says of a set whose lines mostly name no file: a class's lists whose files were
    renamed since (a user's copy of COVID-CT: ``x%0.png`` listed, ``x_0.png`` on disk) are said, not
    dropped unsaid (their images are then in no split), with the file the first line means."""
    first = next((e[0] for p in lists.values() for e in entries(p, 1)), "")
    name = first.replace("\\", "/").rsplit("/", 1)[-1]  # the part a renamed file differs in
    renamed = same_but_punctuation([name], files).get(name)
    hint = f"; {renamed} is on disk: renamed since?" if renamed else ""
    return (f"split lists {', '.join(_rel(root, p) for p in lists.values())}: most of their first lines name "
            f"no image under root (the first {excerpt(name)}{hint}): not used")


def tailed(folder: Path, root: Path) -> list[dict[str, Path]]:
    """Split -> list of each set of lists in ``folder`` named ``<split word><tail>.txt`` with one tail,
    with train and another split (``trainval`` is train unless train and val lists are both there)."""
    by_tail: dict[str, dict[str, Path]] = {}
    for path in sorted(p for p in folder.glob("*.txt") if not p.name.startswith(".") and ours(p, root)):
        low = path.stem.lower()
        hit = next(((w, s) for w, s in _FIRST if low.startswith(w)), None)
        if hit is not None:
            by_tail.setdefault(path.stem[len(hit[0]):], {}).setdefault(hit[1], path)
    out = []
    for _, found in sorted(by_tail.items()):
        if "trainval" in found and not ("train" in found and "val" in found):
            found["train"] = found.pop("trainval")
        found.pop("trainval", None)
        if len(found) >= 2 and "train" in found:
            out.append(found)
    return out


def named_folders(lists: dict[str, Path], files: list[str]) -> list[str]:
    """The folders holding files named as the lists' first lines are (by name or by name without its
    extension), most named first: bare names resolve in a class folder, not beside the list."""
    by_name: dict[str, set[str]] = {}
    for f in files:
        head, _, name = f.rpartition("/")
        for key in (name, name.rsplit(".", 1)[0]):
            by_name.setdefault(key, set()).add(head)
    votes: Counter[str] = Counter()
    for path in lists.values():
        for _, first in entries(path, 200):
            votes.update(by_name.get(first, ()))
    return [head for head, _ in votes.most_common(MAX_IMAGE_FOLDERS)]


def _together(root: Path, sets: list[Set], files: list[str], said: list[str]) -> Guess | None:
    """One guess of every set naming images no set before it named; the others said and left out."""
    kept: list[tuple[Set, dict[str, object]]] = []
    seen: set[str] = set()
    left: list[str] = list(said)
    for item in sets:
        try:
            assignment, how = matched(SplitSources(KIND, _sources(item)), root)
        except PolicyError:
            continue
        named = {p for p in assignment.rows if p in seen}
        if named:
            left.append(f"split lists {', '.join(_rel(root, p) for p in item[1].values())} name images "
                        "other lists named first (another fold?): not used")
            continue
        seen |= set(assignment.rows)
        kept.append((item, {"rows": assignment.rows, "how": how}))
    if not kept:
        return None
    spec = SplitSources(KIND, tuple(s for item, _ in kept for s in _sources(item)))
    assignment, _ = matched(spec, root)
    on_disk_files = set(files)
    twice = sum(1 for p, e in assignment.rows.items() if len({x[0] for x in e}) > 1 and p in on_disk_files)
    if twice:  # an image in two lists of a set (or of two sets): in two splits, a leak
        left.insert(0, f"{twice} image{'s' * (twice != 1)} listed in more than one split "
                       "(reported as ambiguous files: errors)")
    return Guess(_yaml(root, [item for item, _ in kept]), (*_found(root, kept, files), *left), assignment)


def _sources(item: Set) -> tuple[SourceFile, ...]:
    _, lists, images = item
    return tuple(SourceFile(p.resolve(), s, images) for s, p in lists.items())


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def _yaml(root: Path, kept: list[Set]) -> str:
    """``splits: {lists: {SPLIT: [{file, images}, ...]}}``: each split's lists, one set after another."""
    yaml = "splits:\n  lists:\n"
    for split in (s for s in ("train", "val", "test") if any(s in lists for _, lists, _ in kept)):
        yaml += f"    {split}:\n"
        for _, lists, images in kept:
            if split in lists:
                yaml += (f"      - {{file: {yaml_scalar(_rel(root, lists[split]))}, "
                         f"images: {yaml_scalar(images or '.')}}}\n")
    return yaml


def _found(root: Path, kept: list[tuple[Set, dict[str, object]]], files: list[str]) -> list[str]:
    """A ``Found:`` line per list (its images, split and folder), and the images under the folders in no list."""
    on_disk_files = set(files)
    out, listed = [], set()
    for (_, lists, images), seen in kept:
        rows = seen["rows"]
        assert isinstance(rows, dict)
        listed |= set(rows)
        for split in (s for s in ("train", "val", "test") if s in lists):
            n = sum(1 for p, e in rows.items() if any(x[0] == split for x in e) and p in on_disk_files)
            how = seen["how"]
            assert isinstance(how, dict)
            out.append(f"split list {_rel(root, lists[split])}: {n} image{'s' * (n != 1)} in {split} "
                       f"(under {images or '.'}/){_how(how[split])}")
    folders_read = {images for (_, _, images), _ in kept}
    unlisted = sum(1 for f in files if f not in listed
                   and any(f.startswith(d + "/") if d else True for d in folders_read))
    if unlisted:
        out.append(f"{unlisted} image{'s' * (unlisted != 1)} under {', '.join(sorted(folders_read))} in no list "
                   "(reported as unassigned files)")
    return out


__all__ = ["IMAGE_EXTS", "MAX_DEPTH", "named_folders", "recognise", "tailed"]
