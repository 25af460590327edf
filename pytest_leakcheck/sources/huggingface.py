"""Hugging Face datasets with the images inside: Parquet shards and ``save_to_disk`` Arrow files.

::

    splits:
      huggingface:
        train: data/train-*.parquet          # globs relative to root; or train/*.arrow (save_to_disk)
        test: data/test-*.parquet
        columns: {image: image, label: label, group: subject_id}

Each row's image (the ``Image`` feature's ``bytes``, or a binary column) is
checked in place as ``<shard>#row=N``: findings name the shard and the row,
and the store keys it by its content, so a rewritten shard decodes only the
rows whose bytes changed.  Any other column can give the group.  pyarrow is
imported only here and in ``files/members.py``, and only for such a policy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..validate import Ctx
from ..errors import PolicyError
from ..files import lfs, members, parquet
from .base import Assignment, Guess, Rows, SplitSources, add
from .shards import guess_globs, listing, parse_globs
from .shards import parse as parse_shards
from ..files.escape import yaml_scalar

KIND = "huggingface"
SUFFIXES = members.TABLES
#: Columns read for groups and labels must be short text: ids, not blobs.
MAX_CELL = 4096


def parse(ctx: Ctx, raw: Any, root: Path, kind: str = KIND) -> SplitSources:
    files, columns = parse_shards(ctx, raw, root, KIND, SUFFIXES, "{train: data/train-*.parquet, test: "
                                  "data/test-*.parquet}")
    return SplitSources(KIND, files, columns)


def _open(path: Path) -> tuple[Any, list[str], int, list[str | None]]:
    """The shard's table of small columns (all but images), its columns, its row count, and each image's name."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise PolicyError("reading Hugging Face Parquet or Arrow shards needs pyarrow", path=str(path),
                          fix=f"{members.INSTALL}") from None
    try:
        if path.suffix.lower() == ".parquet":
            pf = parquet.open_file(str(path))  # a bomb is refused by its declared sizes, unread
            schema = pf.schema_arrow
            column = members.image_column(schema, str(path))
            small = [f.name for f in schema if f.name != column and not _large(pa, members.plain_type(f.type))]
            table = pf.read(columns=small)
            names: list[str | None] = [None] * pf.metadata.num_rows
            if pa.types.is_struct(schema.field(column).type) and schema.field(column).type.get_field_index("path") >= 0:
                names = parquet.field_list(pf, column, "path", str(path), "the image names")
            # Read as dictionaries, the text columns could still expand when read() lists them.
            if sum(parquet.decoded_size(table.column(c)) for c in small) > parquet.MAX_ROW_GROUP:
                raise parquet.TooLarge(f"{path}: its text columns hold more than {parquet.MAX_ROW_GROUP:,} bytes "
                                       "once read; keep long values out of the shard or write smaller shards")
            return table, small, pf.metadata.num_rows, names
        batches = members.arrow_batches(str(path), pa)
        table = pa.Table.from_batches(batches) if batches else pa.table({})
        column = members.image_column(table.schema, str(path))
        small = [f.name for f in table.schema if f.name != column and not _large(pa, f.type)]
        kind = table.schema.field(column).type
        names = [None] * table.num_rows
        if pa.types.is_struct(kind) and kind.get_field_index("path") >= 0:  # chunk by chunk: no copy of the bytes
            names = [n for chunk in table.column(column).chunks for n in chunk.field("path").to_pylist()]
        return table.select(small), small, table.num_rows, names
    except parquet.TooLarge as exc:
        raise PolicyError(str(exc).split(": ", 1)[-1], path=str(path),
                          fix="a shard is read a row group at a time, each bounded; re-write it in smaller parts"
                          ) from None
    except members.MemberError as exc:
        raise PolicyError(str(exc).split(": ", 1)[-1], path=str(path),
                          fix="name shards whose images are embedded (the datasets `Image` feature)") from None
    except Exception as exc:  # pyarrow's own errors on a file that is not what its name says
        if lfs.file_is_pointer(path):
            raise PolicyError(lfs.why("shard"), path=str(path)) from None
        kind = "Parquet" if path.suffix.lower() == ".parquet" else "Arrow"
        raise PolicyError(f"not a readable {kind} shard: {exc}", path=str(path),
                          fix="re-write it with datasets (to_parquet, save_to_disk) or drop it from the globs"
                          ) from None


def _image_columns(path: Path) -> tuple[str, list[str]]:
    """The column read as the image and every column that could be one (schema only, no row read)."""
    import pyarrow as pa

    if path.suffix.lower() == ".parquet":
        schema = parquet.open_file(str(path)).schema_arrow
    else:
        batches = members.arrow_batches(str(path), pa)
        schema = batches[0].schema if batches else pa.schema([])
    return members.image_column(schema, str(path)), members.image_columns(schema)


def _same_image_column(path: Path, wanted: str | None) -> None:
    """Refuse ``columns: {image: X}`` naming another column than the one read: it would be ignored silently."""
    if not wanted:
        return
    chosen, found = _image_columns(path)
    if wanted != chosen:
        raise PolicyError(f"`columns: {{image: {wanted}}}`: the images read are column `{chosen}` (of "
                          f"{', '.join(found)})", path=str(path),
                          fix=f"the image column is the one named like {', '.join(members.IMAGE_NAMES[:3])}…, "
                              "else the first Image column: rename the columns, or drop `image:`")


def _which(path: Path) -> str:
    """``; image column `image` of image, annotation`` when a shard has several, for init's Found line."""
    chosen, found = _image_columns(path)
    return f"; image column `{chosen}` of {', '.join(found)}" if len(found) > 1 else ""


def _large(pa: Any, t: Any) -> bool:
    """A column never read for groups or labels: nested, or bytes."""
    return bool(pa.types.is_nested(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t))


