"""One registry of report formats: one module per format in this package.

A format is a module ``render/<name>.py`` with a ``render(report, **options)
-> str`` function and a one-line docstring.  The registry finds the modules
by listing the package, without importing them, so the CLI's ``--format``
choices, ``leakcheck render`` and the pytest plugin all see every format, and
a plain text check does not pay for loading the HTML renderer's Pillow.
Modules whose names start with ``_`` are shared helpers, not formats.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache
from types import ModuleType

from ..errors import UsageError
from ..report.model import Finding, Report


@lru_cache(maxsize=1)
def formats() -> tuple[str, ...]:
    """Every format name, ``text`` first, then alphabetically."""
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
    return tuple(sorted(names, key=lambda n: n != "text"))


def module(fmt: str) -> ModuleType:
    if fmt not in formats():
        raise UsageError(f"unknown report format {fmt!r}", key="format",
                         fix=f"use one of {', '.join(formats())}")
    return importlib.import_module(f"{__name__}.{fmt}")


def render(report: Report, fmt: str = "text", **options: object) -> str:
    """``report`` as ``fmt``; each renderer ignores the options it does not know."""
    return module(fmt).render(report, **options)


def links(fmt: str) -> bool:
    """Whether ``fmt`` links file names into the repository (``LINKS = True`` in its module): the CLI then
    passes ``prefix`` (the policy root's path in the checkout) and ``blob_url`` for thumbnails."""
    return bool(getattr(module(fmt), "LINKS", False))


def finding_lines(finding: Finding) -> list[str]:
    """The text report's lines for one finding, for other ways in (the pytest plugin's summary)."""
    from ._common import finding_lines as lines  # imports the detector registry: only when asked

    return lines(finding)


def extension(fmt: str) -> str:
    """The file extension a saved report in ``fmt`` gets (``EXTENSION`` in its module)."""
    return getattr(module(fmt), "EXTENSION", fmt)
