"""A campaign of inputs that try to exhaust time, memory or the disk (issue 22, class 6).

Run by hand: ``python benchmarks/hostile_bounds.py [--limit 60] [--copies 1000]``.  Each input runs
``leakcheck`` in a child process with a time limit, on a small generated dataset in a temporary
folder:

- group regexes built to backtrack (nested quantifiers, alternations, ``(.*a){25}``), against a
  file name of 48 and of 4,000 characters, plus ones RE2 refuses (lookaround, backreferences,
  a huge repetition);
- JSON nested 100 to 200,000 deep (lists, objects, both) in a COCO split file, a
  ``metadata.jsonl`` line, a COCO group file and a saved report;
- the store on a "disk" that fills at 1 KB to 300 KB (``RLIMIT_FSIZE``; and real tmpfs mounts of
  16 KB to 512 KB when run as root), and in a read-only folder;
- ``--copies`` + ``--copies`` byte-identical images (peak memory of the check, from ``wait4``).

Counted: inputs, exit codes, crashes (exit 3 or a traceback: must be 0), hangs (over ``--limit``
seconds: must be 0), runs that left files in the cache folder after failing (must be 0), the
slowest run, and the peak memory of the identical-copies check.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_leakcheck.testing import photo, save

PACKAGE = str(Path(__file__).resolve().parent.parent)
GLOBS = "version: 1\nsplits: {train: [train/**], test: [test/**]}\n"
REGEXES = [
    r"(?P<group>(a+)+b)", r"(?P<group>(a|aa)+c)", r"(?P<group>(a|a?)+$)X", r"(?P<group>(.*a){25})",
    r"(?P<group>(\w+\s?)+$)!", r"(?P<group>([a-z]+)*[0-9])", r"(?P<group>(x+x+)+y)", r"(?P<group>(a*)*b)",
    r"(?P<group>a)(?=b)", r"(?P<group>(a)\2)", r"(?P<group>a{1000}{1000})", r"(?P<group>(?<!x)a)",
]


class Campaign:
    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.totals: Counter = Counter()
        self.slowest = (0.0, "")

    def run(self, label: str, cwd: Path, *args: str, fsize: int | None = None, env: dict | None = None,
            cache: Path | None = None) -> dict:
        def cap() -> None:
            if fsize is not None:
                resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

        t0 = time.monotonic()
        try:
            done = subprocess.run([sys.executable, "-m", "pytest_leakcheck", *args], cwd=cwd, capture_output=True,
                                  text=True, timeout=self.limit, preexec_fn=cap,
                                  env={**os.environ, "PYTHONPATH": PACKAGE, **(env or {})})
            code, err = done.returncode, done.stderr
        except subprocess.TimeoutExpired:
            code, err = None, ""
        seconds = time.monotonic() - t0
        self.totals["inputs"] += 1
        self.totals[f"exit {code}"] += 1
        self.totals["crashes"] += code == 3 or "Traceback" in err
        self.totals["hangs"] += code is None
        left = sorted(p.name for p in cache.iterdir()) if cache is not None and cache.is_dir() else []
        if code not in (0, 1) and left:
            self.totals["files left after a failure"] += 1
        if seconds > self.slowest[0]:
            self.slowest = (round(seconds, 2), label)
        return {"input": label, "exit": code, "seconds": round(seconds, 2), "left": left,
                "error": err.strip().splitlines()[-1][:140] if err.strip() else ""}


def dataset(root: Path, policy: str = GLOBS) -> Path:
    for k in range(6):
        save(photo(k, (48, 36)), root / f"train/{k}.jpg", quality=90)
    save(photo(100, (48, 36)), root / "test/x.jpg", quality=90)
    shutil.copyfile(root / "train/2.jpg", root / "test/copy.jpg")
    (root / "leakcheck.yaml").write_text(policy)
    return root


def regexes(c: Campaign, base: Path) -> None:
    for length in (48, 4000):
        root = dataset(base / f"regex-{length}")
        # Names are at most 255 bytes: a long path is folders of a's (the regex sees the whole path).
        parts = ["a" * 200] * (length // 201) + ["a" * (length % 201)]
        save(photo(7, (48, 36)), root / "train" / ("/".join(p for p in parts if p) + ".jpg"), quality=90)
        for pattern in REGEXES:
            quoted = pattern.replace("'", "''")
            (root / "leakcheck.yaml").write_text(GLOBS + f"groups:\n  - regex: '{quoted}'\nungrouped: own-group\n")
            print(json.dumps(c.run(f"regex {pattern} / path of {length}", root, "check", "--no-cache", "-j", "1")),
                  flush=True)


def _nested(depth: int, kind: str) -> str:
    if kind == "list":
        return "[" * depth + "]" * depth
    if kind == "object":
        return '{"a":' * depth + "1" + "}" * depth
    half = depth // 2
    return '{"a":[' * half + "1" + "]}" * half


def nesting(c: Campaign, base: Path) -> None:
    for depth in (100, 999, 1001, 5000, 200_000):
        for kind in ("list", "object", "mixed"):
            deep = _nested(depth, kind)
            root = base / f"json-{depth}-{kind}"
            save(photo(1, (48, 36)), root / "images/a.jpg", quality=90)
            save(photo(2, (48, 36)), root / "images/b.jpg", quality=90)
            inputs = {
                "coco split": ("train.json", '{"images": ' + deep + "}",
                               "version: 1\nsplits:\n  coco: {train: train.json, test: test.json}\n"),
                "metadata.jsonl": ("images/metadata.jsonl",
                                   '{"file_name": "a.jpg", "split": "train"}\n' + deep
                                   + '\n{"file_name": "b.jpg", "split": "test"}\n',
                                   "version: 1\nsplits:\n  metadata: images/metadata.jsonl\n"),
                "coco group": ("ann.json", '{"images": [' + deep + "]}",
                               "version: 1\nsplits: {train: [images/a.jpg], test: [images/b.jpg]}\n"
                               "groups:\n  - coco: ann.json\n    field: video_id\n"),
            }
            (root / "test.json").write_text('{"images": [{"file_name": "images/b.jpg"}]}')
            for where, (name, text, policy) in inputs.items():
                (root / name).write_text(text)
                (root / "leakcheck.yaml").write_text(policy)
                print(json.dumps(c.run(f"JSON {kind} {depth} deep in {where}", root, "check", "--no-cache", "-j", "1")),
                      flush=True)
            (root / "report.json").write_text('{"schema": "x", "findings": ' + deep + "}")
            print(json.dumps(c.run(f"JSON {kind} {depth} deep in a saved report", root, "render", "report.json")),
                  flush=True)


def disks(c: Campaign, base: Path) -> None:
    policy = GLOBS + "cache: cache/store.sqlite\n"
    for limit in (1024, 4096, 10_000, 20_000, 40_000, 80_000, 150_000, 300_000):
        root = dataset(base / f"fsize-{limit}", policy)
        (root / "cache").mkdir()
        print(json.dumps(c.run(f"file size limit {limit} B", root, "check", "-j", "1", "-q", fsize=limit,
                               cache=root / "cache")), flush=True)
    root = dataset(base / "read-only", policy)
    folder = root / "cache"
    folder.mkdir()
    if os.geteuid() == 0:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "ro", "tmpfs", str(folder)], check=True)
    else:
        folder.chmod(0o555)
    try:
        print(json.dumps(c.run("read-only cache folder", root, "check", "-j", "1", "-q", cache=folder)), flush=True)
    finally:
        if os.geteuid() == 0:
            subprocess.run(["umount", "-l", str(folder)], check=False)
        else:
            folder.chmod(0o755)
    if os.geteuid() != 0:
        return
    for size in ("16k", "64k", "128k", "256k", "512k"):
        root = dataset(base / f"tmpfs-{size}", GLOBS)
        for k in range(30):
            save(photo(300 + k, (256, 192)), root / f"train/big{k}.jpg", quality=90)
        mnt = base / f"mnt-{size}"
        mnt.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)], check=True)
        try:
            print(json.dumps(c.run(f"tmpfs of {size}", root, "check", "-j", "1", "-q",
                                   env={"LEAKCHECK_CACHE": str(mnt / "store.sqlite")}, cache=mnt)), flush=True)
        finally:
            subprocess.run(["umount", "-l", str(mnt)], check=False)


def copies(c: Campaign, base: Path, n: int) -> dict:
    root = base / "copies"
    src = save(photo(1, (64, 48)), root / "src.jpg", quality=90)
    for split in ("train", "test"):
        (root / split).mkdir(parents=True)
        for i in range(n):
            shutil.copyfile(src, root / f"{split}/{i:06d}.jpg")
    src.unlink()
    (root / "leakcheck.yaml").write_text(GLOBS)
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "pytest_leakcheck", "check", "--no-cache", "-j", "2", "-q"],
                            cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONPATH": PACKAGE})
    _, status, usage = os.wait4(proc.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    c.totals["inputs"] += 1
    c.totals[f"exit {code}"] += 1
    c.totals["crashes"] += code == 3
    return {"input": f"{n} + {n} identical images", "exit": code, "peak_mb": round(usage.ru_maxrss / 1024),
            "seconds": round(time.monotonic() - t0, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=float, default=60.0, help="seconds before a run counts as a hang")
    parser.add_argument("--copies", type=int, default=1000)
    args = parser.parse_args()
    c = Campaign(args.limit)
    base = Path(tempfile.mkdtemp(prefix="hostile-bounds-"))
    try:
        regexes(c, base)
        nesting(c, base)
        disks(c, base)
        memory = copies(c, base, args.copies)
        print(json.dumps(memory), flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    summary = {"totals": dict(c.totals), "slowest": c.slowest, "identical_peak_mb": memory["peak_mb"]}
    print(json.dumps(summary))
    return 1 if any(c.totals[k] for k in ("crashes", "hangs", "files left after a failure")) else 0


if __name__ == "__main__":
    sys.exit(main())
