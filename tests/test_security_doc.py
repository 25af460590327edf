"""docs/security.md cites the test behind each promise; every cited test must exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: `tests/x.py::name`, `tests/x.py`, or `::name` (another test in the file cited last).
CITATION = re.compile(r"(tests/[\w/]+\.py)(?:::(\w+))?|(?<![\w/.])::(\w+)\b(?!::)")


def citations(text: str) -> list[tuple[str, str | None]]:
    found: list[tuple[str, str | None]] = []
    current = None
    for match in CITATION.finditer(text):
        if match.group(1):
            current = match.group(1)
            found.append((current, match.group(2)))
        else:
            assert current is not None, f"`::{match.group(3)}` cited before any test file"
            found.append((current, match.group(3)))
    return found


def _functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def test_every_cited_test_exists() -> None:
    """Each `tests/file.py::test` the threat model cites is a test function in that file."""
    cited = citations((ROOT / "docs/security.md").read_text(encoding="utf-8"))
    assert len(cited) > 40  # the page is read, not skipped
    missing = []
    for file, name in cited:
        path = ROOT / file
        if not path.is_file():
            missing.append(file)
        elif name is not None and name not in _functions(path):
            missing.append(f"{file}::{name}")
    assert missing == []


def test_the_citation_reader_finds_what_it_should() -> None:
    """The reader itself: a file, its tests by `::`, and a second file."""
    text = "`tests/a.py::test_x`, `::test_y`; `tests/b.py` and `tests/c.py::test_z`"
    assert citations(text) == [("tests/a.py", "test_x"), ("tests/a.py", "test_y"), ("tests/b.py", None),
                               ("tests/c.py", "test_z")]
