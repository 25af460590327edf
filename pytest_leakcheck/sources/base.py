"""The split-source protocol: what every reader of a file that assigns splits provides.

A split source is one module of this package (``table``, ``coco``, ``yolo``, ``splitlists``,
``huggingface``, ``webdataset``) that defines:

- ``KIND``: its key under ``splits:`` (``table`` also answers to ``manifest``-like
  ``metadata``);
- ``parse(ctx, raw, root) -> SplitSources``: validate its policy section through
  ``config.Ctx``, so errors name the file, line, key and fix;
- ``read(spec, root, extensions) -> Assignment``: which image is in which split
  (and group), and, for shards, the images inside them;
- ``recognise(root, files) -> Guess | None``: for ``leakcheck init``, the
  policy text it would write and what it found.

Nothing here imports the policy or the inventory (both import this package),
numpy, Pillow or pyarrow.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
import os
from pathlib import Path
from typing import Any

from ..validate import Ctx, type_name
from ..files.litter import ARCHIVE_FOLDERS

#: The roles a column of a table can play; ``image`` is the bytes column of a shard.
ROLES = ("file", "split", "group", "label", "image")

#: path -> [(split, group)]: several entries for one path make it ambiguous.
Rows = dict[str, list[tuple[str, "str | None"]]]


@dataclass(frozen=True)
class SourceFile:
    """One file that assigns splits; ``split`` is None when the file has a split column."""

    path: Path
    split: str | None = None
    #: Folder, relative to root and POSIX, that the file's image names are relative to;
    #: for a shard (Parquet, Arrow, tar), the shard itself relative to root.
    images: str = ""


@dataclass(frozen=True)
class SplitSources:
    """The ``splits:`` section when it names files rather than globs."""

    kind: str
    files: tuple[SourceFile, ...]
    #: role -> column name (``file``, ``split``, ``group``, ``label``, ``image``), as the policy maps them.
    columns: tuple[tuple[str, str], ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        """Split names known without reading the files (one file per split); empty for a split column."""
        return tuple(dict.fromkeys(f.split for f in self.files if f.split is not None))

    def column(self, role: str, default: str | None = None) -> str | None:
        return dict(self.columns).get(role, default)


@dataclass(frozen=True)
class Assignment:
    """What a source read: each image's split (and group), and the images inside shards."""

    rows: Rows
    #: Split names in first-seen order.
    names: tuple[str, ...]
    #: Images stored inside shards: (member path, size, mtime_ns), listed as files are.
    members: tuple[tuple[str, int, int], ...] = ()
    #: path -> label, when the source has a label column (init never takes a class for a group).
    labels: dict[str, str] = field(default_factory=dict)
    #: path -> {column: value} of the other columns (init looks there for group ids).
    extra: dict[str, dict[str, str]] = field(default_factory=dict)
    #: Every file read to assign the splits, resolved (the registry fills it in: sources.read).
    inputs: tuple[Path, ...] = ()


@dataclass(frozen=True)
class Guess:
    """What ``init`` recognised: the ``splits:`` text, the Found: lines, and what it read."""

    splits_yaml: str
    found: tuple[str, ...]
    assignment: Assignment
    #: Set when a group column goes into the source's own ``columns:`` (tables): the YAML line's indent.
    columns_indent: str = ""
    #: What the guess leaves the check unable to see (rows stored by path only), as ``Warning:`` lines.
    warnings: tuple[str, ...] = ()


def clean_path(rel: str) -> str:
    """A path as a table may write it, in the inventory's form: POSIX, no leading ``./``."""
    rel = rel.strip().replace("\\", "/")
    while rel.startswith("./"):
        rel = rel[2:]
    return rel


def under(folder: str, rel: str) -> str:
    """``rel`` (a name the source lists) relative to root, given the folder it is relative to."""
    rel = clean_path(rel)
    return f"{folder}/{rel}" if folder else rel


def add(rows: Rows, names: dict[str, None], path: str, split: str, group: str | None = None) -> None:
    rows.setdefault(path, []).append((split, group))
    names.setdefault(split)


