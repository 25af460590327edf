"""A leakcheck CLI in a child process, for tests of resource bounds: a hang fails the test at its
timeout instead of stalling the suite, and a file-size limit can be set for the child alone."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

from pytest_leakcheck.testing import photo, save

PACKAGE = str(Path(__file__).resolve().parents[1])
DEEP = 200_000


def images(root: Path, names: list[str]) -> None:
    for k, name in enumerate(names):
        save(photo(k, (64, 48)), root / name, quality=90)


def cli(root: Path, *args: str, timeout: float = 120, limit: int | None = None) -> subprocess.CompletedProcess:
    """The CLI in a child process: a hang fails the test at ``timeout`` instead of stalling the suite."""
    def cap() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run([sys.executable, "-m", "pytest_leakcheck", *args], cwd=root, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONPATH": PACKAGE}, preexec_fn=cap)
