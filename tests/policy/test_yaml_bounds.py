"""Issue 10, class 7: hostile YAML (alias bombs, deep nesting, huge documents, odd values) exits 2, fast.

The bombs run in a child process under a memory limit and a generous timeout: without the
bounds, the billion laughs ran for over 60 s and took 4.8 GB.  The tests assert the outcome
(exit 2 naming the file, no traceback), never a duration.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_leakcheck.errors import EXIT_USAGE, PolicyError
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.testing import photo, save

HEAD = "version: 1\nsplits: {train: [train/**], test: [test/**]}\n"


def _laughs(levels: int = 12, width: int = 10) -> str:
    lines = ['a0: &a0 ["lol"]']
    for n in range(1, levels):
        lines.append(f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * width) + "]")
    return "\n".join(lines) + f"\nignore: *a{levels - 1}\n"


def _merge_bomb(levels: int = 25) -> str:
    lines = ["m0: &m0 {k0: 1, k1: 2}"]
    for n in range(1, levels):
        lines.append(f"m{n}: &m{n} {{<<: [*m{n - 1}, *m{n - 1}], x{n}: [*m{n - 1}, *m{n - 1}]}}")
    return "\n".join(lines) + "\n"


#: name -> (policy text, what the refusal says)
HOSTILE = {
    "billion_laughs": (_laughs() + HEAD, "aliases are expanded"),
    "merge_key_bomb": (_merge_bomb() + HEAD, "aliases are expanded"),
    "wide_alias_fanout": ("a: &a [" + ", ".join(["x"] * 500) + "]\nb: [" + ", ".join(["*a"] * 900) + "]\n" + HEAD,
                          "aliases are expanded"),
    "recursive_alias": ("loop: &loop [*loop]\n" + HEAD, "refers to a node that contains it"),
    "deep_flow_lists": (HEAD + "detectors: " + "[" * 3000 + "]" * 3000 + "\n", "nested more than 64 levels"),
    "deep_flow_mappings": (HEAD + "detectors: " + "{a: " * 3000 + "1" + "}" * 3000 + "\n",
                           "nested more than 64 levels"),
    "huge_document": (HEAD + "ignore:\n" + "".join(f"  - docs/{n:07d}/**\n" for n in range(120_000)),
                      "longer than the limit"),
    "long_integer": (HEAD + "files: {max_pixels: " + "9" * 5000 + "}\n", "invalid YAML value"),
    "impossible_date": (HEAD + "files: {max_pixels: 2020-13-45}\n", "invalid YAML value"),
}


def _limit_memory() -> None:
    # A guard, not a measurement: a run past 2 GB of address space dies instead of taking the machine.
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def _run_check(policy: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "pytest_leakcheck", "check", "--policy", str(policy), "--no-cache"],
                          capture_output=True, text=True, timeout=120, env=env, preexec_fn=_limit_memory,
                          check=False)


def _dataset(root: Path) -> None:
    save(photo(1), root / "train/a.jpg")
    save(photo(2), root / "test/b.jpg")


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_yaml_policy_exits_2(tmp_path: Path, case: str) -> None:
    """Each hostile policy document is a policy error naming the file; never a crash, a hang or a pass."""
    _dataset(tmp_path)
    policy = tmp_path / "leakcheck.yaml"
    text, problem = HOSTILE[case]
    policy.write_text(text)
    done = _run_check(policy)
    assert done.returncode == EXIT_USAGE, done.stderr[-2000:]
    assert str(policy) in done.stderr and problem in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr) < 1000


@pytest.mark.slow
def test_hostile_yaml_baseline_exits_2(tmp_path: Path) -> None:
    """The baseline is YAML a pull request controls too: the same bomb in it is a baseline error."""
    _dataset(tmp_path)
    (tmp_path / "leakcheck.yaml").write_text(HEAD)
    (tmp_path / ".leakcheck-baseline.yaml").write_text(_laughs(levels=14) + "version: 2\nfindings: {}\n")
    done = _run_check(tmp_path / "leakcheck.yaml")
    assert done.returncode == EXIT_USAGE, done.stderr[-2000:]
    assert ".leakcheck-baseline.yaml" in done.stderr and "aliases are expanded" in done.stderr


@pytest.mark.parametrize(("text", "problem"), [
    ("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 10) + "]\n" for n in range(1, 9)), "aliases are expanded"),
    ("k: " + "[" * 100 + "]" * 100 + "\n", "nested more than 64 levels"),
    ("a: &a [*a]\n", "refers to a node that contains it"),
    ("x: &x 1\n" + "".join(f"y{n}: *x\n" for n in range(1100)), "more than 1000 aliases"),
])
def test_the_loader_names_the_bound_it_stopped_at(tmp_path: Path, text: str, problem: str) -> None:
    """In-process, the refusal says which bound, with the line it stopped at."""
    (tmp_path / "leakcheck.yaml").write_text(text)
    with pytest.raises(PolicyError) as caught:
        load(tmp_path / "leakcheck.yaml")
    assert problem in caught.value.problem
    assert caught.value.line is not None


def test_ordinary_anchors_still_work(tmp_path: Path) -> None:
    """The bounds leave room for what people write: anchors shared between splits' globs."""
    (tmp_path / "train").mkdir()
    (tmp_path / "leakcheck.yaml").write_text(
        "version: 1\nsplits:\n  train: &globs [train/**, extra/**]\n  test: [test/**]\nignore: *globs\n")
    policy = load(tmp_path / "leakcheck.yaml")
    assert policy.ignore == ("train/**", "extra/**")


@pytest.mark.parametrize(("value", "ok"), [
    ("64.0", True), ("256", True), ("64.5", False), ("true", False), (".nan", False), (".inf", False),
    ("[64]", False), ("{a: 1}", False), ("1" + "0" * 40, False), ("-64", False),
])
def test_hash_bits_take_whole_numbers_only(tmp_path: Path, value: str, ok: bool) -> None:
    """`bits: 64.0` is 64; anything else that is not 64 or 256 is a policy error, never a traceback."""
    (tmp_path / "train").mkdir()
    (tmp_path / "leakcheck.yaml").write_text(HEAD + f"detectors: {{phash: {{bits: {value}}}}}\n")
    if ok:
        settings = load(tmp_path / "leakcheck.yaml").detectors.phash
        assert settings.bits == int(float(value)) and type(settings.bits) is int
        return
    with pytest.raises(PolicyError) as caught:
        load(tmp_path / "leakcheck.yaml")
    assert caught.value.key == "detectors.phash.bits"
