"""A store a pull request could have written (issue 34, classes 6 and 10): a committed store is
never read, exact links always come from this run's digests, and a snapshot whose contents
do not hold together is set aside and rebuilt, never exit 3."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from pytest_leakcheck import EXIT_LEAKS, check
from pytest_leakcheck.store.db import open_store
from pytest_leakcheck.testing import photo, save

from ..conftest import write_policy
from ..gitrepo import commit_all, git

POLICY = "version: 1\nsplits: {train: [train/**], test: [test/**]}\n"
STORE = ".leakcheck/cache.sqlite"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    for i in range(12):
        save(photo(i, (64, 48)), root / f"train/{i}.jpg", quality=90)
    for i in range(3):
        save(photo(100 + i, (64, 48)), root / f"test/{i}.jpg", quality=90)
    shutil.copyfile(root / "train/0.jpg", root / "test/copy.jpg")  # a byte copy
    save(photo(5, (64, 48)), root / "test/resaved.jpg", quality=60)  # a near-duplicate
    write_policy(root, POLICY)
    return root


def _edit(store_path: Path, kind: str, change: Callable[[dict[str, np.ndarray]], None]) -> None:
    """Change the snapshot of ``kind`` and save it again: valid checksums, contents as ``change`` left them."""
    store = open_store(store_path)
    try:
        keys = [k for (k,) in store.conn.execute("SELECT key FROM snapshots") if k.split(":", 1)[0] == kind]
        assert keys, kind
        for key in keys:
            arrays = store.load_snapshot(key)
            assert arrays is not None
            change(arrays)
            store.save_snapshot(key, arrays, kind=key.split(":", 1)[0])
    finally:
        store.close()


def _empty_matches(arrays: dict[str, np.ndarray]) -> None:
    for name in ("i", "j", "detector", "value", "orientation", "weak"):
        arrays[name] = arrays[name][:0]


def _retouch(root: Path) -> None:
    """A fresh checkout: every file with a new mtime, the same bytes."""
    for path in root.rglob("*.jpg"):
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))


def _kinds(out: str) -> list[str]:
    return sorted({f["kind"] for f in json.loads(out)["findings"]})


def test_a_committed_store_with_emptied_matches_is_not_read(project: Path, run_cli) -> None:
    policy = str(project / "leakcheck.yaml")
    code, out, _ = run_cli("check", "--policy", policy, "-j", "1", "--format", "json")
    assert code == EXIT_LEAKS and "identical-file" in _kinds(out)
    _edit(project / STORE, "matches", _empty_matches)
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-f", STORE)  # past the .gitignore leakcheck writes into its folder
    commit_all(project, "a pull request commits its store")
    assert git(project, "ls-files", STORE) == STORE
    _retouch(project)
    code, out, _ = run_cli("check", "--policy", policy, "-j", "1", "--format", "json")
    assert code == EXIT_LEAKS
    assert "identical-file" in _kinds(out)
    assert "tracked by git" in out and "not read" in out


def test_a_store_with_emptied_matches_still_finds_every_byte_copy(project: Path, run_cli) -> None:
    """Not committed (a cache restored from elsewhere): still, exact links come from this run's digests."""
    policy = str(project / "leakcheck.yaml")
    code, out, _ = run_cli("check", "--policy", policy, "-j", "1", "--format", "json")
    before = [f["id"] for f in json.loads(out)["findings"] if f["kind"] == "identical-file"]
    assert code == EXIT_LEAKS and before
    _edit(project / STORE, "matches", _empty_matches)
    _retouch(project)
    code, out, _ = run_cli("check", "--policy", policy, "-j", "1", "--format", "json")
    assert code == EXIT_LEAKS
    assert [f["id"] for f in json.loads(out)["findings"] if f["kind"] == "identical-file"] == before


def _past_end(a: dict[str, np.ndarray]) -> None:
    a["i"] = np.append(a["i"], len(a["digest"]) + 5)
    for name, value in (("j", 0), ("detector", 1), ("value", 0.0), ("orientation", 0), ("weak", False)):
        a[name] = np.append(a[name], np.array([value], dtype=a[name].dtype))


def _unequal(a: dict[str, np.ndarray]) -> None:
    _past_end(a)
    a["i"][-1] = 0
    a["j"] = a["j"][:-1]


def _set(name: str, value: int) -> Callable[[dict[str, np.ndarray]], None]:
    def change(a: dict[str, np.ndarray]) -> None:
        _past_end(a)
        a["i"][-1] = 0
        a[name][-1] = value
    return change


def _short_digests(a: dict[str, np.ndarray]) -> None:
    a["digest"] = a["digest"][:-1]


def _wrong_family_shape(a: dict[str, np.ndarray]) -> None:
    name = next(k for k in a if k.startswith("sig:"))
    a[name] = np.zeros((len(a[name]), 3), dtype=a[name].dtype)


def _wrong_basis(a: dict[str, np.ndarray]) -> None:
    a["basis"] = np.zeros((5, 3), np.float32)


def _pairs_past_end(a: dict[str, np.ndarray]) -> None:
    a["i"] = np.append(a["i"], len(a["ids"]) + 3).astype(np.int64)
    a["j"] = np.append(a["j"], 0).astype(np.int64)
    a["score"] = np.append(a["score"], 0.9)
    a["flipped"] = np.append(a["flipped"], False)


INCONSISTENT = {
    "index past the end": ("matches", _past_end),
    "arrays of unequal length": ("matches", _unequal),
    "unknown detector": ("matches", _set("detector", 99)),
    "unknown orientation": ("matches", _set("orientation", 99)),
    "fewer digests than rows": ("signatures", _short_digests),
    "a family of the wrong shape": ("signatures", _wrong_family_shape),
    "wrong basis shape": ("aligned-model", _wrong_basis),
    "aligned pair past the end": ("aligned-pairs", _pairs_past_end),
}


@pytest.mark.parametrize("case", list(INCONSISTENT))
def test_an_inconsistent_snapshot_is_set_aside_and_rebuilt(case: str, project: Path, run_cli) -> None:
    kind, change = INCONSISTENT[case]
    policy = project / "leakcheck.yaml"
    clean = check(policy, use_cache=False, jobs=1)
    check(policy, jobs=1)
    _edit(project / STORE, kind, change)
    code, out, err = run_cli("check", "--policy", str(policy), "-j", "1", "--format", "json")
    assert code == EXIT_LEAKS, err
    assert "Traceback" not in err and "internal error" not in err
    assert [f["id"] for f in json.loads(out)["findings"]] == [f.id for f in clean.findings]
    assert "inconsistent" in out and "set aside" in out
