"""Images stored inside shard files: tar members (WebDataset) and rows of Parquet or Arrow files.

A member has a path like any image, ``<shard>#<member>``, relative to the
policy root: ``shards/train-000003.tar#000123.jpg`` or
``data/train-00000-of-00002.parquet#row=000017``.  Findings name it, the store
keys its signatures by its content digest, and :func:`read` gives its bytes,
so the pipeline needs no other change to check a dataset in place.

Reading is made cheap for the decode workers, which ask for one member at a
time and in shard order: a tar's member offsets and a Parquet shard's last
row group are kept per process, so a shard is opened once per worker and a
row group decoded once per chunk of tasks.  ``pyarrow`` is imported only
when a Parquet or Arrow shard is read.
"""

from __future__ import annotations

import bisect
import hashlib
import os
import tarfile
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Any

from . import frames, lfs, parquet

#: Shard files whose members are images; lower case.  A multi-frame DICOM file's
#: members are its frames (frames.py).
TAR = ".tar"
TABLES = (".parquet", ".arrow")
SUFFIXES = (TAR, *TABLES, *frames.SUFFIXES)
SEP = "#"
ROW = "row="
INSTALL = "pip install 'pytest-leakcheck[huggingface]'"
#: How to put the images into the shard: datasets' to_parquet keeps only the path of a local image file.
EMBED = ("embed the images: push_to_hub and save_to_disk embed them; before to_parquet, "
         "`ds = ds.with_format('arrow').map(datasets.table.embed_table_storage, batched=True)`")
#: What the error of a row stored by path only says (its rows are one finding per shard).
PATH_ONLY = "the image is stored by path only"


def path_only_rows(shard: str, rows: int, first: str) -> str:
    """The message of one shard's rows stored by path only."""
    return (f"{shard}: {rows} rows ({first} and the others listed) store their image by path only, not embedded, "
            f"and a path is never followed; {EMBED}")


#: Shards kept open per process (tar indexes, Parquet metadata and one row group each).
_KEEP = 4
_open: OrderedDict[str, Any] = OrderedDict()
#: The caches are per process; threads (the HTML report's loader) take turns.
_lock = threading.Lock()


class MemberError(OSError):
    """A shard or one of its members cannot be read; the text names both and the fix."""


def join(shard: str, member: str) -> str:
    return f"{shard}{SEP}{member}"


def row_name(row: int, rows: int, name: str | None = None) -> str:
    """``row=000017``, or ``row=000017/cat_01.jpg`` with the name the row keeps for its image.

    Zero-padded so that members sort in shard order; the name (its last part
    only) tells people which image it is and gives group rules a name to read.
    """
    base = f"{ROW}{row:0{max(6, len(str(max(rows - 1, 0))))}d}"
    tail = (name or "").replace("\\", "/").rsplit("/", 1)[-1].strip().replace(SEP, "_")
    return f"{base}/{tail}" if tail else base


def row_of(member: str) -> int | None:
    """The row number of a table member (``row=000017/...``), None when it is not one."""
    digits = member[len(ROW):].split("/", 1)[0] if member.startswith(ROW) else ""
    return int(digits) if digits.isdigit() else None


def split(path: str) -> tuple[str, str] | None:
    """``(shard, member)`` for a member path, None for a plain file."""
    i = path.find(SEP)
    while i != -1:
        if path[:i].lower().endswith(SUFFIXES) or (path.startswith(frames.FRAME, i + 1) and frames.named(path[:i])):
            return path[:i], path[i + 1:]
        i = path.find(SEP, i + 1)
    return None


def unambiguous(shard: str) -> bool:
    """Whether a member path of ``shard`` splits back into ``shard`` and the member.

    A member path is one string, cut at the first ``#`` after a shard suffix;
    a folder named ``x.tar#d/`` above the shard would cut it at the folder and
    read a decoy ``x.tar`` instead.  Sources refuse such a shard path
    (``shards.parse``), so the string never stands for two things.
    """
    return split(join(shard, "m")) == (shard, "m")


def is_member(path: str) -> bool:
    return split(path) is not None


def shard_of(path: str) -> str:
    """The shard (or multi-frame DICOM file) a member lives in, or the path itself."""
    parts = split(path)
    return parts[0] if parts else path


