"""What the shard sources share: ``SPLIT: GLOB`` policy sections, and splits guessed from shard names.

Hugging Face Parquet / Arrow shards and WebDataset tar shards are both named
like ``data/train-00000-of-00004.parquet``, ``train/data-00000-of-00001.arrow``
or ``shards/val-000123.tar``: the split is a word in the shard's name or in a
folder above it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from ..files import globs, members
from ..validate import Ctx, inside
from ..files.names import excerpt
from .base import SPLIT_WORDS, SourceFile, split_word, token_split
from .table import parse_columns

#: How deep ``init`` looks for shards.
MAX_DEPTH = 4


def parse(ctx: Ctx, raw: Any, root: Path, kind: str, suffixes: tuple[str, ...], example: str,
          ) -> tuple[tuple[SourceFile, ...], tuple[tuple[str, str], ...]]:
    """``{SPLIT: GLOB | [GLOB, ...], ..., columns: {...}}``: the shards of each split, and the column map."""
    at = ("splits", kind)
    if not isinstance(raw, dict) or not raw:
        raise ctx.fail(at, "expected a mapping of split name to shard globs", f"e.g. `{kind}: {example}`")
    columns = parse_columns(ctx, raw.get("columns"), (*at, "columns"))
    files = listing(root, suffixes)
    out: list[SourceFile] = []
    owner: dict[str, str] = {}
    for name, patterns in raw.items():
        if name == "columns":
            continue
        where = (*at, str(name))
        if not isinstance(name, str) or not name.replace("-", "").replace("_", "").isalnum():
            raise ctx.fail(where, "split names use letters, digits, - and _")
        found = []
        for i, pattern in enumerate(ctx.strings(patterns, where)):
            try:
                matcher = globs.compile(pattern)
            except globs.GlobError as exc:
                raise ctx.fail((*where, str(i)), f"malformed glob {excerpt(pattern)}: {exc}") from None
            found += [f for f in files if matcher.match(f)]
        if not found:
            raise ctx.fail(where, f"no {'/'.join(suffixes)} shard under root matches {excerpt(patterns)}",
                           f"globs are relative to root, e.g. `{example}`")
        for rel in dict.fromkeys(found):
            if rel in owner and owner[rel] != name:
                raise ctx.fail(where, f"shard {excerpt(rel)} is in split `{owner[rel]}` too",
                               "make each split's globs match only its own shards")
            owner[rel] = name
            path = inside(ctx, where, rel, root / rel, (root,), "shard")
            for text in (rel, str(root / rel), str(path)):
                if not members.unambiguous(text):
                    raise ctx.fail(where, f"shard {excerpt(text)} has a folder named like a shard and `#` in its path, "
                                   "so its members' names would read as another shard's",
                                   "rename the folder (or the root) so no part of the path but the shard "
                                   "itself ends in .tar, .parquet or .arrow before a `#`")
            _no_decoy(ctx, where, path)
            out.append(SourceFile(path, name, rel))
    return tuple(out), columns


def _no_decoy(ctx: Ctx, where: tuple[str, ...], shard: Path) -> None:
    """Refuse a file or folder beside the shard named like one of its members (``x.tar#a.jpg``):
    a member path would then name two things, and a reader could take the decoy for the member."""
    try:
        names = os.listdir(shard.parent)
    except OSError:
        return
    clash = next((n for n in names if n.startswith(shard.name + members.SEP)), None)
    if clash is not None:
        raise ctx.fail(where, f"{excerpt(clash)} beside shard {excerpt(shard.name)} is named like one of its members",
                       "rename that file or folder: a member path must name the member alone")


def listing(root: Path, suffixes: tuple[str, ...]) -> list[str]:
    """Every shard file under root (POSIX, relative), sorted; hidden folders skipped."""
    out = []
    for folder, dirs, names in os.walk(root):
        rel = Path(folder).relative_to(root)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if len(rel.parts) < MAX_DEPTH else []
        prefix = "" if not rel.parts else rel.as_posix() + "/"
        out += [prefix + n for n in sorted(names) if n.lower().endswith(suffixes) and not n.startswith(".")]
    return sorted(out)


def split_of(rel: str) -> str | None:
    """A shard's split from its name (``train-00000-of-00004``), else from the nearest folder that names one."""
    parts = rel.split("/")
    stem = parts[-1].split(".")[0]
    return token_split(stem) or next((s for p in reversed(parts[:-1]) if (s := split_word(p))), None)


def guess_globs(shards: list[str]) -> dict[str, list[str]] | None:
    """Split -> globs that match exactly its shards, in train/val/test order; None when no split is named."""
    by_split: dict[str, list[str]] = {}
    for rel in shards:
        split = split_of(rel)
        if split is None:
            return None
        by_split.setdefault(split, []).append(rel)
    if len(by_split) < 2:
        return None
    out: dict[str, list[str]] = {}
    for split in (s for s in SPLIT_WORDS if s in by_split):
        mine = by_split[split]
        patterns = list(dict.fromkeys(_glob(rel) for rel in mine))
        matchers = [globs.compile(p) for p in patterns]
        clean = all(any(m.match(r) for m in matchers) == (r in mine) for r in shards)
        out[split] = patterns if clean else mine
    return out


def _glob(rel: str) -> str:
    """``data/train*.parquet`` for ``data/train-00000-of-00004.parquet``: the name up to its split word.

    The split word may follow a dataset's name (``mydata-train-000000.tar`` ->
    ``mydata-train*.tar``): a glob that stops before it matched every split's
    shards, so each shard was listed by name and a shard added later was in no
    split, unchecked.
    """
    folder, _, name = rel.rpartition("/")
    prefix = folder + "/" if folder else ""
    suffix = name[name.index("."):] if "." in name else ""
    stem = name[:len(name) - len(suffix)]
    for m in re.finditer(r"[A-Za-z]+", stem):
        if split_word(m.group(0)):  # train-00000-of-00004.parquet -> train*.parquet
            return f"{prefix}{stem[:m.end()]}*{suffix}"
    return f"{prefix}*{suffix}"


def parse_globs(root: Path, by_split: dict[str, list[str]], suffixes: tuple[str, ...]) -> tuple[SourceFile, ...]:
    """The shards ``init``'s guessed globs match, as :func:`parse` would give them."""
    files = listing(root, suffixes)
    out = []
    for split, patterns in by_split.items():
        matchers = [globs.compile(p) for p in patterns]
        out += [SourceFile((root / f).resolve(), split, f) for f in files if any(m.match(f) for m in matchers)]
    return tuple(out)
