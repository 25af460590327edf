"""docs/architecture.md stays true: its tree is the package's, and each recipe's files are where the registries look.

Each recipe ends with a ``Touches:`` line naming the files such an addition
touches; ``<name>`` stands for the new thing.  These tests read those lines, as
tests/test_security_doc.py reads the threat model's citations.
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
from pathlib import Path

import pytest

from pytest_leakcheck import detectors, render
from pytest_leakcheck import sources as splitsources
from pytest_leakcheck.policy import load as policy_load
from pytest_leakcheck.signals import executors

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "pytest_leakcheck"
DOC = ROOT / "docs/architecture.md"
RECIPES = ("A detector", "An output format", "A split source", "An executor", "A policy key")


def recipes(text: str) -> dict[str, list[str]]:
    """Recipe title -> the paths its ``Touches:`` line names, in order."""
    out: dict[str, list[str]] = {}
    for section in re.split(r"^### ", text, flags=re.M)[1:]:
        title, _, body = section.partition("\n")
        touches = re.search(r"^Touches: (.+)$", body, re.M)
        if touches:
            out[title.strip()] = re.findall(r"`([^`]+)`", touches.group(1))
    return out


def tree(text: str) -> set[str]:
    """The names the doc's folder tree lists under ``pytest_leakcheck/`` (packages end in ``/``)."""
    block = text.split("```\npytest_leakcheck/\n", 1)[1].split("```", 1)[0]
    return set(re.findall(r"^[├└]── (\S+)", block, re.M))


@pytest.fixture(scope="module")
def touched() -> dict[str, list[str]]:
    found = recipes(DOC.read_text(encoding="utf-8"))
    assert set(RECIPES) <= set(found), f"recipes without a Touches line: {set(RECIPES) - set(found)}"
    return found


def _module_file(obj: object) -> Path:
    return Path(inspect.getsourcefile(obj)).resolve()  # type: ignore[arg-type]


