"""Datasets in object storage: a policy ``root`` (or manifest) such as ``s3://bucket/datasets/v3``.

Listing, reading and the incremental cache go through ``fsspec`` (``s3fs``
for ``s3://``), imported here, inside functions, and only for a URL: a local
root never imports either, and local reads stay plain ``open()`` calls.

Credentials and the endpoint come from the environment exactly as the AWS
SDKs read them (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_ENDPOINT_URL``, ``AWS_PROFILE``…): ``s3fs`` hands them to botocore,
which honours ``AWS_ENDPOINT_URL`` itself, so nothing is passed here.

The incremental cache keys a file by path, size and ``mtime_ns``.  An object
has no mtime we can trust (a copy or restore rewrites ``LastModified``
without changing a byte), so its ``mtime_ns`` column holds :func:`version`:
a stable signed 64-bit hash of the object's ETag (or version id, generation,
checksum: the first the backend reports).  An unchanged object keeps its
ETag, so it is neither downloaded nor decoded again.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from . import members

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
#: Object metadata that changes whenever the content does, best first.
_VERSION_KEYS = ("ETag", "etag", "VersionId", "generation", "md5Hash", "crc32c", "checksum", "mtime",
                 "LastModified", "last_modified", "updated")
INSTALL = "pip install 'pytest-leakcheck[s3]'"


def is_url(location: object) -> bool:
    """Whether a root, manifest or task path is in object storage rather than on disk."""
    return isinstance(location, Url) or (isinstance(location, str) and _SCHEME.match(location) is not None)


@dataclass(frozen=True)
class Url:
    """A location in object storage, standing where a :class:`~pathlib.Path` stands for a folder.

    It supports what the pipeline does with a root: ``root / "train/a.jpg"``,
    ``str(root)``, ``is_file()`` and ``is_dir()``.
    """

    url: str  # normalised: scheme://bucket/key, no trailing slash, no `.` or `..` segments

    def __str__(self) -> str:
        return self.url

    def __truediv__(self, rel: str) -> Url:
        return Url(self.url + "/" + str(rel).lstrip("/"))

    @property
    def name(self) -> str:
        return self.url.rstrip("/").rsplit("/", 1)[-1]

    def is_file(self) -> bool:
        fs, path = filesystem(self.url)
        try:
            return bool(fs.isfile(path))
        except Exception:  # no bucket, no permission, no network: not a file we can read
            return False

    def is_dir(self) -> bool:
        fs, path = filesystem(self.url)
        try:
            return bool(fs.isdir(path))
        except Exception:
            return False


def parse(raw: str) -> Url | None:
    """``raw`` as a :class:`Url`, or None when it has a ``..`` segment or no bucket."""
    scheme, _, rest = raw.strip().partition("://")
    parts = [p for p in rest.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return Url(f"{scheme.lower()}://{'/'.join(parts)}")


def locate(root: Path | Url, rel: str) -> Path | Url | None:
    """A path the policy names (a manifest): an absolute URL, or relative to ``root``.

    None when a URL does not parse.  A local path under a local root resolves as before.
    """
    if is_url(rel):
        return parse(rel)
    if isinstance(root, Url):
        scheme, _, rest = root.url.partition("://")
        parts = posixpath.normpath(f"{rest}/{rel}").split("/")
        if not parts or parts[0] in ("", "..") or parts[0] != rest.split("/")[0]:
            return None  # a `..` that climbs out of the bucket
        return Url(f"{scheme}://{'/'.join(parts)}")
    return (root / rel).resolve()


def filesystem(url: str) -> tuple[Any, str]:
    """The fsspec filesystem and its path for ``url``; raises OSError naming the extra to install."""
    try:
        from fsspec.core import url_to_fs
    except ImportError:
        raise OSError(f"{url}: reading object storage needs fsspec ({INSTALL})") from None
    try:
        return url_to_fs(url)
    except (ImportError, ValueError) as exc:  # e.g. s3:// without s3fs
        raise OSError(f"{url}: {exc} ({INSTALL})") from None


def version(info: dict[str, Any]) -> int:
    """A stable signed 64-bit stand-in for ``mtime_ns``: a hash of the object's ETag or version."""
    for key in _VERSION_KEYS:
        value = info.get(key)
        if value not in (None, ""):
            digest = hashlib.sha256(f"{key}={value}".encode()).digest()
            return int.from_bytes(digest[:8], "little", signed=True)
    return 0  # nothing to tell versions apart: size alone decides, as a coarse cache


@dataclass(frozen=True)
class Stat:
    """What the inventory reads of an ``os.stat_result``, for an object."""

    st_size: int
    st_mtime_ns: int


def find(root: Url) -> list[tuple[str, Stat]]:
    """Every object under ``root``: POSIX path relative to it, size and :func:`version`, sorted.

    One paginated listing with details, no per-object request.  Raises
    OSError when the root cannot be listed (no bucket, no permission).
    """
    fs, base = filesystem(root.url)
    try:
        found = fs.find(base, detail=True)
    except OSError:
        raise
    except Exception as exc:  # botocore's own errors (credentials, endpoint) are not OSErrors
        raise OSError(f"cannot list {root.url}: {exc}") from None
    prefix = base.rstrip("/") + "/"
    out = []
    for key, info in found.items():
        if info.get("type", "file") != "file" or not key.startswith(prefix):
            continue
        out.append((key[len(prefix):], Stat(int(info.get("size") or 0), version(info))))
    out.sort(key=lambda item: item[0])
    return out


def read_bytes(path: str) -> bytes:
    """A file's bytes from disk, object storage or a shard (``x.tar#member``); raises OSError either way."""
    if not is_url(path):
        if members.is_member(path) and not os.path.lexists(path):  # a real file may have `#` in its name
            return members.read(path)
        return Path(path).read_bytes()
    fs, key = filesystem(path)
    try:
        return bytes(fs.cat_file(key))
    except OSError:
        raise
    except Exception as exc:  # botocore errors: a read failure like any other
        raise OSError(f"cannot read {path}: {exc}") from None


@contextmanager
def open_text(path: str | Path | Url) -> Iterator[IO[str]]:
    """A CSV (manifest, group table) as text, from disk or object storage; OSError on failure.

    Names as their bytes (surrogateescape), like the local listing.
    """
    options = {"newline": "", "encoding": "utf-8-sig", "errors": "surrogateescape"}
    if not is_url(path):
        with open(path, **options) as fh:  # type: ignore[call-overload]
            yield fh
        return
    import io

    data = read_bytes(str(path))
    with io.TextIOWrapper(io.BytesIO(data), **options) as fh:  # type: ignore[arg-type]
        yield fh
