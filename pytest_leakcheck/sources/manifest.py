"""``splits: {manifest: FILE}``: one table of ``path,split[,group]`` that ``leakcheck split`` writes.

The manifest is a split source like any other, so the inventory, the group
rules, the pre-commit hook and ``--changed-since`` reach it through the one
registry.  It differs from a ``table`` source in two ways users rely on: it may
be a URL in object storage beside an ``s3://`` root, and ``leakcheck split``
names it before it exists (``need_files=False`` in the policy loader).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..files import remote
from ..files.names import excerpt
from ..validate import Ctx, inside
from ..validate import remote as remote_allowed
from .base import Assignment, Guess, SourceFile, SplitSources

KIND = "manifest"
#: What to do when the file the policy names is not there (the loader's message).
MISSING_FIX = "write a CSV with columns path,split[,group]"


def parse(ctx: Ctx, raw: Any, root: Path, kind: str = KIND) -> SplitSources:
    """The manifest's location, refused outside the policy's folder and root (or the allowed URLs)."""
    at = ("splits", KIND)
    if not isinstance(raw, str):
        raise ctx.fail(at, "expected a path to a CSV file")
    where = remote.locate(root, raw)
    if where is None:
        raise ctx.fail(at, f"{excerpt(raw)} is not a usable URL", "write it as s3://bucket/key, without `..` above the bucket")
    if isinstance(where, remote.Url):
        where = remote_allowed(ctx, at, raw, where)
    else:
        folders = (ctx.path.parent, root) if isinstance(root, Path) else (ctx.path.parent,)
        where = inside(ctx, at, raw, where, folders, "manifest")
    return SplitSources(KIND, (SourceFile(where),))


def read(spec: SplitSources, root: Path, extensions: tuple[str, ...] = ()) -> Assignment:
    """Every row's split and group, split names in first-seen order."""
    from .table import read_manifest

    _, rows, _ = read_manifest(spec.files[0].path)
    names = tuple(dict.fromkeys(s for entries in rows.values() for s, _ in entries))
    return Assignment(rows, names)


def recognise(root: Path, files: list[str]) -> Guess | None:
    """``init`` proposes a ``table`` source for a table it finds; a manifest is what ``split`` writes."""
    return None
