"""Decoded signature rows, written into one buffer per family as they arrive.

Each row's bytes go straight into its family's (N, row bytes) buffer at the
file's row, and assembling a family is at most one gather: no small bytes
object and dict entry per content and family, and no join copying each family
once more at the end of decoding, where a cold check's memory peaks (measured
by ``benchmarks/speed.py``).  Rows that come from the store (``cached``) are
read from it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..errors import StoreDamaged


class FreshRows:
    """Buffers of the rows decoded in this check, and which content each row holds."""

    def __init__(self, n: int, widths: Mapping[str, int], variable: set[str]) -> None:
        self.width = dict(widths)
        # A variable-length family keeps its fixed head here; the tail goes to the store only.
        self.variable = set(variable)
        # np.zeros maps pages lazily: a family nothing is decoded for costs no memory.
        self.buf = {name: np.zeros((n, w), np.uint8) for name, w in self.width.items()}
        self.has = {name: np.zeros(n, bool) for name in self.width}
        self.row: dict[bytes, int] = {}

    def put(self, i: int, digest: bytes, result: Mapping[str, bytes]) -> None:
        """Row ``i``'s decoded families (the first row decoded for a content holds them)."""
        r = self.row.setdefault(digest, i)
        for name, data in result.items():
            w = self.width.get(name)
            if w is None:
                continue
            if len(data) < w or (len(data) > w and name not in self.variable):
                raise StoreDamaged(f"a decoded `{name}` signal has the wrong size ({len(data)} bytes, not {w})")
            self.buf[name][r] = np.frombuffer(data, np.uint8, count=w)
            self.has[name][r] = True

    def holds(self, name: str, digest: bytes | None) -> bool:
        """Whether a row of family ``name`` was decoded for ``digest`` in this check."""
        r = self.row.get(digest) if digest else None
        return r is not None and name in self.has and bool(self.has[name][r])

    def sources(self, digests: Sequence[bytes | None], rows: Sequence[int]) -> np.ndarray:
        """For each of ``rows``, the buffer row holding its content, or -1."""
        return np.fromiter((self.row.get(digests[i], -1) if digests[i] else -1 for i in rows),  # type: ignore[arg-type]
                           np.int64, count=len(rows))

    def column(self, name: str, src: np.ndarray, rows: np.ndarray,
               stored: Mapping[bytes, tuple[bool, bytes]], digests: Sequence[bytes | None],
               head: bool) -> np.ndarray:
        """(len(rows), width) bytes of family ``name``: decoded rows from the buffer, the rest from ``stored``."""
        width, buf, has = self.width[name], self.buf[name], self.has[name]
        take = (src >= 0) & has[np.maximum(src, 0)]
        if take.all() and len(src) == len(buf) and np.array_equal(src, np.arange(len(buf))):
            return buf  # a cold check without copies: the buffer is the column
        out = np.empty((len(rows), width), np.uint8)
        out[take] = buf[src[take]]
        rest = np.flatnonzero(~take)
        if len(rest):
            blobs = [stored[digests[rows[k]]][1] for k in rest]  # type: ignore[index]  # (ok, bytes)
            if head:  # a variable-length row: its fixed head only (Family.variable)
                blobs = [b[:width] for b in blobs]
            if any(len(b) != width for b in blobs):  # no version of this decode path wrote that
                raise StoreDamaged(f"a stored `{name}` signal has the wrong size")
            out[rest] = np.frombuffer(b"".join(blobs), np.uint8).reshape(len(rest), width)
        return out

    def drop(self, name: str) -> None:
        """Let a family's buffer go once it is assembled."""
        self.buf.pop(name, None)
        self.has.pop(name, None)