#: Words that name a split, as folders, file name tokens and data.yaml keys use them.
SPLIT_WORDS = {
    "train": ("train", "training", "trn"),
    "val": ("val", "valid", "validation", "dev"),
    "test": ("test", "testing", "tst", "holdout"),
}


def split_word(name: str) -> str | None:
    """``train`` for ``Training``; None when the name is no split word."""
    low = name.lower()
    return next((s for s, words in SPLIT_WORDS.items() if low in words), None)


def split_folder(path: str, max_depth: int = 6) -> str | None:
    """``data/valid`` of ``data/valid/images/a.jpg``: the shallowest folder of a file's path named
    like a split (at most ``max_depth`` deep), where ``init`` looks for split folders; None when none is."""
    parts = path.split("/")[:-1]
    for k, part in enumerate(parts[:max_depth]):
        if split_word(part):
            return "/".join(parts[:k + 1])
    return None


def token_split(name: str) -> str | None:
    """``instances_train2017.json`` -> train: a split word among the name's letter runs."""
    import re

    for token in re.split(r"[^a-z]+", name.lower()):
        split = split_word(token)
        if split:
            return split
    return None


#: How deep split folders and annotation files are looked for under a dataset's root.
MAX_DEPTH = 6


#: Folders that tools write beside a dataset, never data: Ultralytics' ``runs/detect/train/``
#: (its plots and predictions are images in a folder named like a split: a held-out YOLO
#: repository's ``init`` proposed them as training data), experiment trackers, environments.
TOOL_OUTPUT = frozenset({"runs", "wandb", "mlruns", "lightning_logs", "__pycache__", "node_modules",
                         "venv", "site-packages"})


def visible(dirs: list[str]) -> list[str]:
    """The folders ``init`` looks into, sorted: not hidden, not a tool's output (:data:`TOOL_OUTPUT`),
    not an archiver's (``files.litter``: a Mac zip's ``__MACOSX/``, which mirrors the data's folders
    with resource forks named like its images, so its ``training_data/`` looked like a split)."""
    return sorted(d for d in dirs if not d.startswith(".") and d not in TOOL_OUTPUT and d not in ARCHIVE_FOLDERS)


def folders(root: Path, max_depth: int = MAX_DEPTH) -> list[str]:
    """Every visible folder under ``root`` (POSIX, relative), at most ``max_depth`` deep: where
    ``init`` looks for split folders and annotation files."""
    out = []
    for folder, dirs, _ in os.walk(root):
        dirs[:] = visible(dirs)
        rel = Path(folder).relative_to(root)
        if len(rel.parts) >= max_depth:
            dirs[:] = []
        if rel.parts:
            out.append(rel.as_posix())
    return out


def per_split(ctx: Ctx, raw: Any, kind: str, what: str, example: str,
              many: bool = False) -> Iterator[tuple[str, tuple[str, ...], dict]]:
    """Each split of a ``KIND: {SPLIT: FILE | {file, images}}`` section, validated alike:
    its name, its key path (for messages) and its spec as a mapping.  With ``many``, a split
    may also name a list of them (``train: [a/train.txt, {file: b/train.txt, images: b}]``:
    one list per class, each beside its own image folder), each yielded in turn."""
    at = ("splits", kind)
    if not isinstance(raw, dict) or not raw:
        raise ctx.fail(at, f"expected a mapping of split name to {what}, got {type_name(raw)}", example)
    for name, spec in raw.items():
        where = (*at, str(name))
        if not isinstance(name, str) or not name.replace("-", "").replace("_", "").isalnum():
            raise ctx.fail(where, "split names use letters, digits, - and _")
        if many and isinstance(spec, list):
            if not spec:
                raise ctx.fail(where, f"expected at least one {what}", example)
            items = [((*where, str(n)), item) for n, item in enumerate(spec)]
        else:
            items = [(where, spec)]
        for at_item, item in items:
            yield name, at_item, ctx.mapping({"file": item} if isinstance(item, str) else item, at_item,
                                             ("file", "images"))
