"""Group regexes run by RE2, without backtracking (issue 22, class 6): a policy's regex cannot stall
the check, whatever the pattern and the file name."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_leakcheck import EXIT_CLEAN, EXIT_USAGE

from ..childcli import PACKAGE
from ..childcli import cli as _cli
from ..childcli import images as _images
from ..conftest import write_policy

DEEP = 200_000


@pytest.mark.slow
def test_group_regex_with_nested_quantifiers_does_not_backtrack(tmp_path: Path) -> None:
    """`(a+)+b` against a 48-character name: hours with Python's re, linear with RE2."""
    _images(tmp_path, ["train/" + "a" * 48 + ".jpg", "train/s1_x.jpg", "test/s2_y.jpg"])
    write_policy(tmp_path, textwrap.dedent("""\
        version: 1
        splits: {train: [train/**], test: [test/**]}
        groups:
          - regex: '(?P<group>(a+)+b)'
          - regex: '(?P<group>s\\d+)_'
        ungrouped: own-group
    """))
    done = _cli(tmp_path, "check", "--no-cache", "-j", "1", timeout=120)
    assert done.returncode == EXIT_CLEAN, done.stderr


@pytest.mark.parametrize("regex", ["(?P<group>a)(?=b)", "(?P<group>a)\\1", "(?<!x)(?P<group>a)"])
def test_regex_re2_cannot_run_is_refused_at_load_naming_the_key(tmp_path: Path, run_cli, regex: str) -> None:
    _images(tmp_path, ["train/a.jpg", "test/b.jpg"])
    write_policy(tmp_path, "version: 1\nsplits: {train: [train/**], test: [test/**]}\n"
                           f"groups:\n  - regex: '{regex}'\n")
    code, _, err = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "--no-cache")
    assert code == EXIT_USAGE
    assert "`groups.0.regex`" in err and "RE2" in err
    assert "re2.cc" not in err  # RE2's own log line (the pattern, raw) is silenced


@pytest.mark.slow
def test_re2_is_imported_only_for_a_regex_rule(tmp_path: Path) -> None:
    _images(tmp_path, ["train/s1_a.jpg", "test/s2_b.jpg"])
    script = textwrap.dedent("""
        import sys
        from pytest_leakcheck.cli import main
        main(["check", "--no-cache", "-j", "1", "-q"])
        print("re2" in sys.modules)
    """)
    env = {**os.environ, "PYTHONPATH": PACKAGE}
    seen = []
    for groups in ("", "groups:\n  - regex: '(?P<group>s\\d+)_'\n"):
        write_policy(tmp_path, "version: 1\nsplits: {train: [train/**], test: [test/**]}\n" + groups)
        run = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, env=env)
        seen.append(run.stdout.strip().splitlines()[-1])
    assert seen == ["False", "True"]


def test_regex_groups_names_that_are_not_utf8(tmp_path: Path) -> None:
    """RE2 reads UTF-8; a name with other bytes is still grouped, by its own characters."""
    from pytest_leakcheck.policy import userregex

    name = os.fsdecode(b"train/s7_\xff\xfe.jpg")
    program = userregex.compile(r"(?P<group>s\d+_.)")
    assert userregex.search_group(program, name) == os.fsdecode(b"s7_\xff")
    assert userregex.search_group(program, "train/none.jpg") is None
