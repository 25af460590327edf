"""The stages above the detectors: preflight, signatures, matches, findings, and run.py's check() that runs them.

``check`` is loaded on first use, so that importing one stage module does not
import the whole assembly.  ``run()`` is not re-exported: ``pipeline.run`` names
the module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .run import check

__all__ = ["check"]


def __getattr__(name: str) -> Any:
    if name == "check":
        from .run import check

        return check
    raise AttributeError(name)
