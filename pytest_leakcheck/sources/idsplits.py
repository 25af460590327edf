"""Splits by id, as CUB-200-2011 and NABirds ship them: one list maps ids to images, another ids to a split flag.

::

    splits:
      ids:
        names: images.txt               # "<id> <image path>" a line
        splits: train_test_split.txt    # "<id> <value>" a line
        images: images                  # the folder the image paths are relative to
        values: {"1": train, "0": test}

An id is the first word of a line (a number in CUB, a UUID in NABirds).  An
image path is matched as :mod:`splitlists` matches a list's line: only ever
compared with the names under ``images``, never opened or resolved (both lists
are the pull request's).  An id of ``splits`` that ``names`` does not map is a
policy error naming its line: the two files disagree, and no image can be
placed.  An image whose value ``values`` does not map is in no split, so the
check reports it as an unassigned file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import PolicyError
from ..files.escape import yaml_scalar
from ..files.names import excerpt
from ..validate import Ctx, inside, type_name
from .base import Assignment, Guess, Rows, SourceFile, SplitSources, add
from .splitlists import IMAGE_EXTS, _Index, entries

KIND = "ids"
#: ``columns`` entries of the spec that carry ``values``: ("value <flag>", split).
_VALUE = "value "
#: The file names ``init`` looks for (CUB-200-2011, NABirds), in the root or a folder under it.
NAMES_FILE, SPLITS_FILE = "images.txt", "train_test_split.txt"
#: CUB's and NABirds' flag: 1 is a training image.
CUB_VALUES = {"1": "train", "0": "test"}
_EXAMPLE = ('e.g. `ids: {names: images.txt, splits: train_test_split.txt, images: images, '
            'values: {"1": train, "0": test}}`')


def parse(ctx: Ctx, raw: Any, root: Path, kind: str = KIND) -> SplitSources:
    at = ("splits", KIND)
    spec = ctx.mapping(raw, at, ("names", "splits", "images", "values"))
    if not spec:
        raise ctx.fail(at, f"expected a mapping, got {type_name(raw)}", _EXAMPLE)
    names, splits = (_list_file(ctx, spec, (*at, key), root) for key in ("names", "splits"))
    images = spec.get("images", "")
    if not isinstance(images, str):
        raise ctx.fail((*at, "images"), "expected a folder relative to root")
    folder = inside(ctx, (*at, "images"), images, root / images, (root,), "image folder") if images else root
    if not folder.is_dir():
        raise ctx.fail((*at, "images"), f"image folder {excerpt(images)} not found",
                       "the folder the image paths of `names` are relative to, relative to root")
    rel = folder.relative_to(root.resolve()).as_posix() if images else ""
    values = spec.get("values", CUB_VALUES)
    if not isinstance(values, dict) or not values:
        raise ctx.fail((*at, "values"), "expected a mapping of flag to split name", _EXAMPLE)
    for flag, split in values.items():
        if not isinstance(split, str) or not split.replace("-", "").replace("_", "").isalnum():
            raise ctx.fail((*at, "values", str(flag)), "split names use letters, digits, - and _")
    return SplitSources(KIND, (SourceFile(names, None, "" if rel == "." else rel), SourceFile(splits, None, "")),
                        tuple((_VALUE + str(flag), split) for flag, split in values.items()))


def _list_file(ctx: Ctx, spec: dict, at: tuple[str, ...], root: Path) -> Path:
    value = spec.get(at[-1])
    if not isinstance(value, str) or not value:
        raise ctx.fail(at, "expected a path to a list (.txt), relative to root", _EXAMPLE)
    path = inside(ctx, at, value, root / value, (ctx.path.parent, root), "id list")
    if not path.is_file():
        raise ctx.fail(at, f"id list {excerpt(value)} not found ({path})", "fix the path; it is relative to `root`")
    return path


def read(spec: SplitSources, root: Path, extensions: tuple[str, ...] = IMAGE_EXTS) -> Assignment:
    names_file, splits_file = spec.files
    values = {role[len(_VALUE):]: split for role, split in spec.columns if role.startswith(_VALUE)}
    paths = _names(names_file.path)
    index = _Index(root, names_file.images, extensions)
    rows: Rows = {}
    seen: dict[str, None] = {split: None for split in values.values()}
    for n, (line, first) in enumerate(entries(splits_file.path), 1):
        words = line.split()
        if len(words) < 2:
            raise PolicyError(f"line {n} names no split value after the id {excerpt(first)}", path=str(splits_file.path),
                              line=n, fix="one `<id> <value>` a line")
        if first not in paths:
            raise PolicyError(f"id {excerpt(first)} on line {n} is not in {names_file.path.name}",
                              path=str(splits_file.path), line=n, fix=f"list it in {names_file.path.name}, "
                              "or delete the line")
        split = values.get(words[1])
        if split is None:
            continue  # in no split: the check reports the image as an unassigned file
        found, _ = index.find((paths[first], paths[first]))
        for path in found:
            add(rows, seen, path, split)
    return Assignment(rows, tuple(seen))


def _names(path: Path) -> dict[str, str]:
    """id -> image path, from ``<id> <path>`` lines (a path may hold spaces)."""
    out: dict[str, str] = {}
    for n, (line, first) in enumerate(entries(path), 1):
        parts = line.split(None, 1)
        if len(parts) < 2:
            raise PolicyError(f"line {n} names no image after the id {excerpt(first)}", path=str(path), line=n,
                              fix="one `<id> <image path>` a line")
        out[first] = parts[1].strip()
    return out


# --------------------------------------------------------------------------
# Recognition (init)


def recognise(root: Path, files: list[str]) -> Guess | None:
    """CUB-200-2011 / NABirds: ``images.txt`` and ``train_test_split.txt`` side by side, flags 0 and 1."""
    for folder in (root, *sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))):
        names, splits = folder / NAMES_FILE, folder / SPLITS_FILE
        if not (names.is_file() and splits.is_file()):
            continue
        try:
            guess = _guess(root, folder, files)
        except PolicyError:  # lists init cannot read are no split source; the check would name the line
            continue
        if guess is not None:
            return guess
    return None


def _guess(root: Path, folder: Path, files: list[str]) -> Guess | None:
    flags = {line.split()[1] for line, _ in entries(folder / SPLITS_FILE, 200) if len(line.split()) >= 2}
    if not flags or not flags <= set(CUB_VALUES):
        return None
    sample = list(_names(folder / NAMES_FILE).values())[:200]
    for candidate in (folder / "images", folder):
        if not candidate.is_dir():
            continue
        rel = candidate.relative_to(root).as_posix()
        images = "" if rel == "." else rel
        index = _Index(root, images, IMAGE_EXTS)
        if sample and sum(index.find((p, p))[1] == "path" for p in sample) * 2 > len(sample):
            break
    else:
        return None
    spec = SplitSources(KIND, (SourceFile(folder / NAMES_FILE, None, images), SourceFile(folder / SPLITS_FILE)),
                        tuple((_VALUE + flag, split) for flag, split in CUB_VALUES.items()))
    assignment = read(spec, root)
    here = folder.relative_to(root).as_posix()
    prefix = "" if here == "." else here + "/"
    yaml = (f"splits:\n  {KIND}:\n    names: {yaml_scalar(prefix + NAMES_FILE)}\n"
            f"    splits: {yaml_scalar(prefix + SPLITS_FILE)}\n    images: {yaml_scalar(images or '.')}\n"
            '    values: {"1": train, "0": test}\n')
    on_disk = set(files)
    counts = {s: sum(1 for p, e in assignment.rows.items() if p in on_disk and any(x[0] == s for x in e))
              for s in ("train", "test")}
    found = [f"id lists {prefix}{NAMES_FILE} and {prefix}{SPLITS_FILE} (CUB-200-2011 style): "
             f"{counts['train']} images in train, {counts['test']} in test (flag 1 is train)"]
    return Guess(yaml, tuple(found), assignment)
