"""Issue 10, class 7: globs are checked when the policy loads and matched without backtracking."""

from __future__ import annotations

import fnmatch
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_leakcheck.files import globs
from pytest_leakcheck.errors import PolicyError
from pytest_leakcheck.policy.load import load

#: glob -> what the refusal says
MALFORMED = {
    "[z-a]/**": "bad character range z-a",
    "train/[abc": "unbalanced `[`",
    "train/[a/b]/**": "unbalanced `[`",
    "train/[]x": "empty character class",
    "train/[!]": "empty character class",
    "   ": "the pattern is empty",
    "a" * 1100: "longer than 1024 characters",
}


@pytest.mark.parametrize("where", ["splits", "ignore"])
@pytest.mark.parametrize("pattern", sorted(MALFORMED))
def test_malformed_globs_are_refused_with_a_reason(tmp_path: Path, pattern: str, where: str) -> None:
    """A malformed glob fails the policy load (exit 2), naming `splits.<name>.<i>` or `ignore.<i>` and why."""
    (tmp_path / "train").mkdir()
    quoted = "'" + pattern + "'"
    if where == "splits":
        text = f"version: 1\nsplits:\n  train: [train/**, {quoted}]\n  test: [test/**]\n"
        key = "splits.train.1"
    else:
        text = f"version: 1\nsplits: {{train: [train/**], test: [test/**]}}\nignore: [docs/**, {quoted}]\n"
        key = "ignore.1"
    (tmp_path / "leakcheck.yaml").write_text(text)
    with pytest.raises(PolicyError) as caught:
        load(tmp_path / "leakcheck.yaml")
    assert caught.value.key == key
    assert caught.value.line == 3
    assert MALFORMED[pattern] in caught.value.problem
    assert "malformed glob" in caught.value.problem and len(caught.value.problem) < 200


#: (pattern, path, whether it matches): inputs that take re's backtracking exponential or high-polynomial time.
HOSTILE = [
    ("*a*a*a*a*a*a*a*a*a*a*b", "a" * 250, False),
    ("*a*a*a*a*a*a*a*a*a*a*b", "a" * 249 + "b", True),
    ("**/**/**/**/**/**/**/**/x/**/y", "/".join(["x"] * 1500), False),
    ("**/**/**/**/**/**/**/**/x/**/y", "/".join(["x"] * 1500) + "/y", True),
    ("**a**a**a**a**a**a**b", "a" * 250, False),
    ("*[ab]*[ab]*[ab]*[ab]*[ab]*[ab]*c", "ab" * 120, False),
    ("?*?*?*?*?*?*?*?*?*?*/x", "z" * 250 + "/x", True),
]


def test_hostile_globs_match_without_backtracking() -> None:
    """Each hostile glob gives the right answer; a child process with a generous timeout guards a hang
    (with `re`'s backtracking the first case alone runs for hours)."""
    script = textwrap.dedent(f"""
        from pytest_leakcheck.files import globs
        cases = {HOSTILE!r}
        print([globs.compile(p).match(path) for p, path, _ in cases])
        print([globs.GlobSet((globs.compile(p),)).match(path) for p, path, _ in cases])
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    expected = str([want for _, _, want in HOSTILE])
    assert done.stdout.splitlines() == [expected, expected]


_PARTS = st.sampled_from(["a", "b", "ab", "*", "**", "?", "[ab]", "[!a]", "x*y", "a*b*a"])
_PATTERNS = st.lists(_PARTS, min_size=1, max_size=5).map("/".join) | st.lists(
    st.sampled_from(["a", "b", "*", "?", "[ab]", "/", "**/"]), min_size=1, max_size=8).map("".join)
_PATHS = st.lists(st.text("ab xy", min_size=1, max_size=6), min_size=1, max_size=6).map("/".join)


def _reference(pattern: str, path: str) -> bool:
    """The .gitignore rules, written as plainly (and as exponentially) as possible: an oracle for short inputs."""
    pat = pattern.strip().lstrip("/")
    parts = pat.rstrip("/").split("/")
    deep = ["**"] if len(parts) == 1 else []
    tokens = deep + [t for n, part in enumerate(parts)
                     for t in ((["*", "**"] if n == len(parts) - 1 else ["**"]) if part == "**" else [part])]
    tokens += ["*", "**"] if pat.endswith("/") else ["**"]

    def walk(ts: list[str], names: list[str]) -> bool:
        if not ts:
            return not names
        if ts[0] == "**":
            return any(walk(ts[1:], names[k:]) for k in range(len(names) + 1))
        return bool(names) and fnmatch.fnmatchcase(names[0], ts[0]) and walk(ts[1:], names[1:])

    return walk(tokens, path.split("/"))


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=_PATTERNS, path=_PATHS)
def test_both_matchers_follow_the_gitignore_rules(pattern: str, path: str) -> None:
    """The one-regex path (when a glob has one) and the walk over names both give the plain reference's
    answer. 400 examples, about a second."""
    try:
        glob = globs.compile(pattern)
    except globs.GlobError:
        return
    walked = glob.match_names(path.split("/"))
    assert walked == _reference(pattern, path)
    assert glob.match(path) == walked
    assert globs.GlobSet((glob, globs.compile("zzz/**"))).match(path) == walked
