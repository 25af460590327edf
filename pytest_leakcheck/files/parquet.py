"""Parquet shards opened with their size bounded before anything inflates.

A Parquet file declares the sizes of its pages, and a reader allocates what
they declare: a 41 kB shard can hold a row group that inflates to 1.6 GB
(zstd over zeros), and a few hundred bytes can hold one 1 MB value repeated
600 times through a dictionary, which plain reading turns into 600 copies.
So a shard is opened here and nowhere else:

- its metadata is checked first (:func:`check_sizes`: rows, and each row
  group's declared uncompressed size), so a compressed bomb is refused with its
  name before a page is read;
- every byte-array column (images, names, text) is read as a dictionary
  (``read_dictionary``), so a repeated value stays one value in memory;
- a cell is taken out one at a time (:func:`cell`), its size checked before
  it becomes a Python object, and a column becomes a list only through
  :func:`field_list`, which adds up what the list would hold first.

pyarrow is imported inside each function: only a Parquet policy pays for it.
"""

from __future__ import annotations

from typing import Any

#: What one row group may inflate to, all columns together (as its metadata declares it).
#: A row group is read whole, one per worker at a time; datasets writes image shards in
#: row groups of about 100 rows, far below this.
MAX_ROW_GROUP = 512 << 20
#: What a shard may hold in rows: each costs a name and a record before any image is read.
MAX_ROWS = 10_000_000
#: One image cell past this is an unreadable image, never handed to the decoder.
MAX_CELL = 256 << 20


class TooLarge(OSError):
    """A shard, or a column of it, would take more memory than a bounded read allows."""


def check_sizes(metadata: Any, path: str) -> None:
    """Refuse a shard whose metadata declares more than a bounded read holds, before reading it."""
    if metadata.num_rows > MAX_ROWS:
        raise TooLarge(f"{path}: {metadata.num_rows:,} rows, over the {MAX_ROWS:,} a shard may hold; "
                       "split it into smaller shards")
    for g in range(metadata.num_row_groups):
        group = metadata.row_group(g)
        declared = max(group.total_byte_size,
                       sum(group.column(c).total_uncompressed_size for c in range(group.num_columns)))
        if declared > MAX_ROW_GROUP or group.num_rows > MAX_ROWS:
            raise TooLarge(f"{path}: row group {g} inflates to {declared:,} bytes, over the {MAX_ROW_GROUP:,} "
                           "one may hold; write the shard with smaller row groups (row_group_size)")


def open_file(path: str) -> Any:
    """``pq.ParquetFile`` of a shard whose sizes passed :func:`check_sizes`, byte arrays as dictionaries."""
    import pyarrow.parquet as pq

    first = pq.ParquetFile(path)
    check_sizes(first.metadata, path)
    schema = first.metadata.schema
    leaves = [schema.column(i).path for i in range(len(schema)) if schema.column(i).physical_type == "BYTE_ARRAY"]
    return pq.ParquetFile(path, read_dictionary=leaves) if leaves else first


def _plain(scalar: Any) -> Any:
    """A scalar's Python value; a byte string past :data:`MAX_CELL` as its size alone (an int)."""
    import pyarrow as pa

    if isinstance(scalar, pa.DictionaryScalar):
        scalar = scalar.value
    if scalar is None or not scalar.is_valid:
        return None
    if isinstance(scalar, (pa.BinaryScalar, pa.LargeBinaryScalar, pa.StringScalar, pa.LargeStringScalar)):
        size = scalar.as_buffer().size
        if size > MAX_CELL:
            return size
    return scalar.as_py()


def cell(array: Any, i: int) -> Any:
    """Row ``i`` of an image column: bytes, or ``{"bytes": ..., "path": ...}`` for an ``Image`` struct.

    Taken alone, so a row group of dictionary-encoded images is never expanded;
    a byte string over :data:`MAX_CELL` comes back as its size (an int).
    """
    import pyarrow as pa

    value = array[i]
    if isinstance(value, pa.StructScalar):
        if not value.is_valid:
            return None
        return {name: _plain(value[name]) for name in ("bytes", "path") if array.type.get_field_index(name) >= 0}
    return _plain(value)


def decoded_size(column: Any) -> int:
    """What a byte-array column (dense or dictionary, chunked or not) holds once every row is its own value."""
    import pyarrow as pa
    import pyarrow.compute as pc

    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    total = 0
    for chunk in chunks:
        if pa.types.is_struct(chunk.type):
            total += sum(decoded_size(chunk.field(k)) for k in range(chunk.type.num_fields))
            continue
        if pa.types.is_dictionary(chunk.type):
            values = chunk.dictionary
            if not _is_bytes(values.type):
                continue
            lengths = pc.binary_length(values).fill_null(0)
            total += int(pc.sum(pc.take(lengths, chunk.indices.fill_null(0))).as_py() or 0)
        elif _is_bytes(chunk.type):
            total += int(pc.sum(pc.binary_length(chunk)).as_py() or 0)
    return total


def _is_bytes(t: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_string(t) or pa.types.is_large_string(t)


def field_list(pf: Any, column: str, field: str, path: str, what: str) -> list[Any]:
    """One field of a struct column (the ``Image`` feature's ``path``) as a list, read a row group at a time.

    pyarrow cannot read a nested field across row groups as dictionaries in one
    call ("Nested data conversions not implemented for chunked array outputs"),
    and shards written by ``datasets`` or pandas often hold many row groups
    (older ``datasets`` wrote 100 rows per group); the values are bounded as a
    whole before they become a list.
    """
    out: list[Any] = []
    size = 0
    for g in range(pf.num_row_groups):
        values = pf.read_row_group(g, columns=[f"{column}.{field}"]).column(0).combine_chunks().field(field)
        size += decoded_size(values)
        if size > MAX_ROW_GROUP:
            raise TooLarge(f"{path}: {what} hold more than {MAX_ROW_GROUP:,} bytes once read, over what a "
                           "shard's columns may; keep long values out of the shard or write smaller shards")
        out += values.to_pylist()
    return out
