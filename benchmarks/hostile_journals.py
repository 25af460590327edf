"""A campaign of hostile `split --apply` journals against `leakcheck split --rollback` (issue 34,
classes 1 and 9): count the outcomes.

Run by hand: ``python benchmarks/hostile_journals.py [--random 80] [--seed 0]``.  Each input is a
small split-folder repository (a git work tree) beside a folder ``outside`` holding the user's
files, and a journal at ``.leakcheck/split-apply.journal``: the fixed cases below (``../`` and
absolute paths, a root elsewhere, a link out of the root, git records for another work tree or
for files no move moved, a committed journal, a number or a non-latin-1 root, string and list
entries, a source in a missing folder, a symlinked ``.leakcheck``, a FIFO, a directory, deep
nesting, binary bytes), then ``--random`` journals drawn from a pool of hostile entries.
Counted (hostile_common.py): inputs tried, exit codes, exit 3, hangs, files moved outside the
repository (``outside`` changed, or a file inside the repository renamed by a journal that was
refused), leaks passed (not applicable here: always 0).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hostile_common import Tally, leakcheck, snapshot  # noqa: E402

from pytest_leakcheck.testing import photo, save  # noqa: E402

POLICY = "version: 1\nsplits: {train: [data/train/**], test: [data/test/**]}\n"
IDENT = ["-c", "user.name=c", "-c", "user.email=c@example.invalid", "-c", "commit.gpgsign=false"]


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *IDENT, *args], cwd=root, check=True, capture_output=True)


def build(base: Path) -> tuple[Path, Path]:
    root, outside = base / "repo", base / "outside"
    for k in range(2):
        save(photo(k, (32, 24)), root / f"data/train/t{k}.jpg", quality=90)
        save(photo(50 + k, (32, 24)), root / f"data/test/e{k}.jpg", quality=90)
    (root / "leakcheck.yaml").write_text(POLICY)
    (root / ".gitignore").write_text(".leakcheck/\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    (outside / "sub").mkdir(parents=True)
    (outside / "secret.txt").write_text("the user's file\n")
    (outside / "sub/key.txt").write_text("another\n")
    git(outside, "init", "-q")
    git(outside, "add", "-A")
    git(outside, "commit", "-qm", "outside")
    return root, outside


def _lines(*entries: object) -> str:
    return "".join(json.dumps(e) + "\n" for e in entries)


def fixed(root: Path, outside: Path) -> dict[str, Callable[[], str | None]]:
    """Case name -> a function writing the case's conditions and returning the journal's text (None: written)."""
    head = {"root": str(root)}
    rec = "100644 " + "0" * 40 + "\t"

    def committed() -> str | None:
        journal = root / ".leakcheck/split-apply.journal"
        journal.parent.mkdir(exist_ok=True)
        journal.write_text(_lines(head, {"src": "data/x.jpg", "dst": "data/test/e0.jpg"}))
        git(root, "add", "-f", ".leakcheck/split-apply.journal")
        git(root, "commit", "-qm", "pr")
        return None

    def linked_folder() -> str | None:
        shutil.rmtree(root / ".leakcheck", ignore_errors=True)
        (outside / "lc").mkdir()
        (outside / "lc/split-apply.journal").write_text(_lines(head, {"src": "data/y.jpg", "dst": "data/test/e0.jpg"}))
        (root / ".leakcheck").symlink_to(outside / "lc")
        return None

    def fifo() -> str | None:
        (root / ".leakcheck").mkdir(exist_ok=True)
        os.mkfifo(root / ".leakcheck/split-apply.journal")
        return None

    def folder() -> str | None:
        (root / ".leakcheck/split-apply.journal").mkdir(parents=True)
        return None

    def link_out() -> str:
        (root / "data/away").symlink_to(outside)
        return _lines(head, {"src": "data/x.txt", "dst": "data/away/secret.txt"})

    return {
        "dst ../outside": lambda: _lines(head, {"src": "data/x.txt", "dst": "../outside/secret.txt"}),
        "src ../outside": lambda: _lines(head, {"src": "../outside/new.txt", "dst": "data/test/e0.jpg"}),
        "absolute dst": lambda: _lines(head, {"src": "data/x.txt", "dst": str(outside / "secret.txt")}),
        "absolute src": lambda: _lines(head, {"src": str(outside / "taken.jpg"), "dst": "data/test/e1.jpg"}),
        "root elsewhere": lambda: _lines({"root": str(outside)}, {"src": "moved.txt", "dst": "secret.txt"}),
        "root /": lambda: _lines({"root": "/"}, {"src": "tmp/x", "dst": str(outside / "secret.txt")[1:]}),
        "dst through a link out": link_out,
        "git records, root elsewhere": lambda: _lines({"root": str(outside)}, {"index": True, "undo": rec + "secret.txt\0"},
                                                      {"indexed": True}),
        "git records for a file no move moved": lambda: _lines(head, {"index": True, "undo": rec + "leakcheck.yaml\0"},
                                                               {"indexed": True}),
        "mkdir ../outside/sub": lambda: _lines(head, {"mkdir": "../outside/sub"}),
        "committed journal": committed,
        ".leakcheck a link out": linked_folder,
        "journal a FIFO": fifo,
        "journal a folder": folder,
        "number root": lambda: '{"root": 5}\n',
        "non-latin-1 root": lambda: json.dumps({"root": str(root) + "\u0101"}) + "\n",
        "string entry": lambda: _lines(head, "data/test/e0.jpg"),
        "list entry": lambda: _lines(head, ["data/test/e0.jpg", "data/x.jpg"]),
        "number src": lambda: _lines(head, {"src": 5, "dst": "data/test/e0.jpg"}),
        "src in a missing folder": lambda: _lines(head, {"src": "data/gone/e0.jpg", "dst": "data/test/e0.jpg"},
                                                  {"src": "data/train/x.jpg", "dst": "data/test/e1.jpg"}),
        "NUL in a name": lambda: _lines(head, {"src": "data/x\u0000.jpg", "dst": "data/test/e0.jpg"}),
        "nested 100,000 deep": lambda: json.dumps(head) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n",
        "binary bytes": lambda: "\x00\x01\x02\xff garbage\n",
        "empty": lambda: "",
        "a move onto an existing file": lambda: _lines(head, {"src": "data/test/e1.jpg", "dst": "data/test/e0.jpg"}),
        "a folder as dst": lambda: _lines(head, {"src": "data/moved", "dst": "data/train"}),
    }


POOL_PATHS = ["data/test/e0.jpg", "data/test/e1.jpg", "data/train/t0.jpg", "data/x.jpg", "../outside/secret.txt",
              "../outside/sub", "/etc/passwd", "data/../../outside/secret.txt", "data/test/../../../outside",
              "", ".", "data", "data/test/e0.jpg\u0000", "d\u0101ta/x.jpg", "data/test/e0.jpg/..", "//outside",
              "data/away/secret.txt", "leakcheck.yaml", ".git/config", ".git/index"]


def random_journal(rng: random.Random, root: Path, outside: Path) -> str:
    heads = [{"root": str(root)}] * 4 + [{"root": str(outside)}, {"root": 7}, {"root": [str(root)]}, {}]
    lines: list[object] = [rng.choice(heads)]
    for _ in range(rng.randint(1, 6)):
        kind = rng.random()
        if kind < 0.5:
            lines.append({"src": rng.choice(POOL_PATHS), "dst": rng.choice(POOL_PATHS)})
        elif kind < 0.65:
            lines.append({"mkdir": rng.choice(POOL_PATHS)})
        elif kind < 0.8:
            name = rng.choice(["leakcheck.yaml", "data/test/e0.jpg", "../x", "secret.txt"])
            lines.append({"index": True, "undo": f"100644 {'a' * 40}\t{name}\0"})
            lines.append({"indexed": True})
        else:
            lines.append(rng.choice([None, 3, "x", [], {"src": None, "dst": 1}, {"rm": "data"}]))
    if rng.random() < 0.2:
        (root / "data/away").symlink_to(outside)
    return "".join(json.dumps(x) + "\n" for x in lines)


def one(tally: Tally, name: str, make: Callable[[Path, Path], str | None]) -> None:
    base = Path(tempfile.mkdtemp(prefix="hostile-journal-"))
    try:
        root, outside = build(base)
        text = make(root, outside)
        if text is not None:
            journal = root / ".leakcheck/split-apply.journal"
            journal.parent.mkdir(exist_ok=True)
            journal.write_text(text, encoding="utf-8", errors="surrogatepass")
        before_out, before_in = snapshot(outside), snapshot(root / "data")
        code, _, err = leakcheck("split", "--policy", str(root / "leakcheck.yaml"), "--rollback")
        moved_out = snapshot(outside) != before_out or (code != 0 and snapshot(root / "data") != before_in)
        tally.count(name, code, err, moved_out=moved_out)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--random", type=int, default=80, help="journals drawn from the pool of hostile entries")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    tally = Tally("journals")
    names = list(fixed(Path("/r"), Path("/o")))
    for name in names:
        one(tally, name, lambda root, outside, name=name: fixed(root, outside)[name]())
    for k in range(args.random):
        one(tally, f"random {k}", lambda root, outside: random_journal(rng, root, outside))
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
