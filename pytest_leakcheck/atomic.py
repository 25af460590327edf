"""Write our own files (reports, baselines, manifests) atomically.

A reader, or a check killed half way, never sees half a file: the text goes to
a temporary file beside the target, which is then renamed over it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomic(path: str | Path, text: str, *, errors: str = "strict") -> None:
    """Write via a temporary file and rename, so a reader never sees half a file.

    The file keeps the mode of the one it replaces (0644 when new): mkstemp's
    0600 would make a baseline or a report unreadable to the rest of a team.
    ``errors="surrogateescape"`` writes file names that are not UTF-8 back as
    their bytes (a manifest); reports stay strict, they are valid Unicode.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o777
    except OSError:
        mode = 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors=errors, newline="\n") as fh:
            fh.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
