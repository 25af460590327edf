"""The pre-commit hook: staged paths to focus, ``leakcheck hook``, and the real pre-commit tool."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from pytest_leakcheck import EXIT_CLEAN, EXIT_LEAKS, check
from pytest_leakcheck.cli import main
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.ci.hook import classify, focus_paths
from pytest_leakcheck.testing import photo, save

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs/pytest-and-pre-commit.md"
POLICY = "version: 1\nsplits:\n  train: [train/**]\n  test: [test/**]\n"
SIZE = (64, 48)


def make_dataset(root: Path) -> Path:
    """6 train and 2 test images under ``root``, with the policy; returns the policy path."""
    for i in range(6):
        save(photo(i, SIZE), root / f"train/img_{i}.jpg", quality=90)
    for i in range(2):
        save(photo(100 + i, SIZE), root / f"test/own_{i}.jpg", quality=90)
    path = root / "leakcheck.yaml"
    path.write_text(POLICY)
    return path


def test_focus_paths_are_relative_to_the_policy_root(tmp_path: Path) -> None:
    """Repo-relative staged paths map to root-relative ones; files outside the root or not images drop out."""
    policy = load(make_dataset(tmp_path / "data"))
    staged = ["data/test/new.jpg", "data/train/x.PNG", "other/y.jpg", "data/notes.txt", "../z.jpg",
              str(tmp_path / "data/test/abs.jpg"), "data/test/new.jpg"]
    assert focus_paths(policy, staged, cwd=tmp_path) == ["test/new.jpg", "train/x.PNG", "test/abs.jpg"]


def test_hook_rejects_a_leak_and_hashes_only_the_staged_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A re-saved train image staged into test fails; every other file comes from the store."""
    policy = make_dataset(tmp_path / "data")
    check(policy)  # fills the store, as an earlier commit or check would
    save(photo(3, SIZE), tmp_path / "data/test/resaved.jpg", quality=70)
    monkeypatch.chdir(tmp_path)
    from pytest_leakcheck.pipeline import run as pipeline_run

    seen = []
    real = pipeline_run.check

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(real(*args, **kwargs))
        return seen[-1]

    monkeypatch.setattr(pipeline_run, "check", spy)
    assert main(["hook", "--policy", "data/leakcheck.yaml", "data/test/resaved.jpg"]) == EXIT_LEAKS
    out = capsys.readouterr().out
    assert re.search(r"ERROR [a-z-]+  train~test", out)
    assert "train/img_3.jpg" in out and "test/resaved.jpg" in out
    # The summary's details moved under --verbose; the report itself says what was decoded.
    assert (seen[0].stats["files"], seen[0].stats["decoded"], seen[0].stats["reused"]) == (9, 1, 8)


def test_hook_passes_distinct_and_unrelated_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A new distinct image passes silently; files outside the dataset are not even looked at;
    an image in no split only warns."""
    make_dataset(tmp_path / "data")
    save(photo(500, SIZE), tmp_path / "data/test/new.jpg", quality=90)
    monkeypatch.chdir(tmp_path)
    assert main(["hook", "--policy", "data/leakcheck.yaml", "README.md", "docs/logo.png"]) == EXIT_CLEAN
    assert not (tmp_path / "data/.leakcheck").exists()
    assert main(["hook", "--policy", "data/leakcheck.yaml", "data/test/new.jpg"]) == EXIT_CLEAN
    assert (tmp_path / "data/.leakcheck/cache.sqlite").exists()
    assert capsys.readouterr().out == ""
    # An image in no split is a warning: reported, but the commit goes through.
    save(photo(501, SIZE), tmp_path / "data/stray/x.jpg", quality=90)
    assert main(["hook", "--policy", "data/leakcheck.yaml", "data/stray/x.jpg"]) == EXIT_CLEAN
    assert "WARNING unassigned-file" in capsys.readouterr().out


def test_hook_policy_error_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A broken policy is a usage error with the policy's message, as in `leakcheck check`."""
    (tmp_path / "leakcheck.yaml").write_text("version: 1\n")
    assert main(["hook", "--policy", str(tmp_path / "leakcheck.yaml"), "x.jpg"]) == 2
    assert "`splits`: no splits defined" in capsys.readouterr().err


