"""Splits read from files a dataset already has: COCO split files and metadata tables.

A COCO dataset says which image is in which split by the annotation file that
lists it (``instances_train.json``, ``instances_test.json``); a Hugging Face
style dataset by a ``split`` column of ``metadata.csv`` / ``metadata.jsonl``.
Writing a converter to a manifest is busywork that goes stale, so the policy
can name these files directly::

    splits:
      coco:
        train: annotations/instances_train.json            # file_name relative to root
        test: {file: annotations/instances_test.json, images: test2017}

    splits:
      metadata: metadata.jsonl   # file_name (or path) relative to this file's folder, and split

Both read into the same rows a manifest does (path -> splits), so the
inventory treats them exactly like a manifest: unlisted, ambiguous and
missing files are findings.  This module imports neither the policy nor the
inventory: both import it.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..files import jsontext
from ..policy.config import Ctx, inside, type_name
from ..errors import PolicyError
from ..files.names import excerpt

#: Keys under ``splits:`` that name a split source instead of a split.
KINDS = ("coco", "metadata")
#: Columns (CSV) or fields (JSON lines) that name the image, first found wins.
PATH_FIELDS = ("file_name", "path")

Rows = dict[str, list[tuple[str, "str | None"]]]


@dataclass(frozen=True)
class SourceFile:
    """One file that assigns splits; ``split`` is None when the file has a split column."""

    path: Path
    split: str | None = None
    #: Folder, relative to root and POSIX, that the file's image names are relative to.
    images: str = ""


@dataclass(frozen=True)
class SplitSources:
    kind: str
    files: tuple[SourceFile, ...]

    @property
    def names(self) -> tuple[str, ...]:
        """Split names known without reading the files (COCO); empty for metadata."""
        return tuple(f.split for f in self.files if f.split is not None)


# --------------------------------------------------------------------------
# Policy section (called from policy.load)


def parse(ctx: Ctx, raw: Any, root: Path) -> SplitSources | None:
    """``splits: {coco: ...}`` or ``splits: {metadata: FILE}``; None for globs or a manifest."""
    if not isinstance(raw, dict) or not any(k in raw for k in KINDS):
        return None
    at = ("splits",)
    kind = next(k for k in KINDS if k in raw)
    extra = [k for k in raw if k != kind]
    if extra:
        raise ctx.fail((*at, str(extra[0])), f"`{kind}` cannot be combined with other split keys",
                       f"every split comes from the {kind} file(s); remove `{extra[0]}`")
    if kind == "metadata":
        return SplitSources(kind, (_metadata_file(ctx, raw[kind], root),))
    value = raw[kind]
    if not isinstance(value, dict) or not value:
        raise ctx.fail((*at, kind), f"expected a mapping of split name to COCO file, got {type_name(value)}",
                       "e.g. `coco: {train: instances_train.json, test: instances_test.json}`")
    files = []
    for name, spec in value.items():
        where = (*at, kind, str(name))
        if not isinstance(name, str) or not name.replace("-", "").replace("_", "").isalnum():
            raise ctx.fail(where, "split names use letters, digits, - and _")
        if isinstance(spec, str):
            spec = {"file": spec}
        spec = ctx.mapping(spec, where, ("file", "images"))
        path = _existing(ctx, spec.get("file"), (*where, "file"), root, "COCO file")
        images = spec.get("images", "")
        if not isinstance(images, str):
            raise ctx.fail((*where, "images"), "expected a folder relative to root")
        if images and not (root / images).is_dir():
            raise ctx.fail((*where, "images"), f"image folder {excerpt(images)} not found",
                           "the folder the file_name values are relative to, relative to root")
        files.append(SourceFile(path, name, images.strip("/").replace("\\", "/")))
    return SplitSources(kind, tuple(files))


def _metadata_file(ctx: Ctx, value: Any, root: Path) -> SourceFile:
    path = _existing(ctx, value, ("splits", "metadata"), root, "metadata file")
    if path.suffix.lower() not in (".csv", ".jsonl"):
        raise ctx.fail(("splits", "metadata"), f"metadata file {excerpt(value)} is neither .csv nor .jsonl",
                       "name a metadata.csv or metadata.jsonl with file_name and split")
    try:
        images = path.parent.relative_to(root).as_posix()
    except ValueError:
        raise ctx.fail(("splits", "metadata"), f"metadata file {excerpt(value)} is outside root",
                       "keep it beside the images it lists") from None
    return SourceFile(path, None, "" if images == "." else images)


def _existing(ctx: Ctx, value: Any, at: tuple[str, ...], root: Path, what: str) -> Path:
    if not isinstance(value, str) or not value:
        raise ctx.fail(at, f"expected a path to a {what}")
    path = inside(ctx, at, value, root / value, (ctx.path.parent, root), what)
    if not path.is_file():
        raise ctx.fail(at, f"{what} {excerpt(value)} not found ({path})", "fix the path; it is relative to `root`")
    return path


# --------------------------------------------------------------------------
# Reading (called from inventory.scan)


def read(sources: SplitSources) -> tuple[Rows, tuple[str, ...]]:
    """Path relative to root -> [(split, group)], and split names in first-seen order."""
    rows: Rows = {}
    names: dict[str, None] = {}
    for source in sources.files:
        if source.split is not None:  # a COCO split is declared even when its file lists no image
            names.setdefault(source.split)
        pairs = _coco(source.path) if sources.kind == "coco" else _metadata(source.path)
        prefix = source.images + "/" if source.images else ""
        for rel, split in pairs:
            split = source.split or split
            rows.setdefault(prefix + _clean(rel), []).append((split, None))
            names.setdefault(split)
    return rows, tuple(names)


def _clean(rel: str) -> str:
    rel = rel.strip().replace("\\", "/")
    while rel.startswith("./"):
        rel = rel[2:]
    return rel


def _coco(path: Path) -> list[tuple[str, str]]:
    try:
        data = jsontext.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise PolicyError(f"COCO file is not valid JSON: {exc.msg}", path=str(path), line=exc.lineno,
                          fix="point `splits.coco` at COCO annotation files") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(f"cannot read COCO file: {exc}", path=str(path)) from None
    images = data.get("images") if isinstance(data, dict) else None
    if not isinstance(images, list):
        raise PolicyError("COCO file has no `images` list", path=str(path),
                          fix="a COCO file is an object with an `images` list of {file_name, ...}")
    out = []
    for i, image in enumerate(images):
        name = image.get("file_name") if isinstance(image, dict) else None
        if not isinstance(name, str) or not name.strip():
            raise PolicyError(f"images[{i}] has no `file_name`", path=str(path),
                              fix="every COCO image needs a file_name")
        out.append((name, ""))
    return out


def _metadata(path: Path) -> list[tuple[str, str]]:
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            if path.suffix.lower() == ".csv":
                reader = csv.DictReader(fh)
                return _rows(path, reader.fieldnames or [], ((reader.line_num, r) for r in reader))
            records = []
            for n, line in enumerate(fh, 1):
                if line.strip():
                    records.append((n, _json_line(path, n, line)))
            fields = list(records[0][1]) if records else []
            return _rows(path, fields, iter(records))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise PolicyError(f"cannot read metadata: {exc}", path=str(path)) from None


def _json_line(path: Path, n: int, line: str) -> dict:
    try:
        value = jsontext.loads(line)
    except json.JSONDecodeError as exc:
        raise PolicyError(f"not a JSON object: {exc.msg}", path=str(path), line=n,
                          fix="metadata.jsonl holds one JSON object per line") from None
    if not isinstance(value, dict):
        raise PolicyError("not a JSON object", path=str(path), line=n,
                          fix="metadata.jsonl holds one JSON object per line")
    return value


def _rows(path: Path, fields: list[str], records: Any) -> list[tuple[str, str]]:
    column = next((c for c in PATH_FIELDS if c in fields), None)
    if column is None or "split" not in fields:
        need = "split" if column else "file_name"
        listed = excerpt(", ".join(fields)) if fields else "none"
        raise PolicyError(f"metadata has no `{need}` field (fields: {listed})",
                          path=str(path), line=1,
                          fix="metadata needs `file_name` (or `path`) and `split` for every image")
    out = []
    for line, record in records:
        rel, split = str(record.get(column) or "").strip(), str(record.get("split") or "").strip()
        if not rel or not split:
            raise PolicyError(f"row with an empty {column} or split", path=str(path), line=line,
                              fix="fill in both or delete the row")
        out.append((rel, split))
    return out


def inputs(sources: SplitSources | None) -> tuple[Path, ...]:
    """The files the policy reads for its splits (pre-commit: staging one checks everything)."""
    return tuple(f.path for f in sources.files) if sources else ()
