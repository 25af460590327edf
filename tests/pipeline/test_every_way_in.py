"""The same hostile tree through every way in: the same verdict and the same findings.

A pull request onto a clean base adds a byte copy into test, a folder link
``test/more -> ../train``, a hidden copy in train and a file whose name holds a
newline, a workflow command and ESC.  `check`, `--changed-since` (full and
with a base report), the pre-commit hook, `export`, the Great Expectations
suite and `pytest --leakcheck` must all fail it, naming the same findings.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_leakcheck import EXIT_LEAKS
from pytest_leakcheck.cli import main
from pytest_leakcheck.testing import photo, save

from ..conftest import write_policy
from ..gitrepo import commit_all, git

_ODD = "test/x\n::error::forged\x1b[2J.jpg"


def _hostile_repo(root: Path) -> tuple[Path, Path]:
    """A clean base on `main` with its full JSON report; branch `pr` adds the hostile files."""
    git_init = root / "repo"
    git_init.mkdir(parents=True)
    git(git_init, "init", "-q", "-b", "main")
    for i in range(4):
        save(photo(i, (96, 72)), git_init / f"train/t{i}.jpg", quality=90)
        save(photo(40 + i, (96, 72)), git_init / f"test/e{i}.jpg", quality=90)
    write_policy(git_init, "version: 1\nsplits: {train: [train/**], test: [test/**]}\naugmentations: [hflip]\n")
    (git_init / ".gitignore").write_text(".leakcheck/\n")
    commit_all(git_init, "clean base")
    base_json = root / "base.json"
    assert main(["check", "--policy", str(git_init / "leakcheck.yaml"), "--format", "json", "-o", str(base_json),
                 "-j", "1"]) == 0
    git(git_init, "checkout", "-q", "-b", "pr")
    shutil.copyfile(git_init / "train/t0.jpg", git_init / "test/copy.jpg")
    os.symlink("../train", git_init / "test/more")
    shutil.copyfile(git_init / "test/e1.jpg", git_init / "train/.hidden.jpg")
    save(photo(77, (96, 72)), git_init / _ODD, quality=90)
    commit_all(git_init, "hostile additions")
    return git_init, base_json


def _ids_of_text(text: str) -> set[str]:
    return set(re.findall(r"\[([0-9a-f]{12})\]", text))


def test_every_way_in_gives_the_same_verdict_and_findings(tmp_path: Path, capsys) -> None:
    repo, base_json = _hostile_repo(tmp_path)
    policy = str(repo / "leakcheck.yaml")
    verdicts: dict[str, int] = {}
    found: dict[str, set[str]] = {}

    def check_json(name: str, *args: str) -> None:
        out = tmp_path / f"{name}.json"
        verdicts[name] = main(["check", "--policy", policy, "--format", "json", "-o", str(out), "-j", "1", *args])
        found[name] = {f["id"] for f in json.loads(out.read_text())["findings"]}

    check_json("check")
    check_json("changed-since", "--changed-since", "main")
    check_json("changed-since+base-report", "--changed-since", "main", "--base-report", str(base_json))

    staged = git(repo, "diff", "--name-only", "-z", "main", "HEAD").split("\0")
    here = Path.cwd()
    os.chdir(repo)
    try:
        capsys.readouterr()
        verdicts["hook"] = main(["hook", "--policy", "leakcheck.yaml", "--max-findings", "0", *filter(None, staged)])
        found["hook"] = _ids_of_text(capsys.readouterr().out)
    finally:
        os.chdir(here)

    from pytest_leakcheck.integrations import export

    table = export.table(policy)
    found["export"] = {i for cell in table.column("findings") for i in cell.split()}
    verdicts["export"] = EXIT_LEAKS if any(s == "error" for s in table.column("severity")) else 0

    plugin_report = tmp_path / "plugin.json"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--leakcheck-only",
                           f"--leakcheck-policy={policy}", "--leakcheck-format", "json",
                           f"--leakcheck-report={plugin_report}", str(repo)],
                          capture_output=True, text=True, cwd=repo,
                          env={**os.environ, "PYTHONPATH": str(here)})
    verdicts["pytest --leakcheck"] = EXIT_LEAKS if proc.returncode == 1 else proc.returncode
    found["pytest --leakcheck"] = {f["id"] for f in json.loads(plugin_report.read_text())["findings"]}

    assert set(verdicts.values()) == {EXIT_LEAKS}, verdicts
    reference = found["check"]
    assert len(reference) >= 4  # the copy, the linked folder's copies, the hidden copy, ...
    assert {name: ids for name, ids in found.items() if ids != reference} == {}


def test_great_expectations_fails_the_same_tree(tmp_path: Path) -> None:
    gx_module = pytest.importorskip("great_expectations")
    from pytest_leakcheck import check
    from pytest_leakcheck.integrations import gx as lgx

    repo, _ = _hostile_repo(tmp_path)
    report = check(repo / "leakcheck.yaml", jobs=1)
    context = gx_module.get_context(mode="ephemeral")
    result = lgx.validate(repo / "leakcheck.yaml", context)
    assert not result.success
    copies = {r.expectation_config.type: r for r in result.results}["expect_no_copies_across_splits"]
    flagged = {row["path"] for row in copies.result["unexpected_list"]}
    crossing = {m.path for f in report.findings if f.is_copy and len(f.splits) > 1 for m in f.members}
    assert flagged == crossing
