"""SIGTERM at random moments of cold checks under load (issue 22, class 7): count the outcomes.

Run by hand: ``python benchmarks/sigterm_campaign.py [--iterations 200] [--images 300] [--seed 0]``.

It builds two copies of a small generated dataset (``--images`` photos, two of them planted byte
copies and one a re-encoded copy), measures a clean cold check of each, then per iteration:

- starts two cold checks at once (``--jobs 2`` each, so four workers on a 2-core machine: load),
- sends each driver SIGTERM at its own random moment in [0, the clean cold check's duration],
- and counts, per driver: the seconds from SIGTERM to exit (must be under 5), the exit code
  (143, or 0/1 when the check had finished), a traceback or exit 3 (must be 0), and workers
  still alive after the driver is gone (every process it ever had as a descendant, sampled
  every 10 ms; must be 0);
- then runs each check again (its store as the killed run left it) and compares its findings
  with the clean run's (must be equal) and the store's integrity (must be ok).

Prints one JSON summary line; exit 1 if any rule was broken.  Figures are for the machine it
runs on: the timing of a kill is random, the rules are not.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import closing
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_leakcheck.testing import jpeg_quality, photo, save

PACKAGE = str(Path(__file__).resolve().parent.parent)
POLICY = "version: 1\nsplits: {train: [train/**], test: [test/**]}\n"
DEADLINE = 5.0


def build(root: Path, images: int) -> None:
    train = images - images // 10
    for i in range(train):
        save(photo(i, (96, 72)), root / f"train/{i:04d}.jpg", quality=90)
    for i in range(images // 10):
        save(photo(100_000 + i, (96, 72)), root / f"test/{i:04d}.jpg", quality=90)
    shutil.copyfile(root / "train/0007.jpg", root / "test/copy_a.jpg")
    shutil.copyfile(root / f"train/{train // 2:04d}.jpg", root / "test/copy_b.jpg")
    save(jpeg_quality(photo(42, (96, 72)), 50), root / "test/reencoded.jpg", quality=90)
    (root / "leakcheck.yaml").write_text(POLICY)


def _argv(root: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "pytest_leakcheck", "check", "--policy", str(root / "leakcheck.yaml"),
            "--jobs", "2", "--quiet", *extra]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": PACKAGE}


def findings(root: Path) -> tuple[list, float]:
    t0 = time.monotonic()
    done = subprocess.run(_argv(root, "--format", "json"), capture_output=True, text=True, env=_env(), timeout=900)
    if done.returncode not in (0, 1):
        raise SystemExit(f"check failed ({done.returncode}): {done.stderr}")
    report = json.loads(done.stdout)
    return sorted((f["kind"], [m["path"] for m in f["members"]]) for f in report["findings"]), time.monotonic() - t0


def _descendants(pid: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry.name)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    try:
        return (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]) != "Z"
    except OSError:
        return False


class Run:
    """One cold check, killed at ``delay`` seconds; its descendants sampled while it runs."""

    def __init__(self, root: Path, delay: float) -> None:
        store = root / ".leakcheck"
        if store.exists():
            shutil.rmtree(store)
        self.delay = delay
        self.proc = subprocess.Popen(_argv(root), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                     env=_env(), start_new_session=True)
        self.started = time.monotonic()
        self.workers: set[int] = set()
        self.sent = self.ended = None
        self.watch = threading.Thread(target=self._sample, daemon=True)
        self.watch.start()

    def _sample(self) -> None:
        while self.proc.poll() is None:
            self.workers |= _descendants(self.proc.pid)
            time.sleep(0.01)
        self.ended = time.monotonic()  # within ~10 ms of the exit

    def kill_at_delay(self) -> None:
        time.sleep(max(0.0, self.started + self.delay - time.monotonic()))
        if self.proc.poll() is None:
            self.sent = time.monotonic()
            os.kill(self.proc.pid, signal.SIGTERM)

    def finish(self) -> dict:
        try:
            _, err = self.proc.communicate(timeout=DEADLINE + 60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            _, err = self.proc.communicate()
            return {"hung": True, "seconds": None, "code": None, "traceback": False, "left": 0}
        self.watch.join()
        seconds = None if self.sent is None else self.ended - self.sent
        left = [p for p in self.workers if _alive(p)]
        for p in left:
            os.kill(p, signal.SIGKILL)
        return {"hung": seconds is not None and seconds > DEADLINE, "seconds": seconds, "code": self.proc.returncode,
                "traceback": "Traceback" in err or self.proc.returncode == 3, "left": len(left)}


def integrity(root: Path) -> bool:
    store = root / ".leakcheck/cache.sqlite"
    if not store.exists():
        return True
    with closing(sqlite3.connect(store)) as conn:
        return conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def campaign(iterations: int, images: int, seed: int, base: Path, progress: bool = False) -> dict:
    rng = random.Random(seed)
    roots = [base / "a", base / "b"]
    for root in roots:
        build(root, images)
    clean, seconds = [], []
    for root in roots:
        shutil.rmtree(root / ".leakcheck", ignore_errors=True)
        found, took = findings(root)
        clean.append(found)
        seconds.append(took)
    span = max(seconds)
    out = {"iterations": iterations, "images": images, "clean_cold_seconds": [round(s, 2) for s in seconds],
           "signals": 0, "finished_first": 0, "exit_143": 0, "hangs": 0, "crashes_exit_3": 0,
           "workers_left": 0, "wrong_findings": 0, "bad_store": 0, "max_seconds_to_exit": 0.0, "seconds": []}
    for n in range(iterations):
        runs = [Run(root, rng.uniform(0, span)) for root in roots]
        killers = [threading.Thread(target=r.kill_at_delay) for r in runs]
        for k in killers:
            k.start()
        for k in killers:
            k.join()
        for root, run, want in zip(roots, runs, clean):
            got = run.finish()
            if run.sent is None:
                out["finished_first"] += 1
                # The machine got faster than when the clean runs were timed: aim within what runs take now.
                span = min(span, (run.ended or time.monotonic()) - run.started)
            else:
                out["signals"] += 1
                out["seconds"].append(round(got["seconds"], 3) if got["seconds"] is not None else None)
            out["exit_143"] += got["code"] == 143
            out["hangs"] += got["hung"]
            out["crashes_exit_3"] += got["traceback"]
            out["workers_left"] += got["left"]
            if got["seconds"] is not None:
                out["max_seconds_to_exit"] = max(out["max_seconds_to_exit"], round(got["seconds"], 3))
            out["bad_store"] += not integrity(root)
            out["wrong_findings"] += findings(root)[0] != want
        if progress:  # one line per iteration, so an interrupted campaign still has its figures
            print(json.dumps({"iteration": n + 1, **{k: v for k, v in out.items() if k != "seconds"}}),
                  file=sys.stderr, flush=True)
    times = sorted(s for s in out.pop("seconds") if s is not None)
    if times:
        out["median_seconds_to_exit"] = times[len(times) // 2]
    out["ok"] = not any(out[k] for k in ("hangs", "crashes_exit_3", "workers_left", "wrong_findings", "bad_store"))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=200, help="pairs of checks, each driver signalled once")
    parser.add_argument("--images", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--progress", action="store_true", help="the running totals on stderr after each iteration")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sigterm-campaign-") as tmp:
        result = campaign(args.iterations, args.images, args.seed, Path(tmp), progress=args.progress)
    print(json.dumps(result))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
