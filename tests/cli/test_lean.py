"""The core install stays lean: optional engines are imported only when a policy or option asks."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

HEAVY = ("dask", "distributed", "fsspec", "s3fs", "botocore", "aiobotocore", "faiss")


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


def test_exact_retrieval_and_the_hash_index_leave_faiss_unimported() -> None:
    """faiss is loaded by the faiss backend only: the exact backend and the multi-index never touch it."""
    script = textwrap.dedent("""
        import sys
        import numpy as np
        from pytest_leakcheck.search import kernels, retrieval
        x = np.random.default_rng(0).standard_normal((300, 64)).astype(np.float32)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        retrieval.within(x, x, 0.9, same=True)
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