def is_frame(path: str) -> bool:
    """Whether ``path`` is a frame of a multi-frame DICOM file (``scan.dcm#frame=0003``)."""
    parts = split(path)
    return parts is not None and parts[1].startswith(frames.FRAME) and frames.named(parts[0])


# --------------------------------------------------------------------------
# Opening shards (cached per process, invalidated by size and mtime)


def _stat_key(shard: str) -> tuple[int, int]:
    st = os.stat(shard)
    return st.st_size, st.st_mtime_ns


def _cached(shard: str, build: Any) -> Any:
    key = _stat_key(shard)
    hit = _open.get(shard)
    if hit is not None and hit[0] == key:
        _open.move_to_end(shard)
        return hit[1]
    value = build(shard)
    _open[shard] = (key, value)
    while len(_open) > _KEEP:
        _open.popitem(last=False)
    return value


def tar_index(shard: str) -> dict[str, tuple[int, int]]:
    """Member name -> (offset of its data, size) for the regular files of an uncompressed tar."""
    def build(path: str) -> dict[str, tuple[int, int]]:
        try:
            with tarfile.open(path, "r:") as tf:
                infos = [ti for ti in tf]
                index = _unique(path, ((ti.name, (ti.offset_data, ti.size)) for ti in infos if ti.isfile()))
                _check_rest(path, tf.offset, infos[-1].name if infos else "")
                return index
        except tarfile.ReadError as exc:
            raise MemberError(_not_a_tar(path, exc)) from None
    return _cached(shard, build)


def _check_rest(path: str, end: int, last: str) -> None:
    """Refuse a tar whose bytes after the last member tarfile listed are not all zero.

    tarfile stops without a word at a bad header after the first, and at the
    end marker of the first of two tars joined with ``cat``: the members
    behind either were never listed, so a check would pass over them.  What
    follows a whole tar's last member is its end marker and padding, zeros.
    """
    with open(path, "rb") as fh:
        fh.seek(end)
        at = end
        while chunk := fh.read(1 << 20):
            stripped = chunk.lstrip(b"\0")
            if stripped:
                at += len(chunk) - len(stripped)
                break
            at += len(chunk)
        else:
            return
    where = f"after member {last!r}" if last else "at its start"
    if at > end:  # zeros first: an end marker, then more
        raise MemberError(f"{path}: holds data after its end marker (byte {at}, {where}), as two tars joined "
                          "with `cat` do; a loader stops at the marker, so write one tar per shard (`tar cf`)")
    raise MemberError(f"{path}: damaged {where}: the header at byte {end} cannot be read, so the members behind it "
                      "cannot be listed; fetch or write the shard again, or drop it from the globs")


#: The first bytes of the compressed files a shard may be by mistake (gzip, bzip2, xz, zstd).
_COMPRESSED = (b"\x1f\x8b", b"BZh", b"\xfd7zXZ", b"\x28\xb5\x2f\xfd")


def _not_a_tar(path: str, exc: Exception) -> str:
    """Why a shard is no tar: compressed (unpack it), else damaged (a download or copy cut short)."""
    with open(path, "rb") as fh:
        head = fh.read(lfs.MAX_POINTER)
    if lfs.is_pointer(head):
        return f"{path}: {lfs.why('shard')}"
    if head.startswith(_COMPRESSED):
        return (f"{path}: a compressed tar ({exc}); WebDataset shards are read in place only as uncompressed .tar, "
                "so unpack it (gunzip) or re-write the shard with `tar cf`")
    return (f"{path}: not a readable tar file, damaged or cut short ({exc}); fetch or write the shard again, "
            "or drop it from the globs")


def _unique(path: str, items: Iterable[tuple[str, tuple[int, int]]]) -> dict[str, tuple[int, int]]:
    """Name -> where, refusing a name two members share.

    A tar may hold one name twice: extracting keeps the later, while a
    WebDataset loader streams (and trains on) both, so a copy in the first
    would be checked by no one.  Such a shard is an error naming the member.
    """
    out: dict[str, tuple[int, int]] = {}
    for name, where in items:
        if name in out:
            raise MemberError(f"{path}: two members are named {name!r}; a loader reads both, so each must have "
                              "a name of its own (re-write the shard with unique keys)")
        out[name] = where
    return out


