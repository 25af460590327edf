"""Tables of files: CSV, TSV, JSON lines or Parquet, with columns mapped to file, split, group, label.

One reader for every table the policy names: a manifest (``splits: {manifest:
FILE}``, columns ``path,split[,group]``), a Hugging Face ``metadata.csv`` /
``metadata.jsonl`` (``splits: {metadata: FILE}``), any table
(``splits: {table: ...}``), and the group tables of ``groups:`` rules::

    splits:
      table:
        file: labels.csv          # relative to root
        images: images            # the folder file names are relative to (default: the table's)
        columns: {file: filename, split: split, label: label, group: subject_id}

    splits:
      table:                      # one table per split: no split column
        train: train/metadata.jsonl
        test: {file: test/metadata.jsonl, images: test}
        columns: {file: file_name, group: subject_id}
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..files import jsontext
from ..validate import Ctx, inside, type_name
from ..errors import PolicyError
from ..files.names import excerpt
from ..files.remote import Url, open_text
from ..files.escape import yaml_scalar
from .base import (
    ROLES,
    SPLIT_WORDS,
    Assignment,
    Guess,
    Rows,
    SourceFile,
    SplitSources,
    add,
    clean_path,
    split_word,
    token_split,
    under,
)

KIND = "table"
#: Table suffixes this module reads.
SUFFIXES = (".csv", ".tsv", ".jsonl", ".parquet")
#: Column names ``init`` and an unmapped table take for each role, first found wins.
GUESSES = {
    "file": ("file", "filename", "file_name", "filepath", "file_path", "image", "image_path", "img", "path",
             "image_id", "id"),
    "split": ("split", "set", "fold", "subset", "partition"),
    "group": ("subject", "subject_id", "patient", "patient_id", "case", "case_id", "video", "video_id",
              "session", "session_id", "group", "group_id", "participant", "participant_id", "scene", "sequence"),
    "label": ("label", "labels", "class", "class_name", "category", "target", "y"),
}
#: A cell longer than this is refused: no file name or id is that long, and a
#: table built to exhaust memory should fail early with its line.
MAX_CELL = 65_536

Record = tuple[int, dict[str, str]]


# --------------------------------------------------------------------------
# Reading any table: (line or row number, {column: text})


def records(path: Path | Url, what: str = "table") -> tuple[list[str], Iterator[Record]]:
    """The columns of a table and its records, numbered as a person finds them (line, or row for Parquet).

    Raises PolicyError naming the file, the line and the fix on anything malformed.
    """
    suffix = str(path).lower().rsplit(".", 1)[-1]
    if suffix == "parquet":
        return _parquet(Path(str(path)), what)
    if suffix == "jsonl":
        return _jsonl(path, what)
    return _csv(path, what, "\t" if suffix == "tsv" else ",")


def _cell(path: Path | Url, line: int, value: Any, what: str) -> str:
    text = "" if value is None else str(value)
    if len(text) > MAX_CELL:
        raise PolicyError(f"{what} has a cell of {len(text):,} characters (more than {MAX_CELL:,})", path=str(path),
                          line=line, fix="a cell holds a file name, split, group or label; fix or delete the row")
    return text.strip()


def _csv(path: Path | Url, what: str, delimiter: str) -> tuple[list[str], Iterator[Record]]:
    def rows() -> Iterator[Record]:
        with open_text(path) as fh:
            reader = csv.DictReader(fh, delimiter=delimiter, strict=True)
            try:
                for row in reader:
                    if None in row:  # more cells than the header has columns
                        raise PolicyError(f"{what} row has {len(reader.fieldnames or []) + len(row[None])} cells, "
                                          f"the header {len(reader.fieldnames or [])}", path=str(path),
                                          line=reader.line_num, fix="quote cells that hold the delimiter, or fix the row")
                    yield reader.line_num, {k: _cell(path, reader.line_num, v, what) for k, v in row.items()
                                            if isinstance(k, str)}
            except csv.Error as exc:
                raise PolicyError(f"{what} row is malformed: {exc}", path=str(path), line=reader.line_num + 1,
                                  fix="quote cells that hold the delimiter or a newline, or delete the row") from None
    try:
        with open_text(path) as fh:
            header = next(csv.reader(fh, delimiter=delimiter), [])
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise PolicyError(f"cannot read {what}: {exc}", path=str(path)) from None
    return [h.strip() for h in header], _guarded(rows(), path, what)


def _jsonl(path: Path | Url, what: str) -> tuple[list[str], Iterator[Record]]:
    def rows() -> Iterator[Record]:
        with open_text(path) as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                if len(line) > MAX_CELL * 4:
                    raise PolicyError(f"{what} line {n} is {len(line):,} characters long", path=str(path), line=n,
                                      fix="one short JSON object per line: file name, split, group, label")
                try:
                    value = jsontext.loads(line)
                except json.JSONDecodeError as exc:
                    raise PolicyError(f"not a JSON object: {exc.msg}", path=str(path), line=n,
                                      fix="a .jsonl file holds one JSON object per line") from None
                if not isinstance(value, dict):
                    raise PolicyError("not a JSON object", path=str(path), line=n,
                                      fix="a .jsonl file holds one JSON object per line")
                yield n, {str(k): _cell(path, n, v, what) for k, v in value.items()
                          if not isinstance(v, (dict, list))}
    fields: list[str] = []
    for _, rec in _guarded(rows(), path, what):
        fields = list(rec)
        break
    return fields, _guarded(rows(), path, what)


def _parquet(path: Path, what: str) -> tuple[list[str], Iterator[Record]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise PolicyError(f"reading a Parquet {what} needs pyarrow", path=str(path),
                          fix="pip install 'pytest-leakcheck[huggingface]'") from None
    try:
        pf = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises its own types on a damaged file
        raise PolicyError(f"cannot read {what}: not a Parquet file ({exc})", path=str(path),
                          fix="name a .parquet table with a column of file names") from None
    import pyarrow as pa

    # Only text and number columns: a bytes column is a shard of images (`huggingface:`), not a table of names.
    names = [f.name for f in pf.schema_arrow
             if not (pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type) or pa.types.is_nested(f.type))]

    def rows() -> Iterator[Record]:
        n = 0
        for g in range(pf.num_row_groups):
            for rec in pf.read_row_group(g, columns=names).to_pylist():
                n += 1
                yield n, {k: _cell(path, n, v, what) for k, v in rec.items()}
    return names, rows()


def _guarded(rows: Iterator[Record], path: Path | Url, what: str) -> Iterator[Record]:
    try:
        yield from rows
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(f"cannot read {what}: {exc}", path=str(path)) from None


def column_of(fields: list[str], role: str, mapped: str | None, path: Path | Url, what: str,
              need: bool = True) -> str | None:
    """The column playing ``role``: the mapped one (which must exist), else the first known name."""
    if mapped is not None:
        if mapped not in fields:
            raise PolicyError(f"{what} has no column `{mapped}` (columns: {_listed(fields)})", path=str(path),
                              line=1, fix=f"map `{role}` to one of the columns under `columns:`")
        return mapped
    lower = {f.lower(): f for f in fields}
    found = next((lower[g] for g in GUESSES.get(role, ()) if g in lower), None)
    if found is None and need:
        raise PolicyError(f"{what} has no {role} column (columns: {_listed(fields)})", path=str(path), line=1,
                          fix=f"name it under `columns: {{{role}: COLUMN}}`")
    return found


def _listed(fields: list[str]) -> str:
    return excerpt(", ".join(fields)) if fields else "none"


# --------------------------------------------------------------------------
# The split source


def parse(ctx: Ctx, raw: Any, root: Path, kind: str = KIND) -> SplitSources:
    """``table: {file, images, columns}`` or ``table: {SPLIT: FILE | {file, images}, ..., columns}``."""
    at = ("splits", kind)
    if kind == "metadata":  # a Hugging Face metadata file: names relative to its own folder
        file = _file(ctx, raw, at, root)
        return SplitSources("metadata", (SourceFile(file, None, _folder_of(ctx, at, file, root)),))
    if isinstance(raw, str):
        raw = {"file": raw}
    if not isinstance(raw, dict) or not raw:
        raise ctx.fail(at, f"expected a mapping, got {type_name(raw)}",
                       "e.g. `table: {file: labels.csv, columns: {file: filename, split: split}}`")
    columns = parse_columns(ctx, raw.get("columns"), (*at, "columns"))
    if "file" in raw:
        spec = ctx.mapping(raw, at, ("file", "images", "columns"))
        return SplitSources(KIND, (_source(ctx, spec, at, root, None),), columns)
    files = []
    for name, spec in raw.items():
        if name == "columns":
            continue
        where = (*at, str(name))
        if not isinstance(name, str) or not name.replace("-", "").replace("_", "").isalnum():
            raise ctx.fail(where, "split names use letters, digits, - and _",
                           "name one `file:`, or map each split to its table")
        spec = ctx.mapping({"file": spec} if isinstance(spec, str) else spec, where, ("file", "images"))
        files.append(_source(ctx, spec, where, root, name))
    return SplitSources(KIND, tuple(files), columns)


def parse_columns(ctx: Ctx, raw: Any, at: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    raw = ctx.mapping(raw, at, ROLES)
    for role, name in raw.items():
        if not isinstance(name, str) or not name:
            raise ctx.fail((*at, role), "expected a column name")
    return tuple(raw.items())


def _source(ctx: Ctx, spec: dict, at: tuple[str, ...], root: Path, split: str | None) -> SourceFile:
    file = _file(ctx, spec.get("file"), (*at, "file"), root)
    images = spec.get("images")
    if images is None:
        return SourceFile(file, split, _folder_of(ctx, at, file, root))
    if not isinstance(images, str):
        raise ctx.fail((*at, "images"), "expected a folder relative to root")
    folder = inside(ctx, (*at, "images"), images, root / images, (root,), "image folder")
    if not folder.is_dir():
        raise ctx.fail((*at, "images"), f"image folder {excerpt(images)} not found",
                       "the folder the table's file names are relative to, relative to root")
    rel = folder.relative_to(root.resolve()).as_posix()
    return SourceFile(file, split, "" if rel == "." else rel)


def _file(ctx: Ctx, value: Any, at: tuple[str, ...], root: Path) -> Path:
    if not isinstance(value, str) or not value:
        raise ctx.fail(at, "expected a path to a table (.csv, .tsv, .jsonl or .parquet)")
    path = inside(ctx, at, value, root / value, (ctx.path.parent, root), "table")
    if not path.is_file():
        raise ctx.fail(at, f"table {excerpt(value)} not found ({path})", "fix the path; it is relative to `root`")
    if path.suffix.lower() not in SUFFIXES:
        raise ctx.fail(at, f"table {excerpt(value)} is not .csv, .tsv, .jsonl or .parquet",
                       "name a table with a file name column (and a split column, or one table per split)")
    return path


def _folder_of(ctx: Ctx, at: tuple[str, ...], file: Path, root: Path) -> str:
    try:
        rel = file.parent.relative_to(root.resolve()).as_posix()
    except ValueError:
        raise ctx.fail(at, f"table {excerpt(str(file))} is outside root",
                       "keep it beside the images, or name their folder with `images:`") from None
    return "" if rel == "." else rel


def read(spec: SplitSources, root: Path, extensions: tuple[str, ...] = ()) -> Assignment:
    rows: Rows = {}
    names: dict[str, None] = {}
    labels: dict[str, str] = {}
    extra: dict[str, dict[str, str]] = {}
    for source in spec.files:
        if source.split is not None:  # declared even when its table lists nothing
            names.setdefault(source.split)
        what = "metadata" if spec.kind == "metadata" else "table"
        fields, recs = records(source.path, what)
        file_col = column_of(fields, "file", spec.column("file"), source.path, what)
        split_col = None if source.split else column_of(fields, "split", spec.column("split"), source.path, what)
        group_col = spec.column("group")
        if group_col is not None:
            column_of(fields, "group", group_col, source.path, what)
        label_col = column_of(fields, "label", spec.column("label"), source.path, what, need=False)
        for line, rec in recs:
            rel, split = rec.get(file_col or "", ""), source.split or rec.get(split_col or "", "")
            if not rel or not split:
                raise PolicyError(f"row with an empty {file_col if not rel else split_col}", path=str(source.path),
                                  line=line, fix="fill in the file name and split, or delete the row")
            path = under(source.images, rel)
            add(rows, names, path, split, (rec.get(group_col) or None) if group_col else None)
            if label_col and rec.get(label_col):
                labels[path] = rec[label_col]
            extra[path] = {k: v for k, v in rec.items() if k not in (file_col, split_col) and v}
    return Assignment(rows, tuple(names), (), labels, extra)


# --------------------------------------------------------------------------
# The manifest (``splits: {manifest: FILE}``) and group tables


def read_manifest(path: Path | Url) -> tuple[list[str], Rows, dict[str, dict[str, str]]]:
    """A manifest's columns, its rows (path -> [(split, group)]) and every row's cells, by path."""
    fields, recs = records(path, "manifest")
    for need in ("path", "split"):
        if need not in fields:
            raise PolicyError(f"manifest has no `{need}` column (columns: {_listed(fields)})", path=str(path), line=1,
                              fix="the first row must be a header like `path,split,group`")
    rows: Rows = {}
    cells: dict[str, dict[str, str]] = {}
    for line, rec in recs:
        rel, split = clean_path(rec.get("path", "")), rec.get("split", "")
        if not rel or not split:
            raise PolicyError("row with an empty path or split", path=str(path), line=line,
                              fix="fill in both columns or delete the row")
        rows.setdefault(rel, []).append((split, rec.get("group") or None))
        cells[rel] = rec
    return fields, rows, cells


def read_column(path: Path | Url, column: str, what: str = "manifest") -> dict[str, str]:
    """``path`` column -> non-empty ``column`` value, from any table with a ``path`` column."""
    fields, recs = records(path, what)
    for need in ("path", column):
        if need not in fields:
            raise PolicyError(f"{what} has no `{need}` column (columns: {_listed(fields)})", path=str(path), line=1,
                              fix=f"add a `{need}` column to the header, or name an existing one")
    return {clean_path(rec.get("path", "")): rec[column] for _, rec in recs if rec.get(column)}


# --------------------------------------------------------------------------
# Recognition (init)


def recognise(root: Path, files: list[str]) -> Guess | None:
    """A table beside the data whose file column names images on disk: written out with explicit columns."""
    on_disk = set(files)
    for path in _candidates(root):
        guess = _guess(root, path, on_disk)
        if guess is not None:
            return guess
    return _per_split(root, on_disk)


def _per_split(root: Path, on_disk: set[str]) -> Guess | None:
    """One table per split: ``train/metadata.jsonl`` (Hugging Face imagefolder) or ``train.csv``, ``test.csv``."""
    specs = []
    for path in _candidates(root, ("", "*/", "*/*/")):  # data/train/metadata.jsonl, as Hub repos keep them
        rel = path.relative_to(root)
        split = (split_word(rel.parts[-2]) if len(rel.parts) >= 2 else None) or token_split(path.stem)
        if split is None or any(s[0] == split for s in specs):
            continue
        try:
            fields, recs = records(path)
            file_col = column_of(fields, "file", None, path, "table", need=False)
            sample = [clean_path(rec.get(file_col or "", "")) for _, (_, rec) in zip(range(200), recs)]
        except PolicyError:
            continue
        folder = _folder(root, path, [n for n in sample if n], on_disk, split) if file_col else None
        if folder is not None:
            label_col = column_of(fields, "label", None, path, "table", need=False)
            specs.append((split, path, file_col, label_col, folder))
    if len(specs) < 2 or len({(s[2], s[3]) for s in specs}) > 1:
        return None
    specs.sort(key=lambda s: list(SPLIT_WORDS).index(s[0]))
    file_col, label_col = specs[0][2], specs[0][3]
    columns = {"file": file_col, **({"label": label_col} if label_col else {})}
    spec = SplitSources(KIND, tuple(SourceFile(p, s, f) for s, p, _, _, f in specs), tuple(columns.items()))
    try:
        assignment = read(spec, root)
    except PolicyError:
        return None
    lines, yaml = [], "splits:\n  table:\n"
    for split, path, _, _, folder in specs:
        n = sum(1 for e in assignment.rows.values() if e[0][0] == split)
        rel = path.relative_to(root).as_posix()
        lines.append(f"table {rel}: {n} images in {split}" + (f" (under {folder}/)" if folder else "")
                     + f", columns file={file_col}" + (f", label={label_col}" if label_col else ""))
        own = folder == _parent(rel)
        yaml += (f"    {split}: {yaml_scalar(rel)}\n" if own
                 else f"    {split}: {{file: {yaml_scalar(rel)}, images: {yaml_scalar(folder or '.')}}}\n")
    yaml += _columns_yaml(columns)
    return Guess(yaml, tuple(lines), assignment, columns_indent="    ")


def _columns_yaml(columns: dict[str, str]) -> str:
    """The ``columns:`` mapping; column names come from the table's header, so each is quoted."""
    return f"    columns: {{{', '.join(f'{k}: {yaml_scalar(v)}' for k, v in columns.items())}}}\n"


