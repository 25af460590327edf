"""A/B of a cold `leakcheck check -j 2` between two source trees, a bare full decode beside each run.

Run by hand, on hard-linked copies of datasets (the check writes ``.leakcheck/`` in each and this
deletes it before every run; never point it at data another process uses)::

    python benchmarks/cold_ab.py --data DIR --sets webcam,cells,chess [--rounds 2] \
        [--a main=/work/main] [--b mine=.] [--out OUT]

Each ``DIR/<set>`` holds a ``leakcheck.yaml`` (``leakcheck init`` writes one). Per round and set the
two trees run alternately (the order flips every round, so a load that drifts favours neither),
each cold under ``/usr/bin/time -v`` beside a bare full decode of the same files in two processes
(``field.py``'s): wall and CPU seconds (user + system of every process; steadier on a shared
machine), the stage line of ``--verbose``, peak RSS. Then, per set, the minimum of each tree and
whether the two trees agree: the JSON reports without their timings, and the store's signature
rows, which must be identical for a speed change.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import field  # noqa: E402

#: Report keys that hold timings or clock stamps, left out of the comparison.
VOLATILE = ("seconds", "_at")


def without_timings(x: object) -> object:
    if isinstance(x, dict):
        return {k: without_timings(v) for k, v in x.items() if not any(t in k for t in VOLATILE)}
    if isinstance(x, list):
        return [without_timings(v) for v in x]
    return x


def signature_rows(store: Path) -> dict[tuple, bytes]:
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return {tuple(r[:-1]): r[-1] for r in conn.execute("SELECT digest, family, params, ok, data FROM signatures")}
    finally:
        conn.close()


def cold(tree: Path, root: Path, report: Path) -> dict:
    """One cold check of ``root`` by the code of ``tree``; its store is kept beside the report."""
    shutil.rmtree(root / ".leakcheck", ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    start = time.monotonic()
    done = subprocess.run(["/usr/bin/time", "-v", sys.executable, "-m", "pytest_leakcheck", "check", "--policy",
                           str(root / "leakcheck.yaml"), "--format", "json", "-o", str(report), "-j", "2",
                           "--verbose"], env=env, capture_output=True, text=True)
    wall = time.monotonic() - start
    store = report.with_suffix(".sqlite")
    shutil.copyfile(root / ".leakcheck" / "cache.sqlite", store)
    stages = [line for line in done.stderr.splitlines() if " images in " in line]
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    return {"wall": round(wall, 2), "cpu": field.cpu_seconds(done.stderr), "exit": done.returncode,
            "rss_mb": int(rss.group(1)) // 1024 if rss else 0, "stages": stages[-1] if stages else done.stderr[-500:]}


def agree(a: Path, b: Path) -> str:
    """Whether two runs' reports (without timings) and signature rows are the same."""
    ra, rb = (without_timings(json.loads(p.read_text())) for p in (a, b))
    sa, sb = (signature_rows(p.with_suffix(".sqlite")) for p in (a, b))
    return (f"report {'identical' if ra == rb else 'DIFFERS'}, "
            f"signature rows {'identical' if sa == sb else 'DIFFER'} ({len(sa)} / {len(sb)})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--sets", required=True, help="comma-separated folders of --data")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--a", default="main=/work/main", help="NAME=TREE")
    parser.add_argument("--b", default=f"mine={field.REPO}", help="NAME=TREE")
    parser.add_argument("--out", type=Path, default=Path("/tmp/leakcheck-cold-ab"))
    args = parser.parse_args()
    trees = dict(t.split("=", 1) for t in (args.a, args.b))
    args.out.mkdir(parents=True, exist_ok=True)
    runs: list[dict] = []
    for r in range(args.rounds):
        for name in args.sets.split(","):
            root = args.data / name
            paths = field.images_under(root)
            for tree in (list(trees) if r % 2 == 0 else list(trees)[::-1]):
                bare_wall, bare_cpu = field.bare_decode(paths, 900)
                run = {"set": name, "tree": tree, "round": r, "bare_wall": round(bare_wall, 2), "bare_cpu": bare_cpu,
                       **cold(Path(trees[tree]), root, args.out / f"{name}-{tree}-{r}.json")}
                runs.append(run)
                print(json.dumps(run), flush=True)
    print("\nset | tree | min wall s (bare) | min CPU s (bare) | wall ratio | CPU ratio | agreement")
    for name in args.sets.split(","):
        for tree in trees:
            mine = [x for x in runs if x["set"] == name and x["tree"] == tree]
            w, c = min(mine, key=lambda x: x["wall"]), min(mine, key=lambda x: x["cpu"])
            print(f"{name} | {tree} | {w['wall']} ({w['bare_wall']}) | {c['cpu']} ({c['bare_cpu']}) | "
                  f"{round(w['wall'] / w['bare_wall'], 1)} | {round(c['cpu'] / c['bare_cpu'], 1)} |", end=" ")
            first = list(trees)[0]
            print("" if tree == first else agree(args.out / f"{name}-{first}-0.json", args.out / f"{name}-{tree}-0.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
