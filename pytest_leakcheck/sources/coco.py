"""COCO annotation files: the file that lists an image says its split, and its fields can say its group.

::

    splits:
      coco:
        train: annotations/instances_train.json            # file_name relative to root
        test: {file: annotations/instances_test.json, images: test2017}

    groups:
      - {coco: annotations/instances_train.json, field: video_id}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..files import jsontext
from ..validate import Ctx, inside
from ..errors import PolicyError
from ..files.names import excerpt
from .base import (
    SPLIT_WORDS,
    Assignment,
    Guess,
    Rows,
    SourceFile,
    SplitSources,
    add,
    clean_path,
    folders,
    per_split,
    split_word,
    token_split,
    under,
)
from ..files.escape import yaml_scalar

KIND = "coco"
#: How deep ``init`` looks for COCO files and image folders.
MAX_DEPTH = 6


def parse(ctx: Ctx, raw: Any, root: Path, kind: str = KIND) -> SplitSources:
    files = []
    for name, where, spec in per_split(ctx, raw, KIND, "COCO file",
                                       "e.g. `coco: {train: instances_train.json, test: instances_test.json}`"):
        value = spec.get("file")
        if not isinstance(value, str) or not value:
            raise ctx.fail((*where, "file"), "expected a path to a COCO file")
        path = inside(ctx, (*where, "file"), value, root / value, (ctx.path.parent, root), "COCO file")
        if not path.is_file():
            raise ctx.fail((*where, "file"), f"COCO file {excerpt(value)} not found ({path})",
                           "fix the path; it is relative to `root`")
        images = spec.get("images", "")
        if not isinstance(images, str):
            raise ctx.fail((*where, "images"), "expected a folder relative to root")
        if images and not (root / images).is_dir():
            raise ctx.fail((*where, "images"), f"image folder {excerpt(images)} not found",
                           "the folder the file_name values are relative to, relative to root")
        files.append(SourceFile(path, name, images.strip("/").replace("\\", "/")))
    return SplitSources(KIND, tuple(files))


def images(path: Path) -> list[dict]:
    """The ``images`` list of a COCO file; PolicyError naming the file and the fix."""
    try:
        data = jsontext.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise PolicyError(f"COCO file is not valid JSON: {exc.msg}", path=str(path), line=exc.lineno,
                          fix="point the policy at COCO annotation files") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(f"cannot read COCO file: {exc}", path=str(path)) from None
    found = data.get("images") if isinstance(data, dict) else None
    if not isinstance(found, list):
        raise PolicyError("COCO file has no `images` list", path=str(path),
                          fix="a COCO file is an object with an `images` list of {file_name, ...}")
    return found


def file_names(path: Path) -> list[str]:
    out = []
    for i, image in enumerate(images(path)):
        name = image.get("file_name") if isinstance(image, dict) else None
        if not isinstance(name, str) or not name.strip():
            raise PolicyError(f"images[{i}] has no `file_name`", path=str(path),
                              fix="every COCO image needs a file_name")
        out.append(clean_path(name))
    return out


def read(spec: SplitSources, root: Path, extensions: tuple[str, ...] = ()) -> Assignment:
    rows: Rows = {}
    names: dict[str, None] = {}
    for source in spec.files:
        assert source.split is not None
        names.setdefault(source.split)  # declared even when its file lists no image
        for name in file_names(source.path):
            add(rows, names, under(source.images, name), source.split)
    return Assignment(rows, tuple(names))


def field_of(path: Path, field: str) -> dict[str, str]:
    """COCO ``file_name`` -> the image's ``field`` (dotted for nested keys), for a group rule."""
    out: dict[str, str] = {}
    for image in images(path):
        if not isinstance(image, dict) or not isinstance(image.get("file_name"), str):
            continue
        value: Any = image
        for key in field.split("."):
            value = value.get(key) if isinstance(value, dict) else None
        if value is not None and value != "":
            out[clean_path(image["file_name"])] = str(value)
    return out


# --------------------------------------------------------------------------
# Recognition (init)


def recognise(root: Path, files: list[str]) -> Guess | None:
    # split -> [(file, names)]: several files may claim one split (Roboflow's export beside a user's subset).
    claims: dict[str, list[tuple[str, list[str]]]] = {}
    for path in _shallow(root, "*.json"):
        split = json_split(path, root)
        if split is None:
            continue
        try:
            names = file_names(path)
        except PolicyError:
            continue
        if names:
            claims.setdefault(split, []).append((path.relative_to(root).as_posix(), names))
    if not claims:
        return None
    found: dict[str, tuple[str, str]] = {}
    passed: list[str] = []
    for split in (s for s in SPLIT_WORDS if s in claims):
        # The policy reads one file per split: the one listing the most images (then the first by path),
        # so a hand-made subset (cavity's train/_train_anno.json, 333 of 336) does not stand for the split.
        ranked = sorted(claims[split], key=lambda c: -len(c[1]))
        file, names = ranked[0]
        found[split] = (file, _image_folder(root, files, names, file.rpartition("/")[0]))
        passed += [f"{other} also lists {split} images ({len(n)}): not used, the policy reads one COCO file "
                   f"per split ({file}, {len(names)})" for other, n in ranked[1:]]
    lines, found_lines = [], []
    spec = SplitSources(KIND, tuple(SourceFile(root / f, s, i) for s, (f, i) in found.items()))
    assignment = read(spec, root)
    for split, (file, folder) in found.items():
        n = sum(1 for e in assignment.rows.values() if e[0][0] == split)
        # Names from the dataset: quoted scalars, so a crafted name adds no key to the policy.
        lines.append(f"    {split}: {{file: {yaml_scalar(file)}, images: {yaml_scalar(folder)}}}" if folder
                     else f"    {split}: {yaml_scalar(file)}")
        found_lines.append(f"COCO split file {file}: {n} images in {split}" + (f" (under {folder}/)" if folder else ""))
    return Guess("splits:\n  coco:\n" + "\n".join(lines) + "\n", (*found_lines, *passed), assignment)


def json_split(path: Path, root: Path) -> str | None:
    """The split a JSON file's name says (``instances_train2017.json``), else its folder's.

    Roboflow names every COCO export ``_annotations.coco.json`` and puts one in each split
    folder (``valid/_annotations.coco.json``): read by the stem alone, none was a split file,
    and a stray ``train/_train_anno.json`` became a policy of one split (cavity, probe 2).
    The folder counts only inside root (``path`` is below it), never a folder above it.
    """
    split = token_split(path.stem)
    if split is None and path.parent != root:
        split = split_word(path.parent.name)
    return split


def _image_folder(root: Path, files: list[str], names: list[str], own: str = "") -> str:
    """The folder (relative to root) that COCO ``file_name`` values are relative to: the file's
    own folder first (``own``: Roboflow keeps each split's images beside its JSON, and a darknet
    export beside it holds copies of them under ``obj/``), then root, then any folder."""
    on_disk = set(files)
    sample = names[:50]
    parents = (f.rsplit("/", 1)[0] for f in files if "/" in f)
    for folder in dict.fromkeys([own, "", *parents, *folders(root, MAX_DEPTH)]):
        if sum(under(folder, n) in on_disk for n in sample) * 2 > len(sample):
            return folder
    return ""



def _shallow(root: Path, pattern: str) -> list[Path]:
    return sorted(p for depth in ("", "*/", "*/*/") for p in root.glob(depth + pattern)
                  if not any(part.startswith(".") for part in p.relative_to(root).parts))
