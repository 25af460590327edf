"""pytest-leakcheck: catch train/test leakage in image datasets like a failing test.

The public entry point is :func:`check`.  It is imported lazily so that
``import pytest_leakcheck`` (which pytest does for the plugin) stays free of
numpy, Pillow and imagehash until a check actually runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import EXIT_CLEAN, EXIT_LEAKS, EXIT_USAGE, LeakcheckError
from .version import __version__

__all__ = ["EXIT_CLEAN", "EXIT_LEAKS", "EXIT_USAGE", "LeakcheckError", "__version__", "check"]

if TYPE_CHECKING:
    from .pipeline.run import check


def __getattr__(name: str) -> Any:
    if name == "check":
        from .pipeline.run import check

        return check
    raise AttributeError(name)
