"""One command module per command, the shared options declared once (issue 33)."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest

import pytest_leakcheck
from pytest_leakcheck.cli.main import COMMANDS, parser
from pytest_leakcheck.cli.options import EXECUTOR_NOTE, positive_int
from pytest_leakcheck.errors import EXIT_USAGE, UsageError
from pytest_leakcheck.policy.locate import find_policy

PACKAGE = Path(pytest_leakcheck.__file__).parent
SHARED = ("--policy", "--jobs", "--no-cache", "--quiet", "--executor", "--blob-url", "--path-prefix")


def _declarations(flag: str) -> list[str]:
    """Where in the package an ``add_argument`` call names ``flag``: one ``path:line`` each."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("add_argument", "addoption")
                    and any(isinstance(a, ast.Constant) and a.value == flag for a in node.args)):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return found


@pytest.mark.parametrize("flag", SHARED)
def test_each_shared_option_is_declared_once_in_cli_options(flag: str) -> None:
    where = _declarations(flag)
    assert len(where) == 1 and where[0].startswith("cli/options.py:"), where


def _commands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _option(cmd: argparse.ArgumentParser, flag: str) -> argparse.Action | None:
    return next((a for a in cmd._actions if flag in a.option_strings), None)


def test_every_command_is_dispatched_to_a_module_with_add_parser_and_run() -> None:
    assert set(_commands()) == set(COMMANDS)
    for name, module in COMMANDS.items():
        assert callable(module.add_parser) and callable(module.run), name
        assert module.__name__.startswith("pytest_leakcheck.cli.commands."), name


def test_every_command_that_runs_the_engine_words_its_options_the_same() -> None:
    engines = {name: cmd for name, cmd in _commands().items() if _option(cmd, "--jobs")}
    assert {"check", "split", "export", "baseline", "judge", "report"} <= set(engines)
    for flag in ("--jobs", "--no-cache", "--policy"):
        helps = {name: _option(cmd, flag).help for name, cmd in engines.items()}  # type: ignore[union-attr]
        assert len(set(helps.values())) == 1, (flag, helps)
    assert all(_option(cmd, "--jobs").type is positive_int for cmd in engines.values())  # type: ignore[union-attr]


def test_only_check_takes_an_executor_and_the_help_says_so(run_cli) -> None:
    assert {name for name, cmd in _commands().items() if _option(cmd, "--executor")} == {"check"}
    _, out, _ = run_cli("--help")
    assert " ".join(EXECUTOR_NOTE.split()) in " ".join(out.split())


@pytest.mark.parametrize("command", ["check", "split", "export", "baseline", "report --html r.html",
                                     "judge abcdef duplicate --reason r"])
@pytest.mark.parametrize("jobs", ["0", "-3"])
def test_jobs_below_one_is_a_usage_error_before_anything_runs(
    command: str, jobs: str, tmp_path: Path, run_cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No policy anywhere: the option is refused while parsing, before a policy is looked for."""
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(*command.split(), "--jobs", jobs)
    assert code == EXIT_USAGE
    assert f"Error: argument -j/--jobs: must be at least 1, got {int(jobs)}" in err
    assert "leakcheck.yaml" not in err and "Traceback" not in err and out == ""


def test_positive_int_accepts_counts_and_words_a_non_number_as_int_did() -> None:
    assert positive_int("1") == 1 and positive_int("16") == 16
    with pytest.raises(argparse.ArgumentTypeError, match=r"invalid int value: 'many'"):
        positive_int("many")


def test_find_policy_looks_upward_and_stops_at_the_repository_root(tmp_path: Path) -> None:
    (tmp_path / "leakcheck.yaml").write_text("version: 1\n")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "data/train").mkdir(parents=True)
    with pytest.raises(UsageError, match="no leakcheck.yaml"):
        find_policy(repo / "data/train")  # the one above the repository is not this repository's
    (repo / "leakcheck.yaml").write_text("version: 1\n")
    assert find_policy(repo / "data/train") == repo / "leakcheck.yaml"
