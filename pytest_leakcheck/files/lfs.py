"""Git LFS pointers: the small text files a clone without git-lfs leaves where images and shards should be.

A pointer is a few lines of text (``version https://git-lfs.github.com/spec/v1``,
``oid sha256:…``, ``size …``), under 1 kB by the LFS specification.  Read as an
image it is "not an image", read as a shard "not Parquet"; both hide the one
fix that works, so every reader names it.
"""

from __future__ import annotations

from pathlib import Path

PREFIX = b"version https://git-lfs.github.com/spec/"
#: The LFS specification keeps pointer files under 1024 bytes.
MAX_POINTER = 1024
FIX = "fetch the content with `git lfs pull`, or clone with git-lfs installed"


def is_pointer(data: bytes) -> bool:
    return len(data) < MAX_POINTER and data.startswith(PREFIX)


def file_is_pointer(path: str | Path) -> bool:
    """Whether the file at ``path`` is a Git LFS pointer; False when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            return is_pointer(fh.read(MAX_POINTER))
    except OSError:
        return False


def why(what: str) -> str:
    return f"a Git LFS pointer, not the {what} itself; {FIX}"