# --------------------------------------------------------------------------
# A staged file the policy reads runs the whole check (hardening, class 11).

MANIFEST_POLICY = (
    "version: 1\nsplits:\n  manifest: splits.csv\nungrouped: own-group\n"
    "groups:\n  - csv: groups.csv\n  - coco: coco.json\n    field: video\n"
)


def make_manifest_dataset(root: Path) -> Path:
    """The hook dataset split by a manifest, with group CSV and COCO sources, and
    extra/copy.jpg, a byte copy of train/img_0.jpg, listed in train (a within-train warning)."""
    make_dataset(root)
    (root / "extra").mkdir()
    shutil.copyfile(root / "train/img_0.jpg", root / "extra/copy.jpg")
    write_manifest(root)
    (root / "groups.csv").write_text("path,group\n")
    (root / "coco.json").write_text('{"images": []}')
    path = root / "leakcheck.yaml"
    path.write_text(MANIFEST_POLICY)
    return path


def write_manifest(root: Path, copy_split: str = "train") -> None:
    rows = [f"train/img_{i}.jpg,train" for i in range(6)] + [f"test/own_{i}.jpg,test" for i in range(2)]
    (root / "splits.csv").write_text("\n".join(["path,split", *rows, f"extra/copy.jpg,{copy_split}"]) + "\n")


def _edit_manifest(root: Path) -> None:
    write_manifest(root, "test")  # the copy moves to test; no image changes


def _edit_policy(root: Path) -> None:
    (root / "leakcheck.yaml").write_text(MANIFEST_POLICY + "pairs:\n  within_split: error\n")


def _edit_group_csv(root: Path) -> None:
    (root / "groups.csv").write_text("path,group\ntrain/img_1.jpg,car7\ntest/own_0.jpg,car7\n")


def _edit_coco(root: Path) -> None:
    (root / "coco.json").write_text(
        '{"images": [{"file_name": "img_2.jpg", "video": 3}, {"file_name": "own_1.jpg", "video": 3}]}')


def _edit_baseline(root: Path) -> None:
    path = root / ".leakcheck-baseline.yaml"
    data = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump({**data, "findings": {}}))  # drops every entry


EDITS = {
    "splits.csv": _edit_manifest,
    "leakcheck.yaml": _edit_policy,
    "groups.csv": _edit_group_csv,
    "coco.json": _edit_coco,
    ".leakcheck-baseline.yaml": _edit_baseline,
}


@pytest.mark.slow
@pytest.mark.parametrize("staged", list(EDITS))
def test_hook_on_a_policy_input_exits_as_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], staged: str
) -> None:
    """Editing only the manifest, the policy, a group CSV or COCO file, or the baseline, and
    passing that one file to the hook, gives the exit code of `leakcheck check`: 1."""
    policy = make_manifest_dataset(tmp_path / "data")
    if staged == ".leakcheck-baseline.yaml":
        _edit_manifest(tmp_path / "data")
        assert main(["baseline", "--policy", str(policy)]) == EXIT_CLEAN  # the leak is accepted...
    assert main(["check", "--policy", str(policy)]) == EXIT_CLEAN  # ...and the store is warm
    EDITS[staged](tmp_path / "data")
    capsys.readouterr()
    monkeypatch.chdir(tmp_path)
    assert main(["hook", "--policy", "data/leakcheck.yaml", f"data/{staged}", "README.md"]) == EXIT_LEAKS
    hooked = capsys.readouterr()
    assert "checking the whole dataset" in hooked.err
    assert main(["check", "--policy", str(policy)]) == EXIT_LEAKS
    errors = [line for line in capsys.readouterr().out.splitlines() if line.startswith("ERROR")]
    assert errors and all(line in hooked.out for line in errors)


