"""A snapshot row as a file: read and written in place, one archive member at a time.

``np.load`` and ``np.savez`` take file objects; these wrap SQLite's incremental
blob I/O so that a snapshot of a million images is never held twice (as the
arrays and as the stored bytes).
"""

from __future__ import annotations

import io
import sqlite3
from typing import Any

import numpy as np

# Bytes per write into a snapshot's row.
BLOB_STEP = 1 << 24


class BlobFile(io.RawIOBase):
    """A stored row as a read-only file, so ``np.load`` reads it an array at a time."""

    def __init__(self, blob: sqlite3.Blob) -> None:
        self.blob = blob

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.blob.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self.blob.seek(offset, whence)
        return self.blob.tell()

    def tell(self) -> int:
        return self.blob.tell()


def npz(source: Any) -> dict[str, np.ndarray]:
    with np.load(source, allow_pickle=False) as npz:
        return {name: npz[name] for name in npz.files}


# --------------------------------------------------------------------------
# The snapshot format: a JSON header naming each array's dtype, shape, place and checksum,
# then the arrays' bytes.  Read array by array with one copy out of SQLite, where np.load
# through zipfile makes four and a CRC pass (``benchmarks/hook_speed.py`` measures the hook).

MAGIC = b"LKSNAP1\n"


def checksum(data: Any) -> int:
    """Sum of the bytes as little-endian 64-bit words (the tail zero-padded), modulo 2**64.

    Garbage written over a row changes it, as a CRC would, at memory speed
    (a CRC is many times slower on the same bytes).
    """
    view = _octets(data)
    body = len(view) - len(view) % 8
    total = int(view[:body].view("<u8").sum(dtype=np.uint64)) if body else 0
    tail = view[body:].tobytes().ljust(8, b"\0")
    return (total + int.from_bytes(tail, "little") + len(view)) % (1 << 64)


def _octets(data: Any) -> np.ndarray:
    """A flat uint8 view of an array (contiguous) or of bytes, empty shapes included."""
    if isinstance(data, np.ndarray):
        return data.reshape(-1).view(np.uint8)
    return np.frombuffer(data, np.uint8)


def layout(arrays: dict[str, np.ndarray]) -> tuple[bytes, list[np.ndarray]]:
    """The header bytes (magic, length, JSON) and the arrays as contiguous blocks, in order."""
    import json

    blocks, entries, at = [], [], 0
    for name, arr in arrays.items():
        block = np.ascontiguousarray(arr)
        if block.dtype.hasobject:
            raise ValueError(f"snapshot array {name!r} holds Python objects")
        blocks.append(block)
        entries.append({"name": name, "dtype": block.dtype.str, "shape": list(block.shape), "at": at,
                        "nbytes": block.nbytes, "sum": str(checksum(block))})
        at += block.nbytes
    text = json.dumps(entries).encode()
    return MAGIC + len(text).to_bytes(8, "little") + text, blocks


def write(blob: Any, header: bytes, blocks: list[np.ndarray]) -> None:
    blob.write(header)
    for block in blocks:
        view = _octets(block)
        for a in range(0, len(view), BLOB_STEP):
            blob.write(view[a:a + BLOB_STEP].data)


def read(blob: Any) -> dict[str, np.ndarray]:
    """The arrays of a row in this format (``blob`` positioned after the magic)."""
    import json

    size = int.from_bytes(blob.read(8), "little")
    entries = json.loads(blob.read(size))
    start = len(MAGIC) + 8 + size
    out = {}
    for e in entries:
        blob.seek(start + int(e["at"]))
        data = blob.read(int(e["nbytes"]))
        if len(data) != int(e["nbytes"]) or checksum(data) != int(e["sum"]):
            raise ValueError(f"snapshot array {e['name']!r} does not match its checksum")
        out[e["name"]] = np.frombuffer(data, np.dtype(e["dtype"])).reshape(e["shape"])
    return out
