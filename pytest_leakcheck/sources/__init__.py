"""Split sources: one module per kind of file that says which image is in which split (and group).

The registry the policy, the inventory, the group rules, ``leakcheck split``
and ``leakcheck init`` all read: ``splits: {KIND: ...}`` in a policy picks the
module; each follows the protocol in ``base.py``.  A new source is one module
here, its name in ``_MODULES``, its tests and its section of docs/sources.md.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

from ..validate import Ctx
from . import classlists, coco, huggingface, idsplits, manifest, reads, splitlists, table, webdataset, yolo
from .base import Assignment, Guess, Rows, SourceFile, SplitSources, clean_path

__all__ = ["KINDS", "Assignment", "Guess", "Rows", "SourceFile", "SplitSources", "clean_path", "guesses", "inputs",
           "parse", "read", "recognise"]

#: Key under ``splits:`` -> module.  ``metadata`` is a table named by one Hugging Face metadata file;
#: ``manifest`` the ``path,split[,group]`` table that ``leakcheck split`` writes; ``lists`` one name list per split.
_MODULES: dict[str, ModuleType] = {
    "manifest": manifest, "table": table, "metadata": table, "coco": coco, "yolo": yolo, "huggingface": huggingface,
    "webdataset": webdataset, "lists": splitlists, "ids": idsplits,
}
KINDS = tuple(_MODULES)
#: The order ``init`` tries them in: the most specific evidence first.
_RECOGNISE = (table, huggingface, webdataset, yolo, coco, idsplits, splitlists, classlists)


def parse(ctx: Ctx, raw: Any, root: Path) -> SplitSources | None:
    """``splits: {KIND: ...}`` validated by its module; None for glob splits."""
    if not isinstance(raw, dict) or not any(k in raw for k in KINDS):
        return None
    kind = next(k for k in KINDS if k in raw)
    extra = [k for k in raw if k != kind]
    if extra:
        raise ctx.fail(("splits", str(extra[0])), f"`{kind}` cannot be combined with other split keys",
                       f"every split comes from the {kind} source; remove `{extra[0]}`")
    return _MODULES[kind].parse(ctx, raw[kind], root, kind)


def read(spec: SplitSources, root: Path, extensions: tuple[str, ...] = ()) -> Assignment:
    """Every image the source assigns, its split and group, and every file it read to say so
    (``Assignment.inputs``); raises PolicyError naming file, line and fix."""
    module = _MODULES[spec.kind]
    local = [f.path for f in spec.files if isinstance(f.path, Path)]  # a manifest may be in object storage
    folders = tuple(p for p in (root, *(f.parent for f in local)) if isinstance(p, Path))
    with reads.recording(folders) as opened:  # what the source opened, whatever it forgot to list
        found = module.read(spec, root, extensions) if extensions else module.read(spec, root)
    named = {Path(os.path.realpath(f)) for f in local}
    return replace(found, inputs=tuple(sorted(named | opened | set(found.inputs))))


def recognise(root: Path, files: list[str]) -> Guess | None:
    """The first source that recognises the data under ``root`` (``init``), or None."""
    return next(guesses(root, files), None)


def guesses(root: Path, files: list[str]) -> Iterator[Guess]:
    """What each source recognises under ``root``, most specific first, each asked only when the
    caller wants the next (``init`` goes on while a guess leaves splits out)."""
    for module in _RECOGNISE:
        guess = module.recognise(root, files)
        if guess is not None:
            yield guess


def missing(spec: SplitSources | None) -> tuple[Path, ...]:
    """Local files the source names that do not exist (yet: ``leakcheck split`` writes a manifest);
    a split of ``lists:`` may be a folder (``{images: test}``)."""
    if spec is None:
        return ()
    return tuple(f.path for f in spec.files if isinstance(f.path, Path) and not f.path.is_file()
                 and not (spec.kind == "lists" and f.path.is_dir()))


def missing_fix(spec: SplitSources) -> str:
    """How to make the file a source names, for the loader's "not found" message."""
    return getattr(_MODULES[spec.kind], "MISSING_FIX", "fix the path; it is relative to `root`")


def inputs(spec: SplitSources | None, root: Path | None = None) -> tuple[Path, ...]:
    """Every file the policy's split source reads (lists, tables, metadata, COCO files, shards):
    changing one can move an image to another split, so staging one, or a pull request changing
    one, checks everything.  With a local ``root`` the source is read to find them (:func:`read`)."""
    if spec is None:
        return ()
    named = tuple(f.path for f in spec.files if isinstance(f.path, Path))
    if not isinstance(root, Path) or len(named) != len(spec.files) or missing(spec):
        return named  # in object storage, or not there yet: what the policy names
    return read(spec, root).inputs
