"""One pipeline assembly (run.py): every way in gives the same verdict on the same tree.

The holes of issue 22 class 4 this closes: a pull request adding or
retargeting a folder link passed ``--changed-since`` and the hook while a full
check failed; ``export`` opened the store without the location rule and
ignored ``LEAKCHECK_CACHE``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_leakcheck import EXIT_CLEAN, EXIT_LEAKS, EXIT_USAGE
from pytest_leakcheck.cli import main
from pytest_leakcheck.testing import photo, save

from ..gitrepo import commit_all, dataset_repo, git


def _check(repo: Path, *args: str) -> tuple[int, dict]:
    out = repo.parent / "report.json"
    code = main(["check", "--policy", str(repo / "leakcheck.yaml"), "--format", "json", "-o", str(out),
                 "-j", "1", *args])
    return code, json.loads(out.read_text())


def _hook(repo: Path, *staged: str) -> int:
    here = Path.cwd()
    os.chdir(repo)  # pre-commit runs hooks from the repository's top with paths relative to it
    try:
        return main(["hook", "--policy", "leakcheck.yaml", *staged])
    finally:
        os.chdir(here)


def _base_report(repo: Path) -> Path:
    git(repo, "checkout", "-q", "main")
    saved = repo.parent / "base.json"
    main(["check", "--policy", str(repo / "leakcheck.yaml"), "--format", "json", "-o", str(saved), "-j", "1"])
    git(repo, "checkout", "-q", "pr")
    return saved


@pytest.mark.parametrize("base_report", [False, True], ids=["full", "focused"])
def test_a_pull_request_adding_a_folder_link_fails_every_way_in(tmp_path: Path, base_report: bool) -> None:
    """`test/more -> ../train`: each training image is in test too."""
    repo = tmp_path / "repo"
    dataset_repo(repo)
    saved = _base_report(repo) if base_report else None
    os.symlink("../train", repo / "test/more")
    commit_all(repo, "link train into test")
    assert _check(repo)[0] == EXIT_LEAKS
    code, report = _check(repo, "--changed-since", "main", *(["--base-report", str(saved)] if saved else []))
    assert code == EXIT_LEAKS
    new = {m["path"] for f in report["findings"] if f["status"] == "new" for m in f["members"]}
    assert "test/more/img_00.jpg" in new and "train/img_00.jpg" in new
    assert _hook(repo, "test/more") == EXIT_LEAKS


def test_retargeting_an_existing_link_fails_every_way_in(tmp_path: Path) -> None:
    """`test/more -> ../extra` (distinct images) on main becomes `-> ../train` on the branch."""
    repo = tmp_path / "repo"
    dataset_repo(repo)
    git(repo, "checkout", "-q", "main")
    for i in range(2):
        save(photo(500 + i, (96, 72)), repo / f"extra/x{i}.jpg", quality=90)
    (repo / "leakcheck.yaml").write_text((repo / "leakcheck.yaml").read_text() + "ignore: [extra/**]\n")
    os.symlink("../extra", repo / "test/more")
    commit_all(repo, "a linked folder of distinct images")
    git(repo, "branch", "-f", "pr")
    saved = _base_report(repo)
    assert json.loads(saved.read_text())["exit_code"] == EXIT_CLEAN
    os.unlink(repo / "test/more")
    os.symlink("../train", repo / "test/more")
    commit_all(repo, "point the link at train")
    assert _check(repo)[0] == EXIT_LEAKS
    assert _check(repo, "--changed-since", "main")[0] == EXIT_LEAKS
    assert _check(repo, "--changed-since", "main", "--base-report", str(saved))[0] == EXIT_LEAKS
    assert _hook(repo, "test/more") == EXIT_LEAKS


def _dataset(root: Path, cache: str) -> Path:
    for i in range(3):
        save(photo(i), root / f"train/t{i}.jpg")
        save(photo(40 + i), root / f"test/e{i}.jpg")
    policy = root / "leakcheck.yaml"
    policy.write_text(f"version: 1\nsplits: {{train: [train/**], test: [test/**]}}\ncache: {cache}\n")
    return policy


def test_export_keeps_the_store_where_check_may(tmp_path: Path, run_cli, monkeypatch) -> None:
    """`cache: ../outside/cache.sqlite`: check exits 2; export once created the file and exited 0."""
    monkeypatch.delenv("LEAKCHECK_CACHE", raising=False)
    policy = _dataset(tmp_path / "ds", "../outside/cache.sqlite")
    assert run_cli("check", "--policy", str(policy))[0] == EXIT_USAGE
    code, _, err = run_cli("export", "--policy", str(policy), "-o", str(tmp_path / "t.csv"))
    assert code == EXIT_USAGE and "`cache`" in err
    assert not (tmp_path / "outside").exists()


def test_export_honours_leakcheck_cache(tmp_path: Path, run_cli, monkeypatch) -> None:
    elsewhere = tmp_path / "owner/cache.sqlite"
    monkeypatch.setenv("LEAKCHECK_CACHE", str(elsewhere))
    policy = _dataset(tmp_path / "ds", ".leakcheck/cache.sqlite")
    assert run_cli("export", "--policy", str(policy), "-o", str(tmp_path / "t.csv"))[0] == EXIT_CLEAN
    assert elsewhere.is_file()
    assert not (tmp_path / "ds/.leakcheck/cache.sqlite").exists()


def test_the_cycle_collector_is_paused_during_a_check_and_restored_after(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Paused while the pipeline runs (its passes over a large dataset's records cost a tenth of a
    commit hook), enabled again afterwards, also when the check fails."""
    import gc

    import pytest

    from pytest_leakcheck import check
    from pytest_leakcheck.pipeline import signatures
    from pytest_leakcheck.testing import photo, save

    from ..conftest import write_policy

    for i in range(3):
        save(photo(i, (32, 32)), tmp_path / "train" / f"{i}.png")
    save(photo(7, (32, 32)), tmp_path / "test" / "t.png")
    policy = write_policy(tmp_path)
    seen: list[bool] = []
    real = signatures.compute

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    mp = pytest.MonkeyPatch()
    mp.setattr(signatures, "compute", spy)
    try:
        assert gc.isenabled()
        check(policy, use_cache=False)
        assert seen == [False] and gc.isenabled()

        def boom(*args, **kwargs):  # type: ignore[no-untyped-def]
            raise RuntimeError("boom")

        mp.setattr(signatures, "compute", boom)
        with pytest.raises(RuntimeError):
            check(policy, use_cache=False)
        assert gc.isenabled()
    finally:
        mp.undo()
