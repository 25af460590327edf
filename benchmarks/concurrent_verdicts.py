"""Concurrent `leakcheck judge` and `baseline` runs (issue 22, class 7): count the verdicts lost.

Run by hand: ``python benchmarks/concurrent_verdicts.py [--rounds 10] [--judges 6]``.  A dataset with
``--judges`` planted copies (one finding each) gets a warm store; then, per round, the baseline is
removed and ``--judges`` judges (one per finding, alternately duplicate and distinct) plus one
``leakcheck baseline`` start at once.  Counted: runs, exit codes, crashes (exit 3), verdicts the
runs reported as recorded but the baseline lacks afterwards (must be 0), files left beside the
baseline (must be 0), and the seconds a round took (the lock makes the writers take turns).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_leakcheck.testing import photo, save

PACKAGE = str(Path(__file__).resolve().parent.parent)
POLICY = "version: 1\nsplits: {train: [train/**], test: [test/**]}\nbaseline: .leakcheck-baseline.yaml\n"


def _cli(root: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pytest_leakcheck", *args, "--policy", str(root / "leakcheck.yaml"),
                             "-j", "1", "-q"], env={**os.environ, "PYTHONPATH": PACKAGE}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--judges", type=int, default=6)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="concurrent-verdicts-"))
    totals: Counter = Counter()
    seconds = []
    try:
        for i in range(40):
            save(photo(i, (64, 48)), root / f"train/{i:02d}.jpg", quality=90)
        (root / "test").mkdir()
        for i in range(args.judges):
            shutil.copyfile(root / f"train/{i:02d}.jpg", root / f"test/copy{i}.jpg")
        (root / "leakcheck.yaml").write_text(POLICY)
        out, _ = _cli(root, "check", "--format", "json").communicate()
        ids = sorted(f["id"] for f in json.loads(out)["findings"])
        for _ in range(args.rounds):
            (root / ".leakcheck-baseline.yaml").unlink(missing_ok=True)
            t0 = time.monotonic()
            want = {fid: ("duplicate", "distinct")[k % 2] for k, fid in enumerate(ids)}
            procs = [_cli(root, "judge", fid, verdict, "--reason", "campaign") for fid, verdict in want.items()]
            procs.append(_cli(root, "baseline"))
            recorded = {}
            for fid, proc in zip([*want, None], procs):
                _, err = proc.communicate(timeout=600)
                totals["runs"] += 1
                totals[f"exit {proc.returncode}"] += 1
                totals["crashes"] += proc.returncode == 3 or "Traceback" in err
                if fid is not None and proc.returncode == 0:
                    recorded[fid] = want[fid]
            seconds.append(round(time.monotonic() - t0, 1))
            entries = yaml.safe_load((root / ".leakcheck-baseline.yaml").read_text())["findings"]
            totals["verdicts reported"] += len(recorded)
            totals["verdicts lost"] += sum(1 for fid, v in recorded.items() if entries.get(fid, {}).get("verdict") != v)
            totals["files left beside the baseline"] += sum(
                1 for p in root.iterdir() if p.name.startswith(".leakcheck-baseline.yaml."))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps({"totals": dict(totals), "round_seconds": [min(seconds), max(seconds)]}))
    return 1 if totals["verdicts lost"] or totals["crashes"] or totals["files left beside the baseline"] else 0


if __name__ == "__main__":
    sys.exit(main())