def test_classify_sorts_images_and_policy_inputs(tmp_path: Path) -> None:
    """Images under the root are the focus; the policy's own files (by any path that resolves
    to them) are inputs; everything else is neither, and opens no store."""
    policy = load(make_manifest_dataset(tmp_path / "data"))
    staged = classify(policy, ["data/test/new.jpg", "data/./splits.csv", "README.md", "data/notes.txt",
                               str(tmp_path / "data/groups.csv"), "data/coco.json", "data/leakcheck.yaml",
                               "data/.leakcheck-baseline.yaml"], cwd=tmp_path)
    assert staged.focus == ("test/new.jpg",)
    assert staged.inputs == ("data/./splits.csv", str(tmp_path / "data/groups.csv"), "data/coco.json",
                             "data/leakcheck.yaml", "data/.leakcheck-baseline.yaml")
    assert classify(policy, ["README.md", "docs/logo.png"], cwd=tmp_path).nothing


# --------------------------------------------------------------------------
# The real pre-commit tool, in a temporary git repository.

# The files pip needs to install this project, and the hook definition.
SOURCES = ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "pytest_leakcheck")


def _git_env(home: Path) -> dict[str, str]:
    gitconfig = home / "gitconfig"
    gitconfig.write_text("")
    return {
        **os.environ,
        "PRE_COMMIT_HOME": str(home / "pre-commit"),
        "GIT_CONFIG_GLOBAL": str(gitconfig),  # no user hooks, signing or templates
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
    }


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def _config_snippet(path: Path) -> str | None:
    block = re.search(r"```yaml\n(# \.pre-commit-config\.yaml\n.*?)```", path.read_text(), re.S)
    return block.group(1) if block else None


def _doc_config(repo: Path, rev: str) -> str:
    """The `.pre-commit-config.yaml` snippet from the docs, pointed at a local copy of this repo."""
    snippet = _config_snippet(DOC)
    assert snippet, f"no .pre-commit-config.yaml snippet in {DOC}"
    text = re.sub(r"repo: \S+", f"repo: {repo}", snippet)
    return re.sub(r"rev: \S+", f"rev: {rev}", text)


def test_readme_snippet_is_the_tested_one() -> None:
    """The README's .pre-commit-config.yaml snippet is the docs' one, which the commit tests run."""
    readme = _config_snippet(REPO / "README.md")
    if readme is None:
        pytest.skip("README.md has no .pre-commit-config.yaml snippet yet")
    assert readme == _config_snippet(DOC)


@pytest.fixture(scope="module")
def hook_source(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict[str, str]]:
    """A git repository holding this checkout's hook (path, commit) and the environment that
    every dataset repository of the module shares, so pre-commit builds the hook once."""
    pytest.importorskip("pre_commit", reason="pre-commit is not installed (pip install -e '.[test]')")
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    home = tmp_path_factory.mktemp("pre-commit-home")
    env = _git_env(home)

    # pre-commit installs a hook repository at a commit; this checkout may have
    # uncommitted changes, so commit a copy of its current files.
    src = tmp_path_factory.mktemp("hook-repo")
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(REPO / name, src / name)
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "hook"]):
        _run(["git", *cmd], src, env).check_returncode()
    rev = _run(["git", "rev-parse", "HEAD"], src, env).stdout.strip()
    return src, rev, env


def _dataset_repo(factory: pytest.TempPathFactory, hook: tuple[Path, str, dict[str, str]],
                  make: Callable[[Path], Path]) -> Path:
    """A git repository with a dataset in data/, the documented hook installed, and a first
    commit made through it."""
    src, rev, env = hook
    work = factory.mktemp("dataset-repo")
    make(work / "data")
    (work / ".gitignore").write_text(".leakcheck/\n")
    (work / ".pre-commit-config.yaml").write_text(_doc_config(src, rev))
    _run(["git", "init", "-q"], work, env).check_returncode()
    _run([sys.executable, "-m", "pre_commit", "install"], work, env).check_returncode()
    _run(["git", "add", "-A"], work, env).check_returncode()
    first = _run(["git", "commit", "-m", "dataset"], work, env)
    if first.returncode != 0:
        pytest.fail(f"the first commit, through the hook, failed:\n{first.stdout}\n{first.stderr}")
    return work


