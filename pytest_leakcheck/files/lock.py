"""A folder locked while one run reads, changes and writes a file in it.

``leakcheck judge`` and ``leakcheck baseline`` read the baseline, change it
and write it back; two at once would each keep only their own verdict.  Under
:func:`locked` they take turns, and each reads the file again inside the
lock.  The lock is ``flock`` on the folder itself, so no lock file is ever
left in the user's repository; closing the descriptor (the process ending,
however) releases it.  A system without ``fcntl`` (Windows) runs unlocked.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Hold ``folder`` locked (made if missing) for the block; ``OSError`` if it cannot be opened."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # waits for the other run; a signal still interrupts it
        yield
    finally:
        os.close(fd)
