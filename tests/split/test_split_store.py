"""`leakcheck split` and the store: the dry run's own check keeps the check's search state.

The planner runs a check of its own over every file pooled in one split.  Its search state
(the matches, the aligned model and pairs) once went into the check's slots of the store,
one per kind, and the next `leakcheck check` searched and calibrated everything again: on
5,856 chest X-rays a warm check took 82-112 s after a dry-run split instead of 4 s.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

from pytest_leakcheck import EXIT_CLEAN, EXIT_LEAKS
from pytest_leakcheck.pipeline.run import RunOptions, last_or_check
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.testing import photo, resized, save

from ..conftest import write_policy

POLICY = "version: 1\nsplits: {train: [data/train/**], test: [data/test/**]}\n"


def _dataset(root: Path) -> Path:
    """Distinct photos, a byte copy and a resized copy across train and test: the split plans moves."""
    for k in range(24):
        save(photo(k, (96, 72)), root / f"data/train/a/{k}.jpg", quality=90)
    for k in range(8):
        save(photo(100 + k, (96, 72)), root / f"data/test/a/{k}.jpg", quality=90)
    shutil.copyfile(root / "data/train/a/3.jpg", root / "data/test/a/copy.jpg")
    save(resized(photo(5, (96, 72)), 0.8), root / "data/test/a/near.jpg", quality=90)
    write_policy(root, POLICY)
    return root / "leakcheck.yaml"


def _snapshots(store: Path) -> dict[str, str]:
    """Every stored snapshot: its key and a digest of its bytes."""
    with closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True)) as conn:
        return {k: hashlib.sha256(data).hexdigest() for k, data in conn.execute("SELECT key, data FROM snapshots")}


def _check(run_cli, policy: Path, out: Path) -> dict:
    code, _, err = run_cli("check", "--policy", str(policy), "-j", "1", "-q", "--format", "json", "-o", str(out))
    assert code == EXIT_LEAKS, err
    return json.loads(out.read_text(encoding="utf-8"))["stats"]


def test_a_dry_run_split_leaves_the_checks_search_state(tmp_path: Path, run_cli) -> None:
    policy = _dataset(tmp_path / "ds")
    store = policy.parent / ".leakcheck/cache.sqlite"
    cold = _check(run_cli, policy, tmp_path / "cold.json")
    warm = _check(run_cli, policy, tmp_path / "warm.json")
    assert "searching phash" in cold["seconds_stages"] and "searching phash" not in warm["seconds_stages"]
    checked = _snapshots(store)

    code, out, err = run_cli("split", "--policy", str(policy), "-j", "1")
    assert code == EXIT_CLEAN, err
    assert "data/test/a/copy.jpg" in out  # the dry run planned a move: its own check found the copy
    after = _snapshots(store)
    assert {k: after.get(k) for k in checked} == checked  # every snapshot of the check, byte for byte
    assert set(after) - set(checked)  # and the split's own, beside them, for the next split
    # The report the check saved is still the one `report --html` reuses.
    assert last_or_check(load(policy), RunOptions(jobs=1))[1]

    again = _check(run_cli, policy, tmp_path / "again.json")
    # Nothing searched or calibrated anew: the same stages as the warm check before the split.
    assert sorted(again["seconds_stages"]) == sorted(warm["seconds_stages"])
    assert again["aligned"]["levels_at"] == cold["aligned"]["levels_at"]
    assert _snapshots(store) == after