class _Table:
    """A Parquet or Arrow shard: its image column and row groups, with one group's images kept."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.column, self.starts, self._read = _open_table(path)
        self._group = -1
        self._values: Any = None

    def row(self, row: int) -> bytes:
        if not 0 <= row < self.starts[-1]:
            raise MemberError(f"{self.path}: no row {row} (the shard has {self.starts[-1]} rows)")
        group = bisect.bisect_right(self.starts, row) - 1
        if group != self._group:
            _release_others(self)
            self._values, self._group = self._group_values(group), group
        if isinstance(self._values, MemberError):
            raise MemberError(f"{self.path} row {row}: {self._values}")
        # One cell taken out at a time: a row group of repeated images is never expanded (parquet.cell).
        return image_bytes(parquet.cell(self._values, row - self.starts[group]), self.path, row)

    def _group_values(self, group: int) -> Any:
        """A row group's image column, or why it cannot be read: kept, so its other rows do not read it again.

        A damaged page (a corrupt compressed block) spoils its row group only: the
        rows of the others are still checked, not all reported unreadable with it.
        """
        try:
            return self._read(group)
        except Exception as exc:  # pyarrow's errors on a damaged page are of several kinds
            first, end = self.starts[group], self.starts[group + 1] - 1
            return MemberError(f"row group {group} (rows {first}-{end}) cannot be read, the shard is damaged "
                               f"({exc}); fetch or write the shard again")


def _release_others(keep: _Table) -> None:
    """Drop the row group every other open table keeps: one row group per process, not one per open shard.

    A row group of large photos is 100 MB (``datasets`` 5 cuts groups by size), and
    train and test shards are read in turn; the shards stay open (their metadata
    is cheap), their images do not.
    """
    for _, value in _open.values():
        if isinstance(value, _Table) and value is not keep:
            value._values, value._group = None, -1


def _open_table(path: str) -> tuple[str, list[int], Any]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise MemberError(f"{path}: reading Parquet or Arrow shards needs pyarrow ({INSTALL})") from None
    try:
        if path.lower().endswith(".parquet"):
            pf = parquet.open_file(path)  # sizes checked, images read as a dictionary (parquet.py)
            column = image_column(pf.schema_arrow, path)
            sizes = [pf.metadata.row_group(g).num_rows for g in range(pf.num_row_groups)]

            def read(group: int) -> Any:
                return pf.read_row_group(group, columns=[column]).column(0).combine_chunks()
        else:
            batches = arrow_batches(path, pa)
            column = image_column(batches[0].schema if batches else pa.schema([]), path)
            sizes = [b.num_rows for b in batches]

            def read(group: int) -> Any:
                return batches[group].column(column)
    except MemberError:
        raise
    except parquet.TooLarge as exc:
        raise MemberError(str(exc)) from None
    except (OSError, pa.ArrowException) as exc:
        if lfs.file_is_pointer(path):
            raise MemberError(f"{path}: {lfs.why('shard')}") from None
        raise MemberError(f"{path}: not a readable {'Parquet' if path.endswith('.parquet') else 'Arrow'} "
                          f"file ({exc}); re-write the shard (datasets' to_parquet or save_to_disk)") from None
    starts = [0]
    for n in sizes:
        starts.append(starts[-1] + n)
    return column, starts, read


def arrow_batches(path: str, pa: Any) -> list[Any]:
    """The record batches of an Arrow file as ``save_to_disk`` writes it (IPC stream), memory-mapped."""
    source = pa.memory_map(path)
    try:
        return list(pa.ipc.open_stream(source))
    except pa.ArrowInvalid:
        return [b for b in pa.ipc.open_file(source).to_batches()]


#: Names that say a column holds the picture, first found wins, before schema order: a segmentation
#: shard keeps its masks as a second ``Image`` column (``annotation``, ``label``), often the first one.
IMAGE_NAMES = ("image", "img", "image_bytes", "jpg", "jpeg", "png", "webp", "picture", "photo")


def image_columns(schema: Any) -> list[str]:
    """Every column that can hold images: ``Image`` structs (bytes, path) first, then binary columns."""
    import pyarrow as pa

    structs, binary = [], []
    for field in schema:
        t = plain_type(field.type)
        if pa.types.is_struct(t) and t.get_field_index("bytes") >= 0:
            structs.append(str(field.name))
        elif pa.types.is_binary(t) or pa.types.is_large_binary(t):
            binary.append(str(field.name))
    return structs + binary


def image_column(schema: Any, path: str) -> str:
    """The column holding images: one named like a picture (:data:`IMAGE_NAMES`), else the first
    ``Image`` struct, else the first binary column."""
    found = image_columns(schema)
    if not found:
        names = ", ".join(schema.names) or "none"
        raise MemberError(f"{path}: no image column (columns: {names}); images must be stored as bytes, "
                          "e.g. with the datasets `Image` feature (cast_column('image', Image()))")
    lower = {c.lower(): c for c in reversed(found)}
    return next((lower[n] for n in IMAGE_NAMES if n in lower), found[0])


def plain_type(t: Any) -> Any:
    """A column's value type: a byte array read as a dictionary (parquet.open_file) is still a byte array."""
    import pyarrow as pa

    return t.value_type if pa.types.is_dictionary(t) else t