def _candidates(root: Path, depths: tuple[str, ...] = ("", "*/")) -> list[Path]:
    found = [p for depth in depths for suffix in SUFFIXES for p in sorted(root.glob(depth + "*" + suffix))]
    return [p for p in found if not any(part.startswith(".") for part in p.relative_to(root).parts)
            and p.stat().st_size < 512 * 1024 * 1024]


def _guess(root: Path, path: Path, on_disk: set[str]) -> Guess | None:
    try:
        fields, recs = records(path)
        file_col = column_of(fields, "file", None, path, "table", need=False)
        split_col = column_of(fields, "split", None, path, "table", need=False)
        if file_col is None or split_col is None:
            return None
        sample = [rec for _, (_, rec) in zip(range(200), recs)]
    except (PolicyError, ValueError):
        return None
    names = [clean_path(r.get(file_col, "")) for r in sample if r.get(file_col)]
    folder = _folder(root, path, names, on_disk)
    if folder is None:
        return None
    rel = path.relative_to(root).as_posix()
    label_col = column_of(fields, "label", None, path, "table", need=False)
    columns = {"file": file_col, "split": split_col, **({"label": label_col} if label_col else {})}
    images = f"\n    images: {yaml_scalar(folder or '.')}" if folder != _parent(rel) else ""
    spec = SplitSources(KIND, (SourceFile(path, None, folder),), tuple(columns.items()))
    try:
        assignment = read(spec, root)
    except PolicyError:
        return None
    counts = _counts(assignment.rows)
    if (file_col, split_col, folder, path.suffix.lower()) == ("path", "split", "", ".csv") and "/" not in rel:
        # A manifest as `leakcheck split` writes and repairs it: keep its own key.
        found = (f"manifest {rel}: {len(assignment.rows)} rows, splits {counts}",)
        return Guess(f"splits:\n  manifest: {yaml_scalar(rel)}   # columns path,split[,group]\n", found, assignment)
    yaml = f"splits:\n  table:\n    file: {yaml_scalar(rel)}{images}\n" + _columns_yaml(columns)
    where = f" (under {folder}/)" if folder else ""
    found = (f"table {rel}: {len(assignment.rows)} rows{where}, columns file={file_col}, split={split_col}"
             + (f", label={label_col}" if label_col else "") + f"; splits {counts}",)
    return Guess(yaml, found, assignment, columns_indent="    ")