@pytest.fixture(scope="module")
def commit_repo(tmp_path_factory: pytest.TempPathFactory,
                hook_source: tuple[Path, str, dict[str, str]]) -> tuple[Path, dict[str, str]]:
    """The glob-split dataset in a repository that commits through the hook."""
    return _dataset_repo(tmp_path_factory, hook_source, make_dataset), hook_source[2]


@pytest.fixture(scope="module")
def manifest_repo(tmp_path_factory: pytest.TempPathFactory,
                  hook_source: tuple[Path, str, dict[str, str]]) -> tuple[Path, dict[str, str]]:
    """The manifest-split dataset (a byte copy listed in train) in a repository that commits
    through the hook."""
    return _dataset_repo(tmp_path_factory, hook_source, make_manifest_dataset), hook_source[2]


def _commits(work: Path, env: dict[str, str]) -> int:
    return int(_run(["git", "rev-list", "--count", "HEAD"], work, env).stdout)


@pytest.mark.slow
def test_commit_copying_a_train_image_into_test_is_rejected(commit_repo: tuple[Path, dict[str, str]]) -> None:
    """`git commit` of a train image copied into test fails with the finding."""
    work, env = commit_repo
    before = _commits(work, env)
    shutil.copyfile(work / "data/train/img_0.jpg", work / "data/test/leak.jpg")
    _run(["git", "add", "data/test/leak.jpg"], work, env).check_returncode()
    result = _run(["git", "commit", "-m", "leak"], work, env)
    _run(["git", "rm", "-q", "--cached", "data/test/leak.jpg"], work, env)
    (work / "data/test/leak.jpg").unlink()
    output = result.stdout + result.stderr  # git shows hook output on stderr
    assert result.returncode != 0
    assert "ERROR identical-file  train~test" in output
    assert "test/leak.jpg" in output
    assert _commits(work, env) == before


@pytest.mark.slow
def test_commit_adding_a_distinct_image_passes(commit_repo: tuple[Path, dict[str, str]]) -> None:
    """`git commit` of a new, distinct test image goes through."""
    work, env = commit_repo
    before = _commits(work, env)
    save(photo(777, SIZE), work / "data/test/new.jpg", quality=90)
    _run(["git", "add", "data/test/new.jpg"], work, env).check_returncode()
    result = _run(["git", "commit", "-m", "new test image"], work, env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"leakcheck.*Passed", result.stdout + result.stderr)
    assert _commits(work, env) == before + 1


@pytest.mark.slow
def test_commit_moving_a_copy_to_test_in_the_manifest_is_rejected(
    manifest_repo: tuple[Path, dict[str, str]]
) -> None:
    """`git commit` of a manifest edit alone, moving a byte copy of a train image into test,
    fails with the finding: no image is staged, and the hook still sees the move."""
    work, env = manifest_repo
    before = _commits(work, env)
    write_manifest(work / "data", "test")
    _run(["git", "add", "data/splits.csv"], work, env).check_returncode()
    result = _run(["git", "commit", "-m", "move a copy to test"], work, env)
    _run(["git", "reset", "-q", "--", "data/splits.csv"], work, env)
    write_manifest(work / "data", "train")
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "ERROR identical-file  train~test" in output
    assert "extra/copy.jpg" in output
    assert _commits(work, env) == before


@pytest.mark.slow
def test_commit_of_a_symlinked_copy_into_test_is_rejected(commit_repo: tuple[Path, dict[str, str]]) -> None:
    """A staged symlink test/link.jpg -> ../train/img_0.jpg is a copy for `check`, so the hook
    must be passed symlinks too (`types: [image]` never passed it)."""
    work, env = commit_repo
    before = _commits(work, env)
    link = work / "data/test/link.jpg"
    link.symlink_to("../train/img_0.jpg")
    _run(["git", "add", "data/test/link.jpg"], work, env).check_returncode()
    result = _run(["git", "commit", "-m", "link"], work, env)
    _run(["git", "rm", "-q", "--cached", "data/test/link.jpg"], work, env)
    link.unlink()
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "ERROR identical-file  train~test" in output and "test/link.jpg" in output
    assert _commits(work, env) == before
