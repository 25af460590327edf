"""The core install stays lean: optional engines are imported only when a policy or option asks."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

HEAVY = ("dask", "distributed", "fsspec", "s3fs", "botocore", "aiobotocore")


def test_import_default_check_and_cli_leave_dask_and_fsspec_unimported(clean_dataset: Path, tmp_path: Path) -> None:
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