def _parent(rel: str) -> str:
    return rel.rsplit("/", 1)[0] if "/" in rel else ""


def _folder(root: Path, table: Path, names: list[str], on_disk: set[str], split: str | None = None) -> str | None:
    """The folder (relative to root) most of the sampled names are relative to, or None; of several, the one
    named like ``split``, the table's own split.

    HC18 ships ``training_set_pixel_size_and_HC.csv`` and ``test_set_pixel_size.csv`` beside
    ``training_set/`` and ``test_set/``, each split numbered from ``000_HC.png``: the training table's
    names are found under ``test_set/`` too, which came first."""
    if not names:
        return None
    own = _parent(table.relative_to(root).as_posix())
    folders = dict.fromkeys([own, "", *sorted({f.rsplit("/", 1)[0] for f in on_disk if "/" in f})])
    held = [f for f in folders if sum(under(f, n) in on_disk for n in names) * 2 > len(names)]
    named = [f for f in held if split is not None and f and token_split(f.rsplit("/", 1)[-1]) == split]
    return (named or held or [None])[0]


def _counts(rows: Rows) -> str:
    counts: dict[str, int] = {}
    for entries in rows.values():
        counts[entries[0][0]] = counts.get(entries[0][0], 0) + 1
    return ", ".join(f"{s} {n}" for s, n in counts.items())

