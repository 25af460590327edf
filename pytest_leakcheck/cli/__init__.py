"""`leakcheck`, the command line: main.py (parser, dispatch, exit codes), options.py (options
several commands share, declared once), output.py (what commands write) and commands/
(one module per command).

``pytest_leakcheck.cli:main`` is the console script's entry point.
"""

from __future__ import annotations

from .main import main

__all__ = ["main"]