def test_the_tree_lists_every_package_and_top_level_module() -> None:
    on_disk = {p.name for p in PACKAGE.glob("*.py")}
    on_disk |= {f"{p.name}/" for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert tree(DOC.read_text(encoding="utf-8")) == on_disk
    assert len([n for n in on_disk if n.endswith(".py")]) <= 10  # the top stays small


@pytest.mark.parametrize("title", RECIPES)
def test_every_file_a_recipe_touches_exists(touched: dict[str, list[str]], title: str) -> None:
    """A new file's folder exists (and, for tests, mirrors the package); any other file exists."""
    missing = []
    for rel in touched[title]:
        path = ROOT / rel
        if "<name>" in rel:
            if not path.parent.is_dir():
                missing.append(rel)
        elif not path.is_file():
            missing.append(rel)
    assert missing == []
    code = [rel for rel in touched[title] if rel.startswith("pytest_leakcheck/")]
    tests = [rel for rel in touched[title] if rel.startswith("tests/")]
    assert code and tests, title
    # tests/<layer>/ sits beside the layer it tests.
    assert {Path(t).parts[1] for t in tests} <= {Path(c).parts[1] for c in code}, title


def test_the_detector_registry_reads_the_recipes_folder(touched: dict[str, list[str]]) -> None:
    folder = (ROOT / touched["A detector"][0]).parent
    assert Path(detectors.__file__).resolve().parent == folder
    # A detector is a module of the folder, or the __init__ of a folder of its own inside it.
    homes = {_module_file(type(d)).parent for d in detectors.registry()}
    assert {h if h == folder else h.parent for h in homes} == {folder}
    assert len(detectors.registry()) >= 5


def test_the_format_registry_reads_the_recipes_folder(touched: dict[str, list[str]]) -> None:
    folder = (ROOT / touched["An output format"][0]).parent
    assert Path(render.__file__).resolve().parent == folder
    assert {Path(render.module(fmt).__file__).resolve().parent for fmt in render.formats()} == {folder}
    # Nothing outside render/ names a format: the CLI and the plugin ask the registry.
    named = []
    for path in PACKAGE.rglob("*.py"):
        if folder in path.resolve().parents:
            continue
        text = path.read_text(encoding="utf-8")
        named += [f"{path.name}: {fmt}" for fmt in ("sarif", "markdown", "annotations")
                  if re.search(rf"""["']{fmt}["']""", text)]
    assert named == []


def test_split_sources_are_the_recipes_module(touched: dict[str, list[str]]) -> None:
    assert Path(splitsources.__file__).resolve() == (ROOT / touched["A split source"][0]).resolve()
    sources_doc = (ROOT / "docs/sources.md").read_text(encoding="utf-8")
    for kind in splitsources.KINDS:  # each source the registry knows is documented
        assert re.search(rf"^\s+{kind}:", sources_doc, re.M), kind


def test_executors_are_chosen_in_the_recipes_module(touched: dict[str, list[str]]) -> None:
    home = Path(sys.modules[executors.connect.__module__].__file__).resolve()  # connect is wrapped
    assert home == (ROOT / touched["An executor"][0]).resolve()
    assert executors.ADDRESS.match("tcp://127.0.0.1:8786")


def test_every_policy_key_has_its_heading_in_policy_md(touched: dict[str, list[str]]) -> None:
    assert Path(policy_load.__file__).resolve() == (ROOT / touched["A policy key"][0]).resolve()
    headings = re.findall(r"^### (.+)$", (ROOT / "docs/policy.md").read_text(encoding="utf-8"), re.M)
    documented = {key for heading in headings for key in re.findall(r"`(\w+)`", heading)}
    keys = set(policy_load._TOP_KEYS) | set(policy_load._GROUP_KEYS)
    assert keys - documented == set()
    assert documented - keys == set()


def steps(text: str) -> dict[str, list[str]]:
    """Step name -> the package paths its row of the step table names (module column)."""
    table = text.split("## The pipeline, step by step", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|") for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    return {cells[1].strip(): re.findall(r"`([\w/<>.]+\.py)`", cells[2]) for cells in rows[1:]}


def test_every_module_the_step_table_names_exists() -> None:
    found = steps(DOC.read_text(encoding="utf-8"))
    assert {"policy", "inventory", "signatures", "search", "findings", "render"} <= set(found)
    missing = [rel for paths in found.values() for rel in paths
               if "<" not in rel and not (PACKAGE / rel).is_file()]
    assert missing == []
    assert all(found.values()), "every step names its module"


def _folder_imports() -> dict[str, set[str]]:
    """Top-level folder -> the other top-level folders its modules import (lazy imports too)."""
    arrows: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).with_suffix("").parts
        here = rel[:-1] if rel[-1] == "__init__" else rel
        package = rel[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = list(package[:len(package) - (node.level - 1)])
                names = [*base, *(node.module.split(".") if node.module else [])]
                targets = [names + [a.name] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pytest_leakcheck."):
                targets = [node.module.split(".")[1:]]
            elif isinstance(node, ast.Import):
                targets = [a.name.split(".")[1:] for a in node.names if a.name.startswith("pytest_leakcheck.")]
            else:
                continue
            for target in targets:
                if target and here and target[0] != here[0] and (PACKAGE / target[0]).is_dir():
                    arrows.setdefault(here[0], set()).add(target[0])
    return arrows


def test_no_two_folders_import_each_other() -> None:
    arrows = _folder_imports()
    assert arrows.get("cli") and "pipeline" in arrows.get("ci", set())  # the walk sees imports at all
    both = sorted({tuple(sorted((a, b))) for a, targets in arrows.items() for b in targets
                   if a in arrows.get(b, set())})
    assert both == []


def test_the_readers_find_what_they_should() -> None:
    """The readers themselves, on a small document."""
    text = ("### A thing\n\nprose `not/this.py`\n\nTouches: `a/b.py` (new), `tests/a/test_<name>.py`.\n\n"
            "### Another\n\nno line\n\n```\npytest_leakcheck/\n├── x.py   why\n└── y/     why\n```\n")
    assert recipes(text) == {"A thing": ["a/b.py", "tests/a/test_<name>.py"]}
    assert tree(text) == {"x.py", "y/"}


def test_the_package_read_is_this_checkouts() -> None:
    """The registries above were imported from the checkout whose doc is read."""
    assert Path(sys.modules["pytest_leakcheck"].__file__).resolve().parent == PACKAGE
