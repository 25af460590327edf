"""The stages above the detectors: preflight, signatures, matches, findings, and check()/run() that run them.

``check`` and ``run`` (run.py) are loaded on first use, so that importing one
stage module does not import the whole assembly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .run import check, run

__all__ = ["check", "run"]


def __getattr__(name: str) -> Any:
    if name in ("check", "run"):
        from . import run as module

        return getattr(module, name)
    raise AttributeError(name)
