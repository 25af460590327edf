"""The core never imports Great Expectations (nor pyarrow): they cost seconds and are optional.

Each way in runs in a fresh interpreter with ``-X importtime``, whose log
names every module imported, so a lazy import deep inside a check shows too.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_leakcheck.testing import photo, save

OPTIONAL = ("great_expectations", "pyarrow")


def _imported(log: str) -> set[str]:
    """Top-level package names in an ``-X importtime`` log."""
    names = set()
    for line in log.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return names


def _dataset(root: Path) -> Path:
    for i in range(4):
        save(photo(i, (64, 48)), root / f"train/img_{i}.jpg", quality=90)
    save(photo(100, (64, 48)), root / "test/own.jpg", quality=90)
    shutil.copyfile(root / "train/img_0.jpg", root / "test/copy.jpg")
    (root / "leakcheck.yaml").write_text("version: 1\nsplits:\n  train: [train/**]\n  test: [test/**]\n")
    return root / "leakcheck.yaml"


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-X", "importtime", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow
def test_import_leaves_them_out(tmp_path: Path) -> None:
    proc = _run("-c", "import pytest_leakcheck, pytest_leakcheck.cli, pytest_leakcheck.plugin, "
                      "pytest_leakcheck.integrations.export", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    imported = _imported(proc.stderr)
    assert "pytest_leakcheck" in imported  # the log really lists our imports
    assert not set(OPTIONAL) & imported


@pytest.mark.slow
@pytest.mark.parametrize("command", [["check"], ["export", "--format", "csv"]])
def test_cli_leaves_them_out(tmp_path: Path, command: list[str]) -> None:
    policy = _dataset(tmp_path)
    proc = _run("-m", "pytest_leakcheck", *command, "--policy", str(policy), cwd=tmp_path)
    assert proc.returncode == (1 if command == ["check"] else 0), proc.stderr[-2000:]
    imported = _imported(proc.stderr)
    assert "numpy" in imported  # a check ran
    assert not set(OPTIONAL) & imported


@pytest.mark.slow
def test_pytest_leakcheck_leaves_them_out(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    _dataset(pytester.path)
    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")  # -X importtime for the pytest subprocess
    # -s: the check runs (and imports numpy) while pytest captures fd 2; the import log must reach stderr.
    result = pytester.runpytest_subprocess("--leakcheck", "-p", "no:cacheprovider", "-s")
    result.assert_outcomes(passed=2, failed=1)  # the copy in test fails train~test
    imported = _imported("\n".join(result.errlines))
    assert "numpy" in imported
    assert not set(OPTIONAL) & imported
