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


#: What a folder of our own (``.leakcheck/``) holds so that git never sees the store or the
#: reports in it, whatever the repository's .gitignore says: pytest's cache folder does the same.
GITIGNORE = "# Created by pytest-leakcheck: a signature store and reports, never committed.\n*\n"


def own_folder(folder: str | Path) -> bool:
    """Create ``folder`` (and its parents); a folder created here gets a ``.gitignore`` of ``*``.

    Only a folder this call creates: one that exists (the dataset root, when the
    policy's ``cache`` is a bare file name) is never given one.  True when it was created.
    """
    folder = Path(folder)
    if folder.is_dir():
        return False
    folder.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):  # a read-only mount: the store still works, git may see it
        with open(folder / ".gitignore", "x", encoding="utf-8") as f:
            f.write(GITIGNORE)
    return True


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