def image_bytes(value: Any, shard: str, row: int) -> bytes:
    """The bytes of one cell of the image column; MemberError naming shard and row when it holds none."""
    data = value.get("bytes") if isinstance(value, dict) else value
    if isinstance(data, int) and not isinstance(data, bool):  # parquet.cell: too large to take out
        raise MemberError(f"{shard} row {row}: an image cell of {data:,} bytes, over the {parquet.MAX_CELL:,} "
                          "one may hold")
    if isinstance(data, (bytes, bytearray, memoryview)) and len(data):
        return bytes(data)
    where = f"{shard} row {row}"
    if isinstance(value, dict) and value.get("path"):
        raise MemberError(f"{where}: {PATH_ONLY} ({value['path']!r}), not embedded, and a "
                          f"path is never followed; {EMBED}")
    raise MemberError(f"{where}: no image bytes in this row; drop the row or fill in the image")


# --------------------------------------------------------------------------
# Reading


def read(path: str) -> bytes:
    """One member's bytes; ``path`` is ``<absolute shard>#<member>``.  Raises OSError (MemberError)."""
    with _lock:
        return _read(path)


def _read(path: str) -> bytes:
    parts = split(path)
    if parts is None:
        raise MemberError(f"{path}: not a member of a shard")
    shard, member = parts
    if frames.named(shard) and member.startswith(frames.FRAME):
        return _frame(shard, member, _cached(shard, _whole))
    if shard.lower().endswith(TAR):
        index = tar_index(shard)
        if member not in index:
            raise MemberError(f"{shard}: no member {member!r} (the shard changed; run the check again)")
        offset, size = index[member]
        with open(shard, "rb") as fh:
            fh.seek(offset)
            return fh.read(size)
    row = row_of(member)
    if row is None:
        raise MemberError(f"{path}: a table member is written row=N")
    return _cached(shard, _Table).row(row)


def _whole(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _frame(shard: str, member: str, data: bytes) -> bytes:
    frame = frames.frame_of(member)
    if frame is None:
        raise MemberError(f"{shard}: no member {member!r}; a DICOM file's members are its frames, frame=N")
    return frames.envelope(frame, data)


def digests(shard: str, members: Iterable[str]) -> dict[str, bytes | str]:
    """Content digest of each named member, reading the shard once; why, for a member that cannot be read."""
    wanted = set(members)
    out: dict[str, bytes | str] = {}
    try:
        with _lock:
            for name, data in _each(shard, wanted):
                out[name] = hashlib.sha256(data).digest() if isinstance(data, bytes) else data
    except OSError as exc:
        why = str(exc)
        return {name: why for name in wanted}
    for name in wanted - set(out):
        out[name] = f"{shard}: no member {name!r} (the shard changed; run the check again)"
    return out


def _each(shard: str, wanted: set[str]) -> Iterator[tuple[str, bytes | str]]:
    if frames.named(shard) and all(name.startswith(frames.FRAME) for name in wanted):
        data = _whole(shard)
        for name in sorted(wanted):
            try:
                yield name, _frame(shard, name, data)
            except MemberError as exc:
                yield name, str(exc)
        return
    if shard.lower().endswith(TAR):
        index = tar_index(shard)
        with open(shard, "rb") as fh:
            for name in sorted(wanted & set(index), key=lambda n: index[n][0]):
                fh.seek(index[name][0])
                yield name, fh.read(index[name][1])
        return
    table = _cached(shard, _Table)
    by_row = {row_of(name): name for name in wanted}
    for row in sorted(r for r in by_row if r is not None):  # in shard order: each row group read once
        try:
            yield by_row[row], table.row(row)
        except MemberError as exc:
            yield by_row[row], str(exc)
