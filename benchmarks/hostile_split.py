"""A campaign of hostile trees against `leakcheck split --apply` (issue 22, class 5): count the outcomes.

Run by hand: ``python benchmarks/hostile_split.py [--random 60] [--seed 0]``.  Each case builds a
small split-folder dataset in a temporary folder (train files with byte copies in test, which
the plan moves into train), adds one hostile condition, and runs ``leakcheck split --apply`` in a
child process (60 s limit).  Cases: the fixed ones below (case-folded clashes, a target folder
that is a link out of or inside the repository, a target parent that is a file, globs written
``./train/**``, a glob matching nothing, a locked git index, a read-only folder or a file system
out of inodes mid-plan when run as root, SIGKILL at a random moment then ``--rollback``), plus
``--random`` mixes of them.  Counted, per case and in total:

- inputs tried, exit codes;
- crashes: exit 3 or a traceback (must be 0); hangs: over 60 s (must be 0);
- files of the user's lost or overwritten: the multiset of file contents under the root
  before and after (must be equal);
- half-applied plans: a run that did not exit 0 but left the tree changed (must be 0);
- files moved out of the repository: anything new in a folder beside the root (must be 0);
- after a successful apply, a `leakcheck check` that still finds a copy across splits.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_leakcheck.testing import photo, save

PACKAGE = str(Path(__file__).resolve().parent.parent)
POLICY = "version: 1\nsplits: {train: [data/train/**], test: [data/test/**]}\n"
LIMIT = 60


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": PACKAGE}


def build(base: Path, copies: int, rng: random.Random) -> Path:
    root = base / "repo"
    for k in range(4):
        save(photo(k, (48, 36)), root / f"data/train/dog/t{k}.jpg", quality=90)
        save(photo(50 + k, (48, 36)), root / f"data/test/dog/e{k}.jpg", quality=90)
    folders = ["cat", "zebra", "Cat", "owl"]
    for n in range(copies):
        src = save(photo(100 + n, (48, 36)), root / f"data/train/dog/x{n}.jpg", quality=90)
        dst = root / f"data/test/{rng.choice(folders)}/c{n}.jpg"
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
    (root / "leakcheck.yaml").write_text(POLICY)
    (base / "outside").mkdir()
    return root


def contents(root: Path) -> Counter:
    out: Counter = Counter()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in (".leakcheck", ".git")]
        for name in filenames:
            path = Path(dirpath, name)
            if not path.is_symlink():
                out[hashlib.sha256(path.read_bytes()).hexdigest()] += 1
    return out


def tree(root: Path) -> dict[str, str]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in (".leakcheck", ".git")]
        for name in [*filenames, *dirnames]:
            path = Path(dirpath, name)
            out[path.relative_to(root).as_posix()] = "link" if path.is_symlink() else "dir" if path.is_dir() else "file"
    return out


# --------------------------------------------------------------------------
# Hostile conditions: each changes the tree (or the run) before the apply


def case_clash(root: Path, base: Path) -> None:
    # Copies of single train files: each pair is a tie, which train wins, so both move to train/dog.
    shutil.copyfile(root / "data/train/dog/t0.jpg", root / "data/test/dog/IMG.jpg")
    shutil.copyfile(root / "data/train/dog/t1.jpg", root / "data/test/dog/img.jpg")


def case_existing_other_case(root: Path, base: Path) -> None:
    shutil.copyfile(root / "data/train/dog/t2.jpg", root / "data/test/dog/Copy.jpg")
    save(photo(999, (48, 36)), root / "data/train/dog/COPY.jpg", quality=90)


def case_link_out(root: Path, base: Path) -> None:
    for name in ("cat", "zebra", "Cat", "owl"):
        if not (root / f"data/train/{name}").exists():
            (root / f"data/train/{name}").symlink_to(base / "outside")


def case_link_in(root: Path, base: Path) -> None:
    (root / "elsewhere").mkdir(exist_ok=True)
    for name in ("cat", "zebra", "Cat", "owl"):
        if not (root / f"data/train/{name}").exists():
            (root / f"data/train/{name}").symlink_to(root / "elsewhere")


def case_parent_file(root: Path, base: Path) -> None:
    for name in ("zebra", "owl"):
        if not (root / f"data/train/{name}").exists():
            (root / f"data/train/{name}").write_text("not a folder\n")


def case_dot_globs(root: Path, base: Path) -> None:
    (root / "leakcheck.yaml").write_text(POLICY.replace("[data/", "[./data/"))


def case_empty_glob(root: Path, base: Path) -> None:
    (root / "leakcheck.yaml").write_text(POLICY.replace("data/test/**", "data/tset/**"))


def case_git_locked(root: Path, base: Path) -> None:
    ident = ["-c", "user.name=c", "-c", "user.email=c@example.invalid", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / ".gitignore").write_text(".leakcheck/\n")
    subprocess.run(["git", *ident, "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", *ident, "commit", "-qm", "x"], cwd=root, check=True)
    (root / ".git/index.lock").write_text("")


def case_read_only(root: Path, base: Path) -> None:
    """A source folder on a read-only bind mount (root only): the moves out of it cannot happen."""
    folder = root / "data/test/zebra"
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "--bind", str(folder), str(folder)], check=True)
    subprocess.run(["mount", "-o", "remount,ro,bind", str(folder)], check=True)


CASES: dict[str, Callable[[Path, Path], None]] = {
    "case clash between two moves": case_clash,
    "case clash with an existing file": case_existing_other_case,
    "target folder links out of the repository": case_link_out,
    "target folder links inside the repository": case_link_in,
    "target parent is a file": case_parent_file,
    "globs written ./data/train/**": case_dot_globs,
    "a glob that matches nothing": case_empty_glob,
    "git index locked": case_git_locked,
}
if os.geteuid() == 0:
    CASES["read-only source folder (bind mount)"] = case_read_only


def run_apply(root: Path, *extra: str) -> tuple[int | None, str, float]:
    t0 = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-m", "pytest_leakcheck", "split", "--policy",
                               str(root / "leakcheck.yaml"), "-j", "1", "--apply", *extra], capture_output=True,
                              text=True, timeout=LIMIT, env=_env())
    except subprocess.TimeoutExpired:
        return None, "", LIMIT
    return done.returncode, done.stderr, time.monotonic() - t0


def leaks_left(root: Path) -> bool:
    done = subprocess.run([sys.executable, "-m", "pytest_leakcheck", "check", "--policy", str(root / "leakcheck.yaml"),
                           "-j", "1", "--format", "json"], capture_output=True, text=True, timeout=LIMIT, env=_env())
    if done.returncode not in (0, 1):
        return False
    return any(f["kind"] == "identical-file" and len({m["split"] for m in f["members"]}) > 1
               for f in json.loads(done.stdout)["findings"])


def one(name: str, conditions: list[Callable[[Path, Path], None]], rng: random.Random, totals: Counter) -> dict:
    base = Path(tempfile.mkdtemp(prefix="hostile-split-"))
    mounted: list[Path] = []
    try:
        root = build(base, rng.randint(2, 8), rng)
        for condition in conditions:
            condition(root, base)
            if condition is case_read_only:
                mounted.append(root / "data/test/zebra")
        before, shape = contents(root), tree(root)
        code, err, seconds = run_apply(root)
        result = {"case": name, "exit": code, "seconds": round(seconds, 2)}
        totals["inputs"] += 1
        totals[f"exit {code}"] += 1
        totals["crashes"] += code == 3 or "Traceback" in err
        totals["hangs"] += code is None
        lost = before != contents(root)
        totals["files lost or overwritten"] += lost
        totals["half applied"] += code not in (0, None) and tree(root) != shape
        totals["moved out of the repository"] += any((base / "outside").iterdir())
        if code == 0 and leaks_left(root):
            totals["copies left across splits after apply"] += 1
        result["error"] = err.strip().splitlines()[-1][:160] if err.strip() else ""
        return result
    finally:
        for folder in mounted:
            subprocess.run(["umount", "-l", str(folder)], check=False)
        shutil.rmtree(base, ignore_errors=True)


def killed(rng: random.Random, totals: Counter) -> dict:
    """SIGKILL at a random moment of a long apply, then `split --rollback`."""
    base = Path(tempfile.mkdtemp(prefix="hostile-split-"))
    try:
        root = build(base, 60, rng)
        before, shape = contents(root), tree(root)
        argv = [sys.executable, "-m", "pytest_leakcheck", "split", "--policy", str(root / "leakcheck.yaml"), "-j", "1"]
        subprocess.run(argv, env=_env(), capture_output=True, check=True)  # warm the store
        journal = root / ".leakcheck/split-apply.journal"
        child = subprocess.Popen([*argv, "--apply"], env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + LIMIT
        while not journal.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.001)
        time.sleep(rng.uniform(0, 0.1))  # a random moment of the moves
        child.kill()
        child.wait()
        totals["inputs"] += 1
        state = "finished" if not journal.exists() else "interrupted"
        if journal.exists():
            done = subprocess.run([*argv, "--rollback"], env=_env(), capture_output=True, text=True, timeout=LIMIT)
            totals["crashes"] += done.returncode == 3 or "Traceback" in done.stderr
            totals["half applied"] += tree(root) != shape
        totals["files lost or overwritten"] += before != contents(root)
        totals[f"kill: {state}"] += 1
        return {"case": "SIGKILL mid-apply, then --rollback", "state": state}
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--random", type=int, default=60, help="cases mixing two or three hostile conditions")
    parser.add_argument("--kills", type=int, default=10, help="SIGKILLs at random moments of an apply")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    totals: Counter = Counter()
    for name, condition in CASES.items():
        print(json.dumps(one(name, [condition], rng, totals)), flush=True)
    names = list(CASES)
    for _ in range(args.random):
        picked = rng.sample(names, rng.randint(2, 3))
        print(json.dumps(one(" + ".join(picked), [CASES[n] for n in picked], rng, totals)), flush=True)
    for _ in range(args.kills):
        print(json.dumps(killed(rng, totals)), flush=True)
    print(json.dumps({"totals": dict(totals)}))
    bad = ("crashes", "hangs", "files lost or overwritten", "half applied", "moved out of the repository",
           "copies left across splits after apply")
    return 1 if any(totals[k] for k in bad) else 0


if __name__ == "__main__":
    sys.exit(main())
