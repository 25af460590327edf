"""Split sources: one module per kind of file that says which image is in which split (and group).

The registry the policy, the inventory, the group rules, ``leakcheck split``
and ``leakcheck init`` all read: ``splits: {KIND: ...}`` in a policy picks the
module; each follows the protocol in ``base.py``.  A new source is one module
here, its name in ``_MODULES``, its tests and its section of docs/sources.md.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

from ..validate import Ctx
from . import coco, huggingface, manifest, table, webdataset, yolo
from .base import Assignment, Guess, Rows, SourceFile, SplitSources, clean_path

__all__ = ["KINDS", "Assignment", "Guess", "Rows", "SourceFile", "SplitSources", "clean_path", "inputs", "parse",
           "read", "recognise"]

#: Key under ``splits:`` -> module.  ``metadata`` is a table named by one Hugging Face metadata file;
#: ``manifest`` the ``path,split[,group]`` table that ``leakcheck split`` writes.
_MODULES: dict[str, ModuleType] = {
    "manifest": manifest, "table": table, "metadata": table, "coco": coco, "yolo": yolo, "huggingface": huggingface,
    "webdataset": webdataset,
}
KINDS = tuple(_MODULES)
#: The order ``init`` tries them in: the most specific evidence first.
_RECOGNISE = (table, huggingface, webdataset, yolo, coco)


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
    """Every image the source assigns, its split and group; raises PolicyError naming file, line and fix."""
    module = _MODULES[spec.kind]
    return module.read(spec, root, extensions) if extensions else module.read(spec, root)


def recognise(root: Path, files: list[str]) -> Guess | None:
    """The first source that recognises the data under ``root`` (``init``), or None."""
    for module in _RECOGNISE:
        guess = module.recognise(root, files)
        if guess is not None:
            return guess
    return None


def missing(spec: SplitSources | None) -> tuple[Path, ...]:
    """Local files the source names that do not exist (yet: ``leakcheck split`` writes a manifest)."""
    return tuple(f.path for f in spec.files if isinstance(f.path, Path) and not f.path.is_file()) if spec else ()


def missing_fix(spec: SplitSources) -> str:
    """How to make the file a source names, for the loader's "not found" message."""
    return getattr(_MODULES[spec.kind], "MISSING_FIX", "fix the path; it is relative to `root`")


def inputs(spec: SplitSources | None) -> tuple[Path, ...]:
    """The files the policy reads for its splits (pre-commit: staging one checks everything)."""
    return tuple(f.path for f in spec.files) if spec else ()
