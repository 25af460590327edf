"""OpenCV with one thread per process, the limit set where setting it is safe.

A check's parallelism is its forked workers; OpenCV's own thread pool on top would oversubscribe
the cores.  But once that pool has started in a process (any threaded call: a resize, a blur, in
the driver or in a user's own test before ``pytest --leakcheck``), ``cv2.setNumThreads`` hangs in a
child forked from it, whose pool threads were not copied (opencv-python 5.1:
``tests/signals/test_opencv.py``; the suite stalled when a check in the driver ran the template
hold before the next check forked its workers).  So the limit is set once per process, in the
process that forks: :func:`opencv` sets it on first use, :func:`before_fork` (called by
``signals/pool.py`` before it forks) sets it in a driver that imported cv2 by other means, and a
forked child inherits both the limit and the mark that it is set.  A user's process that imported
cv2 keeps one OpenCV thread after a check.
"""

from __future__ import annotations

import sys
from types import ModuleType

_SET = False


def opencv() -> ModuleType:
    """The ``cv2`` module, limited to one thread in this process (set once, never in a forked child)."""
    global _SET
    import cv2

    if not _SET:
        cv2.setNumThreads(1)
        _SET = True
    return cv2


def before_fork() -> None:
    """Set the limit in this process before it forks, where cv2 is already imported (without importing it)."""
    if not _SET and "cv2" in sys.modules:
        opencv()
