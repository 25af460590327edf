"""A campaign of hostile signature stores against `leakcheck check` (issue 34, classes 6 and 10):
count the outcomes.

Run by hand: ``python benchmarks/hostile_stores.py [--random 60] [--seed 0]``.  Each input is a
small dataset with a byte copy and a re-saved near-duplicate of train images in test, checked
once to fill its store; then the store is edited through its own API (so every checksum is
valid) and either committed to git (``git add -f``) or left untracked, and every image gets a
new mtime (a fresh checkout).  Fixed cases: the match lists emptied (committed and not), the
files table's digests swapped and every signature zeroed (committed), a committed store under
another name (``cache: data/blob.bin``), and each inconsistency of class 10 (an index past the
end, unequal lengths, an unknown detector or orientation, fewer digests than rows, a family of
the wrong shape, a wrong basis, aligned pairs past the end, its info not JSON); then
``--random`` untracked stores with one array of one snapshot cut, grown, retyped, reshaped,
filled with random numbers or removed.  Counted (hostile_common.py): inputs tried, exit
codes, exit 3, hangs, files moved outside the repository (always 0), leaks passed (exit 0, or
a report without the byte copy as an ``identical-file`` finding: it is always there).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hostile_common import Tally, leakcheck  # noqa: E402

from pytest_leakcheck.store.db import open_store  # noqa: E402
from pytest_leakcheck.testing import photo, save  # noqa: E402

POLICY = "version: 1\nsplits: {train: [train/**], test: [test/**]}\n"
STORE = ".leakcheck/cache.sqlite"
IDENT = ["-c", "user.name=c", "-c", "user.email=c@example.invalid", "-c", "commit.gpgsign=false"]
Arrays = dict[str, np.ndarray]


def build(root: Path, cache: str | None = None) -> Path:
    for i in range(10):
        save(photo(i, (64, 48)), root / f"train/{i}.jpg", quality=90)
    for i in range(3):
        save(photo(100 + i, (64, 48)), root / f"test/{i}.jpg", quality=90)
    shutil.copyfile(root / "train/0.jpg", root / "test/copy.jpg")
    save(photo(5, (64, 48)), root / "test/resaved.jpg", quality=60)
    (root / "leakcheck.yaml").write_text(POLICY + (f"cache: {cache}\n" if cache else ""))
    code, _, err = leakcheck("check", "--policy", str(root / "leakcheck.yaml"), "-j", "1")
    assert code == 1, err
    return root / (cache or STORE)


def edit(store_path: Path, kind: str, change: Callable[[Arrays], None]) -> None:
    store = open_store(store_path)
    try:
        keys = [k for (k,) in store.conn.execute("SELECT key FROM snapshots") if k.split(":", 1)[0] == kind]
        for key in keys:
            arrays = getattr(store, "_read_snapshot", store.load_snapshot)(key)  # as written, unchecked
            if arrays is not None:
                change(arrays)
                store.save_snapshot(key, arrays, kind=key.split(":", 1)[0])
    finally:
        store.close()


def sql(store_path: Path, statement: str) -> None:
    with sqlite3.connect(store_path) as conn:
        conn.execute(statement)


def commit(root: Path, store_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", *IDENT, "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", *IDENT, "add", "-f", str(store_path.relative_to(root))], cwd=root, check=True)
    subprocess.run(["git", *IDENT, "commit", "-qm", "pr"], cwd=root, check=True)


def retouch(root: Path) -> None:
    for path in root.rglob("*.jpg"):
        st = path.stat()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))


def empty(a: Arrays) -> None:
    for name in ("i", "j", "detector", "value", "orientation", "weak"):
        a[name] = a[name][:0]


def append(a: Arrays, **values: float) -> None:
    for name in ("i", "j", "detector", "value", "orientation", "weak"):
        a[name] = np.append(a[name], np.array([values.get(name, 0)], dtype=a[name].dtype))


INCONSISTENT: dict[str, tuple[str, Callable[[Arrays], None]]] = {
    "matches: index past the end": ("matches", lambda a: append(a, i=len(a["digest"]) + 9)),
    "matches: unequal lengths": ("matches", lambda a: (append(a), a.update(j=a["j"][:-1]))),
    "matches: unknown detector": ("matches", lambda a: append(a, detector=99)),
    "matches: unknown orientation": ("matches", lambda a: append(a, orientation=99)),
    "signatures: fewer digests than rows": ("signatures", lambda a: a.update(digest=a["digest"][:-1])),
    "signatures: a family of the wrong shape": ("signatures", lambda a: a.update(
        {k: np.zeros((len(v), 3), v.dtype) for k, v in a.items() if k.startswith("sig:")})),
    "aligned model: wrong basis": ("aligned-model", lambda a: a.update(basis=np.zeros((5, 3), np.float32))),
    "aligned model: info not JSON": ("aligned-model", lambda a: a.update(info=np.frombuffer(b"{nope", np.uint8))),
    "aligned pairs: past the end": ("aligned-pairs", lambda a: a.update(
        i=np.append(a["i"], 999).astype(np.int64), j=np.append(a["j"], 0).astype(np.int64),
        score=np.append(a["score"], 0.9), flipped=np.append(a["flipped"], False))),
}


def mutate(rng: random.Random, a: Arrays) -> None:
    name = rng.choice(sorted(a))
    v = a[name]
    how = rng.choice(["cut", "grow", "retype", "reshape", "random", "remove"])
    if how == "cut":
        a[name] = v[: max(0, len(v) - rng.randint(1, 3))] if v.ndim else v
    elif how == "grow":
        a[name] = np.concatenate([v, v[:1]]) if v.ndim and len(v) else np.zeros(3, np.int64)
    elif how == "retype":
        a[name] = v.astype(rng.choice([np.int8, np.float32, np.uint64, np.bool_]))
    elif how == "reshape":
        a[name] = v.reshape(-1)[: v.size - v.size % 2].reshape(-1, 2) if v.size > 1 else v.reshape(1, -1)
    elif how == "random":
        a[name] = np.frombuffer(rng.randbytes(v.nbytes), v.dtype).reshape(v.shape) if v.size else v
    else:
        del a[name]


def one(tally: Tally, name: str, prepare: Callable[[Path, Path], None], cache: str | None = None) -> None:
    base = Path(tempfile.mkdtemp(prefix="hostile-store-"))
    try:
        root = base / "repo"
        store = build(root, cache)
        prepare(root, store)
        retouch(root)
        code, out, err = leakcheck("check", "--policy", str(root / "leakcheck.yaml"), "-j", "1", "--format", "json")
        kinds = sorted({f["kind"] for f in json.loads(out)["findings"]}) if code in (0, 1) else []
        # The byte copy must be reported as one whatever else is found: a store never hides it.
        tally.count(name, code, err, leak=True, missed=code in (0, 1) and "identical-file" not in kinds, kinds=kinds)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--random", type=int, default=60, help="untracked stores with one array mutated")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    tally = Tally("stores")
    one(tally, "matches emptied, untracked", lambda r, s: edit(s, "matches", empty))
    one(tally, "matches emptied, committed", lambda r, s: (edit(s, "matches", empty), commit(r, s)))
    one(tally, "digests swapped, committed", lambda r, s: (
        sql(s, "UPDATE files SET digest = (SELECT digest FROM files WHERE path = 'train/5.jpg')"), commit(r, s)))
    one(tally, "every signature zeroed, committed", lambda r, s: (
        sql(s, "UPDATE signatures SET data = zeroblob(length(data))"), commit(r, s)))
    one(tally, "committed under another name", lambda r, s: (edit(s, "matches", empty), commit(r, s)),
        cache="data/blob.bin")
    for name, (kind, change) in INCONSISTENT.items():
        one(tally, name, lambda r, s, kind=kind, change=change: edit(s, kind, change))
    kinds = ["signatures", "matches", "aligned-model", "aligned-pairs", "aligned-refined"]
    for k in range(args.random):
        kind = rng.choice(kinds)
        one(tally, f"random {k}: {kind}", lambda r, s, kind=kind: edit(s, kind, lambda a: mutate(rng, a)))
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
