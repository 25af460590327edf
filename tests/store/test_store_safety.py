"""The store path can only ever touch leakcheck's own store, and a damaged store never fails a check.

Class 1 of issue 10: ``cache: .`` once renamed the whole dataset folder.  Whatever
the policy names as its cache, leakcheck moves aside or rebuilds only a regular
file that proves itself a leakcheck store; anything else is exit 2 and stays
byte for byte as it was.  Class 2: a store damaged past its header (a snapshot's
overflow pages, a table page, a write) is set aside and rebuilt wherever the
damage surfaces, and the check runs again with the right findings.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from pytest_leakcheck import EXIT_LEAKS, EXIT_USAGE, check
from pytest_leakcheck.errors import StoreError
from pytest_leakcheck.store.db import Store, open_store
from pytest_leakcheck.store.storefile import APPLICATION_ID, CACHE_ENV, is_ours
from pytest_leakcheck.testing import photo, save

from ..conftest import write_policy

POLICY = "version: 1\nsplits: {train: [train/**], test: [test/**]}\n"
STORE = ".leakcheck/cache.sqlite"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A dataset inside ``tmp_path/project``, so that "outside the project" is inside tmp_path."""
    root = tmp_path / "project"
    for i in range(24):
        save(photo(i, (64, 48)), root / f"train/{i}.jpg", quality=90)
    for i in range(4):
        save(photo(100 + i, (64, 48)), root / f"test/{i}.jpg", quality=90)
    shutil.copyfile(root / "train/0.jpg", root / "test/copy.jpg")
    save(photo(3, (64, 48)).transpose(0), root / "test/flipped.jpg", quality=90)
    write_policy(root, POLICY)
    return root


def tree(top: Path) -> dict[str, object]:
    """Every entry under ``top`` (links not followed): its kind and bytes or target."""
    out: dict[str, object] = {}
    for folder, dirs, files in os.walk(top):
        for name in dirs + files:
            path = Path(folder, name)
            rel = path.relative_to(top).as_posix()
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                out[rel] = ("dir",)
            elif path.is_fifo():
                out[rel] = ("fifo",)
            else:
                out[rel] = ("file", path.read_bytes(), path.stat().st_mtime_ns)
    return out