def read(spec: SplitSources, root: Path, extensions: tuple[str, ...] = ()) -> Assignment:
    rows: Rows = {}
    names: dict[str, None] = {}
    found: list[tuple[str, int, int]] = []
    labels: dict[str, str] = {}
    extra: dict[str, dict[str, str]] = {}
    group_col, label_col = spec.column("group"), spec.column("label")
    for source in spec.files:
        assert source.split is not None
        names.setdefault(source.split)
        table, small, n, image_names = _open(source.path)
        _same_image_column(source.path, spec.column("image"))
        for need in (c for c in (group_col, label_col) if c):
            if need not in small:
                raise PolicyError(f"shard has no column `{need}` (columns: {', '.join(small) or 'none'})",
                                  path=str(source.path), fix="map `group`/`label` under `columns:` to a column it has")
        cells = {c: [_text(v) for v in table.column(c).to_pylist()] for c in small}
        named = _name_column(small) if not any(image_names) else None
        shown = cells[named] if named else image_names
        st = source.path.stat()
        for row in range(n):
            path = members.join(source.images, members.row_name(row, n, shown[row]))
            values = {c: cells[c][row] for c in small}
            group = values.get(group_col) if group_col else None
            if group and len(group) > MAX_CELL:
                raise PolicyError(f"row {row}: `{group_col}` is {len(group):,} characters long",
                                  path=str(source.path), fix="a group id is short text; fix the row")
            add(rows, names, path, source.split, group or None)
            # Size and mtime of the shard: a row changes only when its shard does.
            found.append((path, st.st_size, st.st_mtime_ns))
            label = values.get(label_col or "label")
            if label:
                labels[path] = label
            extra[path] = {c: v for c, v in values.items() if v and len(v) <= MAX_CELL}
    return Assignment(rows, tuple(names), tuple(found), labels, extra)


#: Columns that name a row's image when the image column keeps no path (a plain binary column).
NAME_COLUMNS = ("file_name", "filename", "file", "filepath", "file_path", "image_path", "image_name", "path")


def _name_column(small: list[str]) -> str | None:
    """The column naming each row's image, so that a finding says which image (and name rules read it)."""
    return next((c for c in NAME_COLUMNS if c in small), None)


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def recognise(root: Path, files: list[str]) -> Guess | None:
    shards, pointers = [], []
    for rel in listing(root, SUFFIXES):
        try:
            _open(root / rel)
        except PolicyError:
            # Not ours to read (a table of files is another source's), unless it is a shard not fetched.
            if lfs.file_is_pointer(root / rel):
                pointers.append(rel)
            continue
        shards.append(rel)
    if pointers and guess_globs(pointers):
        raise PolicyError(f"{len(pointers)} shards named by split are Git LFS pointers, not the shards themselves "
                          f"(also {', '.join(pointers[1:3]) or 'no other'})", path=str(root / pointers[0]), fix=lfs.FIX)
    by_split = guess_globs(shards) if shards else None
    if not by_split:
        return None
    yaml = "splits:\n  huggingface:\n" + "".join(
        f"    {s}: [{', '.join(yaml_scalar(g) for g in p)}]\n" for s, p in by_split.items())
    spec = SplitSources(KIND, parse_globs(root, by_split, SUFFIXES))
    assignment = read(spec, root)
    label = "label" if any(assignment.labels) else None
    if label:
        spec = SplitSources(KIND, spec.files, (("label", "label"),))
        yaml += "    columns: {label: label}\n"
    unembedded = {s: sum(_path_only(f.path) for f in spec.files if f.split == s) for s in by_split}
    found = tuple(
        f"Hugging Face shards {', '.join(p)}: {sum(1 for e in assignment.rows.values() if e[0][0] == s)} images "
        f"in {s} ({_how(unembedded[s])}{_which(next(f.path for f in spec.files if f.split == s))})"
        for s, p in by_split.items())
    total = sum(unembedded.values())
    warnings = (f"{total} of {len(assignment.rows)} rows of the Hugging Face shards store their image by path "
                "only, not its bytes; a path is never followed, so the check reports each as an unreadable "
                f"image; {members.EMBED}",) if total else ()
    return Guess(yaml, found, assignment, columns_indent="    ", warnings=warnings)


def _how(unembedded: int) -> str:
    return f"{unembedded} stored by path only, not embedded" if unembedded else "embedded, checked in place"


def _path_only(path: Path) -> int:
    """Rows whose ``Image`` struct has no bytes (``to_parquet`` of local files keeps their paths only).

    Counted from the column statistics of a Parquet shard, no image read; pyarrow
    writes none for a column chunk of nulls only, which is then read (nothing to
    read but nulls).  Arrow shards are memory-mapped batches.
    """
    import pyarrow as pa

    if path.suffix.lower() == ".parquet":
        pf = parquet.open_file(str(path))
        leaf = f"{members.image_column(pf.schema_arrow, str(path))}.bytes"
        total = 0
        for g in range(pf.metadata.num_row_groups):
            group = pf.metadata.row_group(g)
            for c in (group.column(i) for i in range(group.num_columns)):
                if c.path_in_schema != leaf:
                    continue
                if c.statistics is not None and c.statistics.has_null_count:
                    total += c.statistics.null_count
                else:
                    total += pf.read_row_group(g, columns=[leaf]).column(0).combine_chunks().field("bytes").null_count
        return total
    batches = members.arrow_batches(str(path), pa)
    column = members.image_column(batches[0].schema, str(path)) if batches else ""
    kind = batches[0].schema.field(column).type if batches else None
    if kind is None or not pa.types.is_struct(kind) or kind.get_field_index("bytes") < 0:
        return 0
    return sum(b.column(column).field("bytes").null_count for b in batches)
