"""The core install stays lean: optional engines are imported only when a policy or option asks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import pytest_leakcheck
from pytest_leakcheck.report.model import Finding, Member, Pair, Report, report_dict

HEAVY = ("dask", "distributed", "fsspec", "s3fs", "botocore", "aiobotocore", "faiss")


@pytest.mark.slow
def test_import_default_check_and_cli_leave_optional_engines_unimported(clean_dataset: Path, tmp_path: Path) -> None:
    policy = clean_dataset / "leakcheck.yaml"
    script = textwrap.dedent(f"""
        import sys
        import pytest_leakcheck
        from pytest_leakcheck.cli import main
        pytest_leakcheck.check({str(policy)!r})
        code = main(["check", "--policy", {str(policy)!r}, "--format", "json", "-o", {str(tmp_path / "r.json")!r}])
        assert code == 0, code
        print(sorted({{m.split(".")[0] for m in sys.modules}} & set({HEAVY!r})))
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.slow
def test_exact_retrieval_and_the_hash_index_leave_faiss_unimported() -> None:
    """faiss is loaded by the faiss backend only: the exact backend and the multi-index never touch it."""
    script = textwrap.dedent("""
        import sys
        import numpy as np
        from pytest_leakcheck.search import kernels, retrieval
        x = np.random.default_rng(0).standard_normal((300, 64)).astype(np.float32)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        retrieval.within(retrieval.Sides(x, x), 0.9, same=True)
        retrieval.topk(x, x, 3)
        h = np.random.default_rng(1).integers(0, 2**63, (9000, 1), dtype=np.int64).view(np.uint64)
        kernels.hamming_pairs(h[:, None, :], h, 8, same=True)
        print("faiss" in sys.modules)
        retrieval.topk(x, x, 3, backend="faiss")
        print("faiss" in sys.modules)
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["False", "True"]


# --------------------------------------------------------------------------
# Where nothing is decoded, nothing that decodes is imported


DECODERS = ("numpy", "PIL", "imagehash", "scipy")


def _imported(args: list[str], cwd: Path) -> set[str]:
    """Top-level packages a fresh interpreter imported running ``python -X importtime ARGS``."""
    # The package under test, wherever it is imported from (a work tree on PYTHONPATH or the install).
    env = {**os.environ, "PYTHONPATH": str(Path(pytest_leakcheck.__file__).parent.parent)}
    run = subprocess.run([sys.executable, "-X", "importtime", *args], capture_output=True, text=True, cwd=cwd,
                         env=env, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    # importtime writes `import time: self | cumulative | package.module` for each import, to stderr.
    names = [line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines() if line.startswith("import time:")]
    assert "pytest_leakcheck" in names  # the measurement saw our imports at all
    return {name.split(".")[0] for name in names}


@pytest.fixture
def lean_case(tmp_path: Path) -> Path:
    """A policy (every detector on, groups and a manifest) and a saved report of it, no images."""
    (tmp_path / "splits.csv").write_text("path,split\ntrain/a.jpg,train\ntest/b.jpg,test\n")
    (tmp_path / "leakcheck.yaml").write_text(textwrap.dedent("""\
        version: 1
        splits: {manifest: splits.csv}
        groups: [{regex: '(?P<group>[a-z])\\.jpg$'}]
        augmentations: [hflip, rot90]
        detectors: {dhash: {severity: error}, thumbnail: {search: faiss}, aligned: {candidates: 4}}
    """))
    finding = Finding(id="abcdef012345", kind="near-duplicate", severity="error",
                      members=(Member("train/a.jpg", "train", "00" * 32), Member("test/b.jpg", "test", "11" * 32)),
                      pairs=(Pair("train/a.jpg", "test/b.jpg", "phash", 3.0, "hflip", {"phash_distance": 3}),))
    report = Report(str(tmp_path / "leakcheck.yaml"), (finding,))
    (tmp_path / "report.json").write_text(json.dumps(report_dict(report)))
    return tmp_path


ENTRY_POINTS = {
    "loading a policy": ["-c", "from pytest_leakcheck.policy.load import load; load('leakcheck.yaml')"],
    "leakcheck --version": ["-m", "pytest_leakcheck", "--version"],
    "leakcheck render (SARIF, which reads the policy's root)": [
        "-m", "pytest_leakcheck", "render", "report.json", "--format", "sarif", "-o", "out.sarif"],
    "leakcheck render (text)": ["-m", "pytest_leakcheck", "render", "report.json"],
    "leakcheck hook with no staged image": [
        "-m", "pytest_leakcheck", "hook", "--policy", "leakcheck.yaml", "notes.txt"],
}


@pytest.mark.parametrize("args", ENTRY_POINTS.values(), ids=ENTRY_POINTS.keys())
def test_entry_points_that_decode_nothing_import_no_decoder(lean_case: Path, args: list[str]) -> None:
    """numpy and Pillow cost about 0.2 s to import: the pre-commit hook's budget, spent on nothing."""
    assert _imported(args, lean_case) & set(DECODERS) == set()


def test_the_import_probe_sees_a_decoder_when_one_is_imported(lean_case: Path) -> None:
    """The probe itself: importing the decode module does show numpy and Pillow."""
    assert {"numpy", "PIL"} <= _imported(["-c", "import pytest_leakcheck.signals.decode"], lean_case)
