"""WebDataset tar shards: each image member is checked in place as ``<shard>#<member>``.

::

    splits:
      webdataset:
        train: shards/train-*.tar            # globs relative to root
        test: shards/test-*.tar
        columns: {group: subject_id}         # optional: a field of each sample's .json member

A sample is the members sharing a key (``000123.jpg``, ``000123.cls``,
``000123.json``); a finding names the shard and the member.  Only
uncompressed tars can be read in place (members are found by offset); a
shard that is not one stops the check with its name and the fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..files import jsontext
from ..validate import Ctx
from ..errors import PolicyError
from ..files import members, suffixes
from .base import Assignment, Guess, Rows, SplitSources, add
from .shards import guess_globs, listing, parse_globs
from .shards import parse as parse_shards
from ..files.escape import yaml_scalar

KIND = "webdataset"
SUFFIXES = (members.TAR,)
IMAGE_EXTS = suffixes.PICTURES
#: A sample's .json member is read for its group only up to this size.
MAX_JSON = 1 << 20


def parse(ctx: Ctx, raw: Any, root: Path, kind: str = KIND) -> SplitSources:
    files, columns = parse_shards(ctx, raw, root, KIND, SUFFIXES, "{train: shards/train-*.tar, test: "
                                  "shards/test-*.tar}")
    return SplitSources(KIND, files, columns)


def _index(path: Path) -> dict[str, tuple[int, int]]:
    try:
        return members.tar_index(str(path))
    except OSError as exc:
        raise PolicyError(str(exc).split(": ", 1)[-1], path=str(path)) from None  # the text says the fix


def _fields(path: Path, index: dict[str, tuple[int, int]], name: str) -> dict[str, str]:
    """The top-level fields of a sample's ``.json`` member, as text; empty when it has none."""
    offset, size = index.get(name, (0, 0))
    if not size or size > MAX_JSON:
        return {}
    with open(path, "rb") as fh:
        fh.seek(offset)
        raw = fh.read(size)
    try:
        value = jsontext.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise PolicyError(f"member {name!r} is not valid JSON", path=str(path),
                          fix="each sample's .json member holds one JSON object") from None
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v).strip() for k, v in value.items() if isinstance(v, (str, int)) and not isinstance(v, bool)}


def read(spec: SplitSources, root: Path, extensions: tuple[str, ...] = IMAGE_EXTS) -> Assignment:
    rows: Rows = {}
    names: dict[str, None] = {}
    found: list[tuple[str, int, int]] = []
    labels: dict[str, str] = {}
    extra: dict[str, dict[str, str]] = {}
    group_col = spec.column("group")
    for source in spec.files:
        assert source.split is not None
        names.setdefault(source.split)
        index = _index(source.path)
        mtime = source.path.stat().st_mtime_ns
        for name, (_, size) in index.items():
            if not name.lower().endswith(extensions or IMAGE_EXTS):
                continue
            folder, _, base = name.rpartition("/")
            key = (folder + "/" if folder else "") + base.split(".", 1)[0]  # WebDataset: the key ends at the first dot
            fields = _fields(source.path, index, key + ".json") if key + ".json" in index else {}
            path = members.join(source.images, name)
            add(rows, names, path, source.split, fields.get(group_col) or None if group_col else None)
            found.append((path, size, mtime))
            if fields:
                extra[path] = fields
            label = fields.get("label") or _small(source.path, index, key + ".cls")
            if label:
                labels[path] = label
    return Assignment(rows, tuple(names), tuple(found), labels, extra)


def _small(path: Path, index: dict[str, tuple[int, int]], name: str) -> str:
    offset, size = index.get(name, (0, 0))
    if not size or size > 256:
        return ""
    with open(path, "rb") as fh:
        fh.seek(offset)
        return fh.read(size).decode("utf-8", "replace").strip()


def recognise(root: Path, files: list[str]) -> Guess | None:
    shards = [rel for rel in listing(root, SUFFIXES)]
    by_split = guess_globs(shards) if shards else None
    if not by_split:
        return None
    spec = SplitSources(KIND, parse_globs(root, by_split, SUFFIXES))
    # Shards named by split that cannot be read stop init naming the shard, as they would stop the
    # check: "no splits recognised" would hide which shard is damaged.
    assignment = read(spec, root)
    if not assignment.rows:
        return None
    yaml = "splits:\n  webdataset:\n" + "".join(f"    {s}: [{', '.join(yaml_scalar(g) for g in p)}]\n"
                                                 for s, p in by_split.items())
    found = tuple(
        f"WebDataset shards {', '.join(p)}: {sum(1 for e in assignment.rows.values() if e[0][0] == s)} images "
        f"in {s} (tar members, checked in place)" for s, p in by_split.items())
    return Guess(yaml, found, assignment, columns_indent="    ")
