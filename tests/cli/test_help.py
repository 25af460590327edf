"""Help, version, README snippets and the text report's fix lines (issue 15)."""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_leakcheck
from pytest_leakcheck import EXIT_CLEAN, EXIT_LEAKS
from pytest_leakcheck.cli.main import parser
from pytest_leakcheck.testing import photo, save

from ..conftest import write_policy

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")


def test_version(run_cli) -> None:
    code, out, _ = run_cli("--version")
    assert code == 0
    assert out.strip() == f"leakcheck {pytest_leakcheck.__version__}"


def _commands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_every_command_and_option_has_help() -> None:
    commands = _commands()
    assert {"check", "init", "split", "report", "hook", "baseline", "judge", "render", "fingerprint"} <= set(commands)
    for name, parser in commands.items():
        assert parser.description, f"`leakcheck {name} --help` has no description"
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help and action.help != argparse.SUPPRESS, f"{name} {action.option_strings or action.dest}"


def test_check_help_describes_the_command_and_format(run_cli) -> None:
    _, out, _ = run_cli("check", "--help")
    assert "check the dataset; exit 1 on error-level findings" in out
    assert "report format (default: text)" in out


def test_fix_lines_follow_the_kind_of_finding(tmp_path: Path, run_cli) -> None:
    """An unreadable file gets a fix about the file, not the leak-oriented one."""
    save(photo(1, (64, 48)), tmp_path / "train/a.jpg")
    save(photo(2, (64, 48)), tmp_path / "test/b.jpg")
    (tmp_path / "test/broken.jpg").write_bytes(b"\xff\xd8\xff not really a jpeg")
    write_policy(tmp_path)
    code, out, _ = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "-j", "1")
    assert code == EXIT_LEAKS
    fixes = [line for line in out.splitlines() if line.startswith("Fix")]
    assert fixes == ["Fix (unreadable-image): replace or delete the damaged file (convert one of a format it cannot "
                     "read), or skip it with "
                     "`ignore:` in the policy."]


def _python_example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README, re.S)
    assert len(blocks) == 1
    return blocks[0]


@pytest.mark.slow
def test_readme_python_example_agrees_with_the_exit_code(tmp_path: Path, run_cli) -> None:
    """After `leakcheck baseline`, the README's assert passes exactly when the CLI exits 0."""
    shutil.copytree(REPO / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns(".leakcheck"))
    policy = tmp_path / "examples/leakcheck.yaml"
    example = _python_example().replace('"leakcheck.yaml"', repr(str(policy)))
    with pytest.raises(AssertionError):
        exec(example, {})
    assert run_cli("check", "--policy", str(policy), "-j", "1")[0] == EXIT_LEAKS
    assert run_cli("baseline", "--policy", str(policy), "-j", "1")[0] == EXIT_CLEAN
    scope: dict = {}
    exec(example, scope)
    assert scope["report"].errors and not scope["report"].failing
    assert run_cli("check", "--policy", str(policy), "-j", "1")[0] == EXIT_CLEAN


def test_readme_snippets_pin_a_released_version() -> None:
    tag = f"v{pytest_leakcheck.__version__}"
    for text in (README, (REPO / "docs/pytest-and-pre-commit.md").read_text(encoding="utf-8")):
        assert re.findall(r"rev: (\S+)", text) == [tag]
    uses = re.findall(r"uses: (pytest-leakcheck/pytest-leakcheck@\S+)", README)
    assert uses == [f"pytest-leakcheck/pytest-leakcheck@{tag}"]
    assert "<owner>" not in README and "<owner>" not in (REPO / "docs/github-action.md").read_text(encoding="utf-8")
    assert f"## {pytest_leakcheck.__version__}" in (REPO / "CHANGELOG.md").read_text(encoding="utf-8")


def test_example_policy_counts_its_images() -> None:
    head = (REPO / "examples/leakcheck.yaml").read_text(encoding="utf-8")[:300]
    said = re.search(r"(\d+) training, (\d+) validation and (\d+) test", head)
    assert said is not None
    counts = [len(list((REPO / "examples/data" / s).glob("*.*"))) for s in ("train", "val", "test")]
    assert [int(n) for n in said.groups()] == counts


@pytest.mark.slow
def test_version_comes_from_one_place() -> None:
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert 'dynamic = ["version"]' in text and "pytest_leakcheck.version.__version__" in text
    assert not re.search(r'^version = "', text, re.M)
    out = subprocess.run([sys.executable, "-m", "pytest_leakcheck", "--version"], capture_output=True, text=True)
    assert out.stdout.strip().endswith(pytest_leakcheck.__version__)
