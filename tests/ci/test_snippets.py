"""The README's snippets work when pasted into a fresh repository (issue 27).

- The Action snippet is a whole workflow file that the GitHub workflow schema
  (SchemaStore's, in tests/data) accepts, and it names the release tag.
- The pre-commit snippet names the same tag, and pre-commit installs and runs
  the hook from a repository at that tag: `pre-commit try-repo --ref TAG`, and
  the snippet itself pasted as `.pre-commit-config.yaml` (only `repo:` pointed
  at a local clone; `rev:` as written).  The tag is made in a temporary copy;
  the real one is made at release time.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

import pytest_leakcheck
from pytest_leakcheck.testing import photo, save

from .test_precommit import SOURCES, _git_env, _run

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
TAG = f"v{pytest_leakcheck.__version__}"


def _block(path: Path, first_line: str) -> str:
    """The fenced YAML block of ``path`` that starts with ``first_line``."""
    found = re.search(r"```yaml\n(" + re.escape(first_line) + r"\n.*?)```", path.read_text(), re.S)
    assert found, f"no ```yaml block starting with {first_line!r} in {path}"
    return found.group(1)


def _workflow() -> dict:
    workflow = yaml.safe_load(_block(REPO / "README.md", "# .github/workflows/leakcheck.yml"))
    workflow["on"] = workflow.pop(True)  # YAML 1.1 reads the key `on` as a boolean; GitHub does not
    return workflow


def test_action_snippet_is_a_whole_valid_workflow_naming_the_tag() -> None:
    workflow = _workflow()
    jsonschema.validate(workflow, json.loads((DATA / "github-workflow.schema.json").read_text()))
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
    ours = [s for s in steps if s.get("uses", "").startswith("pytest-leakcheck/pytest-leakcheck@")]
    assert [s["uses"] for s in ours] == [f"pytest-leakcheck/pytest-leakcheck@{TAG}"]
    checkout = steps[0]
    assert checkout["uses"].startswith("actions/checkout@") and checkout["with"]["fetch-depth"] == 0
    # The docs show the same file.
    assert _block(REPO / "docs/github-action.md", "# .github/workflows/leakcheck.yml") == \
        _block(REPO / "README.md", "# .github/workflows/leakcheck.yml")


def test_a_bare_list_of_steps_is_not_a_workflow() -> None:
    """The schema test can fail: the old snippet (steps only) is rejected."""
    steps = _workflow()["jobs"]["leakcheck"]["steps"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(steps, json.loads((DATA / "github-workflow.schema.json").read_text()))


def test_snippets_pin_the_version_the_changelog_names() -> None:
    config = yaml.safe_load(_block(REPO / "README.md", "# .pre-commit-config.yaml"))
    assert config["repos"][0]["rev"] == TAG
    assert re.search(rf"^## {re.escape(pytest_leakcheck.__version__)}\b", (REPO / "CHANGELOG.md").read_text(), re.M)
    assert (REPO / "LICENSE").read_text().startswith("MIT License")


@pytest.fixture(scope="module")
def tagged_source(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A git repository holding this checkout's hook, tagged as the README's snippets pin it."""
    pytest.importorskip("pre_commit", reason="pre-commit is not installed (pip install -e '.[test]')")
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    env = _git_env(tmp_path_factory.mktemp("home"))
    src = tmp_path_factory.mktemp("tagged")
    for name in (*SOURCES, "LICENSE"):
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(REPO / name, src / name)
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "release"], ["tag", TAG]):
        _run(["git", *cmd], src, env).check_returncode()
    return src, env


def _dataset(root: Path, env: dict[str, str], leak: bool) -> None:
    """A fresh repository with data/ (train, test) and its policy, committed."""
    for i in range(4):
        save(photo(i, (64, 48)), root / f"data/train/img_{i}.jpg", quality=90)
    save(photo(100, (64, 48)), root / "data/test/own.jpg", quality=90)
    if leak:
        shutil.copyfile(root / "data/train/img_2.jpg", root / "data/test/copy.jpg")
    (root / "data/leakcheck.yaml").write_text("version: 1\nsplits:\n  train: [train/**]\n  test: [test/**]\n")
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "data"]):
        _run(["git", *cmd], root, env).check_returncode()


def test_pasted_pre_commit_snippet_installs_the_tag_and_fails_on_a_leak(
        tagged_source: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    src, env = tagged_source
    _dataset(tmp_path, env, leak=True)
    snippet = _block(REPO / "README.md", "# .pre-commit-config.yaml")
    (tmp_path / ".pre-commit-config.yaml").write_text(re.sub(r"repo: \S+", f"repo: {src}", snippet))
    run = _run([sys.executable, "-m", "pre_commit", "run", "--all-files"], tmp_path, env)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "did not match" not in run.stdout + run.stderr
    assert "test/copy.jpg" in run.stdout and "identical-file" in run.stdout


def test_pre_commit_try_repo_at_the_tag_passes_a_clean_dataset(
        tagged_source: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    src, env = tagged_source
    _dataset(tmp_path, env, leak=False)
    shutil.move(tmp_path / "data/leakcheck.yaml", tmp_path / "leakcheck.yaml")  # try-repo passes no args
    (tmp_path / "leakcheck.yaml").write_text("version: 1\nsplits:\n  train: [data/train/**]\n  test: [data/test/**]\n")
    _run(["git", "add", "-A"], tmp_path, env).check_returncode()
    run = _run([sys.executable, "-m", "pre_commit", "try-repo", str(src), "leakcheck", "--ref", TAG, "--all-files"],
               tmp_path, env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(r"leakcheck \(train/test leakage\)\.+Passed", run.stdout), run.stdout


def test_json_report_doc_lists_every_finding_kind_and_explains_the_calibration_line() -> None:
    from pytest_leakcheck.report.model import KINDS

    doc = (REPO / "docs/json-report.md").read_text()
    table = doc[doc.index("### Finding kinds"):doc.index("### The summary line")]
    assert [k for k in KINDS if f"| `{k}` |" not in table] == []
    assert "false alarms per 10k measured" in doc and "calibrated_on" in doc