def _foreign_sqlite(path: Path, *, app_id: int = 0, meta: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO notes VALUES ('somebody else''s data')")
        if meta:  # a `meta` table, but not leakcheck's tables around it
            conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
            conn.execute("INSERT INTO meta VALUES ('schema_version', '2')")
        if app_id:
            conn.execute(f"PRAGMA application_id = {app_id}")


# What a hostile (or mistaken) policy can point `cache` at: name -> (cache value, setup).
HOSTILE = {
    "the policy folder": (".", None),
    "the policy itself": ("leakcheck.yaml", None),
    "an image": ("train/3.jpg", None),
    "a folder": ("some_dir/", lambda root: save(photo(7, (32, 32)), root / "some_dir/kept.jpg")),
    "a split folder": ("train", None),
    "a text file": ("notes.txt", lambda root: (root / "notes.txt").write_text("mine\n")),
    "a zero-byte file": ("empty.sqlite", lambda root: (root / "empty.sqlite").write_bytes(b"")),
    "garbage at the default path": (STORE, lambda root: _write(root / STORE, b"not sqlite " * 500)),
    "zeros at the default path": (STORE, lambda root: _write(root / STORE, b"\0" * 8192)),
    "a foreign sqlite": (STORE, lambda root: _foreign_sqlite(root / STORE)),
    "a foreign sqlite with a meta table": (STORE, lambda root: _foreign_sqlite(root / STORE, meta=True)),
    "a foreign sqlite with another app id": (STORE, lambda root: _foreign_sqlite(root / STORE, app_id=0x12345678)),
    "a link to an image": ("link.sqlite", lambda root: (root / "link.sqlite").symlink_to("train/5.jpg")),
    "a link to the policy": ("link.sqlite", lambda root: (root / "link.sqlite").symlink_to("leakcheck.yaml")),
    "a link to a folder": ("link.sqlite", lambda root: (root / "link.sqlite").symlink_to("test")),
    "a fifo": ("pipe.sqlite", lambda root: os.mkfifo(root / "pipe.sqlite")),
    "outside, relative": ("../outside.sqlite", lambda root: _foreign_sqlite(root.parent / "outside.sqlite")),
    "outside, absent": ("../elsewhere/cache.sqlite", None),
    "outside, absolute": ("{outside}", lambda root: (root.parent / "secret.txt").write_text("secret\n")),
    "a link leaving the project": ("out.sqlite", lambda root: (root / "out.sqlite").symlink_to(root.parent / "x.db")),
    "under /etc": ("/etc/leakcheck-test-no-such-folder/cache.sqlite", None),
    # SQLite writes <store>-wal and -shm beside the store, following links.
    "a wal link to an image": (STORE, lambda root: _link(root / (STORE + "-wal"), root / "train/6.jpg")),
    "a user file where the wal of no store goes": (STORE, lambda root: _write(root / (STORE + "-wal"), b"mine")),
    "an shm folder": (STORE, lambda root: (root / (STORE + "-shm")).mkdir(parents=True)),
}


def _link(link: Path, target: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


@pytest.mark.slow
@pytest.mark.parametrize("case", list(HOSTILE))
def test_cache_path_that_is_not_our_store_is_exit_2_and_left_alone(case: str, project: Path, run_cli) -> None:
    """Whatever `cache` names, only a provable leakcheck store is ever moved: else exit 2, nothing changed."""
    value, setup = HOSTILE[case]
    if setup:
        setup(project)
    value = value.format(outside=project.parent / "secret.txt")
    write_policy(project, POLICY + f"cache: {value}\n")
    before = tree(project.parent)
    code, out, err = run_cli("check", "--policy", str(project / "leakcheck.yaml"), "-j", "1")
    assert code == EXIT_USAGE, err
    assert err.startswith("Error: ") and "`cache`" in err and "Traceback" not in err
    assert str((project / value).resolve()) in err  # the path
    assert ".leakcheck/cache.sqlite" in err or "delete it" in err  # the fix
    assert out == ""
    assert tree(project.parent) == before  # not a byte moved, changed, or added
    assert not Path("/etc/leakcheck-test-no-such-folder").exists()


def test_sidecar_link_beside_our_store_is_refused(project: Path, run_cli) -> None:
    """A -wal planted as a link beside a real store of ours: exit 2, the link's target untouched."""
    check(project / "leakcheck.yaml", jobs=1)
    _link(project / (STORE + "-wal"), project / "train/6.jpg")
    before = tree(project)
    code, _, err = run_cli("check", "--policy", str(project / "leakcheck.yaml"), "-j", "1")
    assert code == EXIT_USAGE and "cache.sqlite-wal" in err and "`cache`" in err
    assert tree(project) == before


def test_the_action_cache_folder_follows_the_same_rule(project: Path, run_cli) -> None:
    """`fingerprint --cache-dir` (what the Action caches and writes reports into) refuses an outside store."""
    write_policy(project, POLICY + "cache: ../../cache.sqlite\n")
    code, out, err = run_cli("fingerprint", "--policy", str(project / "leakcheck.yaml"), "--cache-dir")
    assert code == EXIT_USAGE
    assert "`cache`" in err and out == ""


def test_environment_variable_is_the_opt_out_for_a_store_elsewhere(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli
) -> None:
    """LEAKCHECK_CACHE (which a pull request cannot set) keeps the store anywhere, still only our own."""
    elsewhere = tmp_path / "ci-cache/store.sqlite"
    write_policy(project, POLICY + "cache: ../../cache.sqlite\n")
    monkeypatch.setenv(CACHE_ENV, str(elsewhere))
    code, _, err = run_cli("check", "--policy", str(project / "leakcheck.yaml"), "-j", "1")
    assert code == EXIT_LEAKS, err
    assert is_ours(elsewhere)
    code, out, _ = run_cli("fingerprint", "--policy", str(project / "leakcheck.yaml"), "--cache-dir")
    assert out.strip() == str(elsewhere.parent.resolve())
    # Pointed at somebody else's file, the opt-out still never touches it.
    other = tmp_path / "other.db"
    _foreign_sqlite(other)
    data = other.read_bytes()
    monkeypatch.setenv(CACHE_ENV, str(other))
    code, _, err = run_cli("check", "--policy", str(project / "leakcheck.yaml"), "-j", "1")
    assert code == EXIT_USAGE and "`cache`" in err
    assert other.read_bytes() == data


def test_user_cache_folder_is_allowed(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A policy may keep its store in $XDG_CACHE_HOME/leakcheck."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    write_policy(project, POLICY + f"cache: {tmp_path / 'xdg/leakcheck/project.sqlite'}\n")
    check(project / "leakcheck.yaml", jobs=1)
    assert is_ours(tmp_path / "xdg/leakcheck/project.sqlite")


def test_new_stores_are_stamped_and_old_ones_recognised(project: Path) -> None:
    """New stores carry the application id; a store from before the stamp is kept (not rebuilt) and stamped."""
    check(project / "leakcheck.yaml", jobs=1)
    store = project / STORE
    with closing(sqlite3.connect(store)) as conn:
        assert conn.execute("PRAGMA application_id").fetchone() == (APPLICATION_ID,)
        conn.execute("PRAGMA application_id = 0")
    assert store.read_bytes()[68:72] == b"\0\0\0\0"
    again = check(project / "leakcheck.yaml", jobs=1)
    assert again.warnings == ()
    assert again.stats["decoded"] == 0
    assert store.read_bytes()[68:72] == APPLICATION_ID.to_bytes(4, "big")
    assert list(store.parent.glob("*.corrupt-*")) == []


@pytest.mark.slow
def test_only_the_store_module_renames_or_deletes_files() -> None:
    """By design: is_ours() guards every rename and unlink, because no other module has one.

    (atomic.write_atomic replaces the output files the user names, through its own temporary file;
    split/moves.py performs the moves `leakcheck split --apply` asks for, never overwriting, and undoes
    only those its own journal records; export
    writes its own output file through a temporary file, as write_atomic does; store/pseudonyms.py
    writes its key beside the store through its own temporary file, replacing only a key file
    that is not a key.)
    """
    package = Path(__file__).resolve().parents[2] / "pytest_leakcheck"
    moves = {"replace", "rename", "renames", "unlink", "remove", "removedirs", "rmdir", "rmtree", "move"}
    found = set()
    for source in sorted(package.glob("**/*.py")):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in moves:
                base = node.func.value
                module_call = isinstance(base, ast.Name) and base.id in ("os", "shutil", "Path")
                if module_call or node.func.attr in ("unlink", "rename", "rmdir"):  # or pathlib's methods
                    found.add(source.relative_to(package).as_posix())
    assert found <= {"store/storefile.py", "files/atomic.py", "split/moves.py", "integrations/export.py",
                     "store/pseudonyms.py"}, found
    text = (package / "store/storefile.py").read_text()
    tree_ = ast.parse(text)
    for fn in (n for n in ast.walk(tree_) if isinstance(n, ast.FunctionDef)):
        calls = [c for c in ast.walk(fn) if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                 and c.func.attr in moves]
        if calls:
            names = {c.func.id for c in ast.walk(fn) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
            assert fn.name == "create" or "is_ours" in names, fn.name


# --------------------------------------------------------------------------
# Class 2: damage anywhere, at any point of a check


def _page_of(path: Path, blob: bytes) -> int:
    """The page of the store file holding the middle of ``blob``."""
    data = path.read_bytes()
    page = int.from_bytes(data[16:18], "big")
    # Thumbnails sit both in the snapshot and in the signatures table: take
    # a piece of the blob found nowhere else in the file.
    for start in range(len(blob) // 2, len(blob) - 48, 16):
        if data.count(blob[start:start + 48]) == 1:
            return data.find(blob[start:start + 48]) // page
    raise AssertionError("no unique piece of the blob in the store file")


def _garble(path: Path, pages: list[int]) -> None:
    """Overwrite whole pages with 0xff: the header stays, the pages are garbage."""
    data = bytearray(path.read_bytes())
    size = int.from_bytes(data[16:18], "big")
    for p in pages:
        assert p > 0
        data[p * size:(p + 1) * size] = b"\xff" * size
    path.write_bytes(bytes(data))


def _blob(path: Path, sql: str) -> bytes:
    with closing(sqlite3.connect(path)) as conn:
        return bytes(conn.execute(sql).fetchone()[0])


def _snapshot_pages(path: Path) -> list[int]:
    return [_page_of(path, _blob(path, "SELECT data FROM snapshots WHERE key LIKE 'signatures:%'"))]


def _root_page(path: Path, table: str) -> list[int]:
    with closing(sqlite3.connect(path)) as conn:
        (page,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    return [page - 1]  # SQLite counts pages from 1


def _files_page(path: Path) -> list[int]:
    # The `files` table itself (one leaf page here); opening counts its rows
    # through the covering index, so only a lookup finds the damage.
    return _root_page(path, "files")


def _signature_page(path: Path) -> list[int]:
    return _root_page(path, "signatures")


def _wrong_size_blob(path: Path) -> list[int]:
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("UPDATE signatures SET data = x'00' WHERE family = 'thumb'")
        conn.execute("DELETE FROM snapshots")
    return []


def _touch(project: Path) -> None:
    os.utime(project / "train/7.jpg", ns=(1, 1))


DAMAGE = {
    # where -> (how to damage the store, what to do to the tree before the next run)
    "open (a page of signatures)": (_signature_page, None),
    "snapshot read (overflow pages)": (_snapshot_pages, None),
    "files read (a table page)": (_files_page, _touch),
    "family read (a stored signal of the wrong size)": (_wrong_size_blob, None),
    "write (deleting a damaged snapshot)": (_snapshot_pages, "thumbnail"),
}


@pytest.mark.slow
@pytest.mark.parametrize("where", list(DAMAGE))
def test_damaged_store_is_set_aside_and_the_check_rerun(where: str, project: Path, run_cli) -> None:
    """Damage beyond the header, wherever it surfaces: a warning, the store rebuilt, the right findings."""
    damage, then = DAMAGE[where]
    policy = project / "leakcheck.yaml"
    if then == "thumbnail":
        write_policy(project, POLICY + "detectors: {thumbnail: {size: 16}}\n")
    clean = check(policy, use_cache=False, jobs=1)
    assert {f.kind for f in clean.findings} >= {"identical-file"}
    check(policy, jobs=1)
    store = project / STORE
    pages = damage(store)
    if pages:
        _garble(store, pages)
    assert store.read_bytes()[:16] == b"SQLite format 3\0"
    if then == "thumbnail":
        write_policy(project, POLICY + "detectors: {thumbnail: {size: 8}}\n")
        clean = check(policy, use_cache=False, jobs=1)
    elif then is not None:
        then(project)
        clean = check(policy, use_cache=False, jobs=1)

    code, out, err = run_cli("check", "--policy", str(policy), "-j", "1", "--format", "json")
    # stderr holds only the one timing line every check prints (issue 15).
    assert code == EXIT_LEAKS and [line for line in err.splitlines() if " images in " not in line] == []
    assert [f["id"] for f in json.loads(out)["findings"]] == [f.id for f in clean.findings]
    assert "store set aside" in out and "rebuilt" in out
    aside = list(store.parent.glob("cache.sqlite.corrupt-*"))
    assert len(aside) == 1 and aside[0].name in out
    first = check(policy, jobs=1)
    second = check(policy, jobs=1)
    for report in (first, second):
        assert [f.id for f in report.findings] == [f.id for f in clean.findings]
        assert report.warnings == ()
    assert second.stats["decoded"] == 0
    with closing(sqlite3.connect(store)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_damage_in_a_store_passed_in_is_rebuilt_in_place(project: Path) -> None:
    """A caller's own open store is set aside and rebuilt too, and stays usable."""
    policy = project / "leakcheck.yaml"
    clean = check(policy, use_cache=False, jobs=1)
    check(policy, jobs=1)
    store_path = project / STORE
    _garble(store_path, _snapshot_pages(store_path))
    with open_store(store_path) as store:
        report = check(policy, store=store, jobs=1)
        assert [f.id for f in report.findings] == [f.id for f in clean.findings]
        assert any("store set aside" in w for w in report.warnings)
        assert store.conn.execute("SELECT count(*) FROM files").fetchone()[0] > 0


def test_a_store_that_fails_after_the_rebuild_is_a_store_error(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check runs again once, not forever: damage that survives a rebuild is exit 2."""
    def broken(*args, **kwargs):
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(Store, "load_snapshot", broken)
    with pytest.raises(StoreError, match="failed again after a rebuild"):
        check(project / "leakcheck.yaml", jobs=1)


def test_busy_or_full_store_is_not_set_aside(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only damage moves a store aside: a locked or full one is a store error, and is kept."""
    check(project / "leakcheck.yaml", jobs=1)

    def locked(*args, **kwargs):
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(Store, "load_snapshot", locked)
    with pytest.raises(StoreError, match="database is locked"):
        check(project / "leakcheck.yaml", jobs=1)
    assert list((project / ".leakcheck").glob("*.corrupt-*")) == []
