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


class Sink(io.RawIOBase):
    """A writable, seekable file that is a blob of the store's row, or (``blob`` None) that only
    counts: ``np.savez`` writes the same bytes into both, so the first pass gives the row's size.

    Saving through it never holds the archive in memory: a BytesIO of a large snapshot
    grows by doubling and held up to twice the arrays (0.6 GB at 200,000 images).
    """

    def __init__(self, blob: sqlite3.Blob | None = None) -> None:
        self.blob, self.at, self.size = blob, 0, 0

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        if self.blob is not None:
            for a in range(0, len(view), BLOB_STEP):
                self.blob.write(view[a:a + BLOB_STEP])
        self.at += len(view)
        self.size = max(self.size, self.at)
        return len(view)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self.at = offset if whence == io.SEEK_SET else self.at + offset if whence == io.SEEK_CUR else self.size + offset
        if self.blob is not None:
            self.blob.seek(self.at)
        return self.at

    def tell(self) -> int:
        return self.at


def npz(source: Any) -> dict[str, np.ndarray]:
    with np.load(source, allow_pickle=False) as npz:
        return {name: npz[name] for name in npz.files}
