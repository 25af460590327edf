"""The plugin is a way in beside the CLI: it imports neither cli/ nor another package's private modules."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest_leakcheck.plugin

PLUGIN = Path(pytest_leakcheck.plugin.__file__).parent


def _imports() -> list[tuple[str, str]]:
    """(file, dotted module) of every import in plugin/, top-level or inside a function."""
    out = []
    for path in sorted(PLUGIN.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                out.append((path.name, "." * node.level + (node.module or "")))
            elif isinstance(node, ast.Import):
                out += [(path.name, alias.name) for alias in node.names]
    return out


def test_the_plugin_reaches_into_neither_the_cli_nor_private_modules() -> None:
    seen = _imports()
    assert any(module == "..policy.locate" for _, module in seen)  # the probe sees lazy imports
    wrong = [(f, m) for f, m in seen
             if "cli" in m.lstrip(".").split(".")
             or (m.startswith("..") and any(part.startswith("_") for part in m.lstrip(".").split(".")))]
    assert wrong == []
