"""Concurrent verdicts are never lost (issue 22, class 7): `judge` and `baseline` take turns
on the baseline under a lock, each reading it again before writing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pytest_leakcheck.testing import photo, save

from ..conftest import write_policy

POLICY = "version: 1\nsplits: {train: [train/**], test: [test/**]}\nbaseline: .leakcheck-baseline.yaml\n"
PACKAGE = str(Path(__file__).resolve().parents[2])


def _cli(root: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": PACKAGE}
    return subprocess.Popen([sys.executable, "-m", "pytest_leakcheck", *args, "--policy", str(root / "leakcheck.yaml"),
                             "-j", "1"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_six_concurrent_judges_keep_six_verdicts(tmp_path: Path) -> None:
    for i in range(40):
        save(photo(i, (64, 48)), tmp_path / f"train/{i:02d}.jpg", quality=90)
    (tmp_path / "test").mkdir()
    for i in range(6):
        shutil.copyfile(tmp_path / f"train/{i:02d}.jpg", tmp_path / f"test/copy{i}.jpg")
    write_policy(tmp_path, POLICY)
    first = _cli(tmp_path, "check", "--format", "json")  # warms the store; every judge runs a check
    out, err = first.communicate(timeout=300)
    ids = sorted(f["id"] for f in json.loads(out)["findings"])
    assert len(ids) == 6, err
    judges = [_cli(tmp_path, "judge", fid, "distinct", "--reason", f"reviewed {fid}") for fid in ids]
    baseline = _cli(tmp_path, "baseline")
    for proc in [*judges, baseline]:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    entries = yaml.safe_load((tmp_path / ".leakcheck-baseline.yaml").read_text())["findings"]
    assert sorted(entries) == ids
    assert {fid: entries[fid].get("verdict") for fid in ids} == dict.fromkeys(ids, "distinct")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".leakcheck-baseline")] == [
        ".leakcheck-baseline.yaml"]  # no lock file or temporary file left beside it
