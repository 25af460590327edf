"""`python -m build` makes a wheel and an sdist that install in a fresh venv and work (issue 15).

Slow-ish (about 15 s: one build, one venv); it runs in every CI run.  The
build is `--no-isolation` (setuptools and wheel from this environment, from
the `test` extra) so it needs no network.  The fresh venv gets the
dependencies through a .pth file naming the folder numpy is installed in,
but pytest-leakcheck only from the wheel: the venv's own site-packages come
first on sys.path.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import pytest_leakcheck

REPO = Path(__file__).resolve().parents[2]

pytest.importorskip("build")


def _run(*cmd: object, cwd: Path | None = None) -> subprocess.CompletedProcess:
    # Without the caller's PYTHONPATH: a checkout on it (`PYTHONPATH=. pytest`) would be what a fresh
    # venv imports, and the wheel would never be tested.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, env=env)


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (REPO / ".git").exists():
        pytest.skip("builds from a git checkout only (an unpacked sdist has no .git to list files)")
    out = tmp_path_factory.mktemp("dist")
    built = _run(sys.executable, "-m", "build", "--no-isolation", "--outdir", out, REPO)
    assert built.returncode == 0, built.stdout + built.stderr
    return out


def test_setuptools_reads_the_license_without_a_deprecation_warning(tmp_path: Path) -> None:
    """`license = "MIT"` + `license-files` (setuptools >= 77): no "license as a TOML table" warning."""
    code = ("import warnings; warnings.simplefilter('error'); from setuptools import build_meta as b; "
            f"b.prepare_metadata_for_build_wheel({str(tmp_path)!r})")
    out = _run(sys.executable, "-W", "error", "-c", code, cwd=REPO)
    assert out.returncode == 0, out.stderr[-3000:]
    (meta,) = tmp_path.glob("*.dist-info/METADATA")
    assert "License-Expression: MIT" in meta.read_text()


def _tracked(*folders: str) -> set[str]:
    files = _run("git", "ls-files", "-z", "--", *folders, cwd=REPO).stdout.split("\0")
    return {f for f in files if f}


@pytest.mark.slow
def test_sdist_carries_what_the_tests_need(dist: Path) -> None:
    version = pytest_leakcheck.__version__
    (sdist,) = dist.glob("*.tar.gz")
    # PEP 625 (setuptools >= 69.3) normalises the name; older setuptools keeps the dash.
    assert sdist.name in (f"pytest_leakcheck-{version}.tar.gz", f"pytest-leakcheck-{version}.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    needed = _tracked("pytest_leakcheck", "tests", "examples", "docs", "benchmarks") | {
        "README.md", "CHANGELOG.md", "LICENSE", "action.yml", ".pre-commit-hooks.yaml", "pyproject.toml"}
    assert needed - names == set()


@pytest.mark.slow
def test_wheel_installs_in_a_fresh_venv_and_checks_the_example(dist: Path, tmp_path: Path) -> None:
    version = pytest_leakcheck.__version__
    (wheel,) = dist.glob("*.whl")
    assert wheel.name == f"pytest_leakcheck-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as zf:
        assert not [n for n in zf.namelist() if n.startswith("tests/")]
        # The license as an SPDX expression (PEP 639), and its text shipped with the wheel.
        meta = zf.read(f"pytest_leakcheck-{version}.dist-info/METADATA").decode()
        assert "License-Expression: MIT" in meta and "License-File: LICENSE" in meta
        assert zf.read(f"pytest_leakcheck-{version}.dist-info/licenses/LICENSE").startswith(b"MIT License")
    venv = tmp_path / "venv"
    assert _run(sys.executable, "-m", "venv", "--without-pip", venv).returncode == 0
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))").stdout.strip())
    import numpy

    (site / "zz_deps.pth").write_text(str(Path(numpy.__file__).resolve().parents[1]) + "\n")
    installed = _run(sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", "--no-index",
                     wheel)
    assert installed.returncode == 0, installed.stderr
    where = _run(python, "-c", "import pytest_leakcheck as p; print(p.__file__)", cwd=tmp_path)
    assert str(venv) in where.stdout, where.stdout + where.stderr
    leakcheck = venv / "bin" / "leakcheck"
    assert _run(leakcheck, "--version").stdout.strip() == f"leakcheck {version}"
    # The example check, from the unpacked sdist: its examples/ are the ones checked.
    with tarfile.open(next(dist.glob("*.tar.gz"))) as tar:
        tar.extractall(tmp_path / "src")
    (src,) = (tmp_path / "src").iterdir()
    out = _run(leakcheck, "check", "--policy", src / "examples/leakcheck.yaml", "-j", "1", "--no-cache")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "leakcheck: 5 errors, 1 warning" in out.stdout
    # And a test file of the sdist passes against the installed wheel: -P and append mode keep the
    # sdist's own pytest_leakcheck/ folder from shadowing it.
    tests = _run(python, "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--import-mode=append",
                 "tests/cli/test_help.py", cwd=src)
    assert tests.returncode == 0, tests.stdout[-3000:]
