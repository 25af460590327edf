"""`leakcheck`, the command line: app.py (parser, check, render, fingerprint, export, hook,
review commands) and split.py (`leakcheck split`).

``pytest_leakcheck.cli:main`` is the console script's entry point.
"""

from __future__ import annotations

from .app import main

__all__ = ["main"]
