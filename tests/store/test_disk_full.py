"""A full disk or a read-only cache folder (issue 22, class 6): exit 2 naming the path and the fix,
and nothing left behind to keep the disk full."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_leakcheck import EXIT_LEAKS, EXIT_USAGE
from pytest_leakcheck.testing import photo, save

from ..childcli import PACKAGE
from ..childcli import cli as _cli
from ..childcli import images as _images
from ..conftest import write_policy

DEEP = 200_000


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    root = tmp_path / "ds"
    _images(root, [f"train/{k}.jpg" for k in range(20)] + ["test/x.jpg"])
    shutil.copyfile(root / "train/3.jpg", root / "test/copy.jpg")
    write_policy(root, "version: 1\nsplits: {train: [train/**], test: [test/**]}\ncache: cache/store.sqlite\n")
    (root / "cache").mkdir()
    return root


def _left(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.slow
@pytest.mark.parametrize("limit", [4096, 40_000, 150_000])
def test_full_disk_while_the_store_is_made_is_exit_2_and_leaves_nothing(dataset: Path, limit: int) -> None:
    """The file-size limit makes every write past ``limit`` bytes fail, as a full disk does:
    while the store is made, while it is filled, whichever comes first."""
    done = _cli(dataset, "check", "-j", "1", "-q", limit=limit)
    assert done.returncode == EXIT_USAGE, done.stderr
    assert "cache/store.sqlite" in done.stderr and "--no-cache" in done.stderr
    assert "internal error" not in done.stderr
    assert _left(dataset / "cache") == []
    again = _cli(dataset, "check", "-j", "1", "-q")  # with room again: the next run is whole
    assert again.returncode == EXIT_LEAKS, again.stderr


@pytest.fixture
def tmpfs(tmp_path: Path):
    """A tmpfs of 256 KiB (root only): a disk that really fills up."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a tmpfs")
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.mark.slow
def test_really_full_disk_is_exit_2_and_leaves_nothing(dataset: Path, tmpfs: Path) -> None:
    for k in range(40):  # big enough not to fit a store's signatures in 256 KiB
        save(photo(500 + k, (256, 192)), dataset / f"train/big{k}.jpg", quality=90)
    env_cache = str(tmpfs / "store.sqlite")
    done = subprocess.run([sys.executable, "-m", "pytest_leakcheck", "check", "-j", "1", "-q"], cwd=dataset,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": PACKAGE, "LEAKCHECK_CACHE": env_cache})
    assert done.returncode == EXIT_USAGE, done.stderr
    assert env_cache in done.stderr and "the disk is full" in done.stderr and "--no-cache" in done.stderr
    assert _left(tmpfs) == []


@pytest.mark.slow
def test_read_only_cache_folder_is_exit_2_naming_the_path_and_the_fix(dataset: Path, tmp_path: Path) -> None:
    folder = dataset / "cache"
    if os.geteuid() == 0:  # root writes through a mode of 0555: make the file system read-only instead
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro", "tmpfs", str(folder)]).returncode:
            pytest.skip("cannot mount a read-only tmpfs here")
    else:
        folder.chmod(0o555)
    try:
        done = _cli(dataset, "check", "-j", "1", "-q")
        listed = _left(folder)
    finally:
        if os.geteuid() == 0:
            subprocess.run(["umount", "-l", str(folder)], check=False)
        else:
            folder.chmod(0o755)
    assert done.returncode == EXIT_USAGE, done.stderr
    assert "cache/store.sqlite" in done.stderr and "not writable" in done.stderr and "--no-cache" in done.stderr
    assert listed == []
