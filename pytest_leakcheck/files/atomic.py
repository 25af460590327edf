"""Write our own files (reports, baselines, manifests, exported tables) atomically.

A reader, or a check killed half way, never sees half a file: the content goes
to a temporary file beside the target, which is then renamed over it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def replacing(path: str | Path) -> Iterator[str]:
    """A temporary path beside ``path`` to write into; renamed over ``path`` on success.

    The file keeps the mode of the one it replaces (0644 when new): mkstemp's
    0600 would make a baseline or a report unreadable to the rest of a team.
    On any failure the temporary file is removed and ``path`` is untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o777
    except OSError:
        mode = 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        yield tmp
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_atomic(path: str | Path, text: str, *, errors: str = "strict") -> None:
    """Write ``text`` via a temporary file and rename, so a reader never sees half a file.

    ``errors="surrogateescape"`` writes file names that are not UTF-8 back as
    their bytes (a manifest); reports stay strict, they are valid Unicode.
    """
    with replacing(path) as tmp, open(tmp, "w", encoding="utf-8", errors=errors, newline="\n") as fh:
        fh.write(text)
