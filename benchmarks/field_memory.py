"""Where a check's memory goes: `leakcheck check` in this process under tracemalloc, with the
allocations live at the largest traced moment (a snapshot every 2 s while it grows), grouped
by traceback. Run by hand on a dataset `benchmarks/field.py` prepared, e.g. the 100-photo
sample of `chess`:

    python benchmarks/field.py --only chess --max-images 100 --out /work/field-runs/chess100
    python benchmarks/field_memory.py /work/field-runs/chess100/chess/subset-100/leakcheck.yaml

The store beside the policy is removed first, so the check is cold. Workers (`-j 2`) are
separate processes and not traced; the figures are the driver's (docs/field.md, finding 7).
"""

from __future__ import annotations

import argparse
import resource
import shutil
import threading
import tracemalloc
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("policy", type=Path)
    parser.add_argument("--top", type=int, default=6)
    args = parser.parse_args()
    shutil.rmtree(args.policy.parent / ".leakcheck", ignore_errors=True)
    tracemalloc.start(8)
    best: dict = {"current": 0, "snapshot": None}
    done = threading.Event()

    def watch() -> None:
        while not done.wait(2.0):
            current, _ = tracemalloc.get_traced_memory()
            if current > best["current"] * 1.1 + 20e6:  # a snapshot costs; only when clearly larger
                best.update(current=current, snapshot=tracemalloc.take_snapshot())

    threading.Thread(target=watch, daemon=True).start()
    from pytest_leakcheck.cli.main import main as leakcheck

    out = args.policy.parent / "memory-report.json"
    code = leakcheck(["check", "--policy", str(args.policy), "--format", "json", "-o", str(out), "-j", "2", "-q"])
    done.set()
    peak = tracemalloc.get_traced_memory()[1]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"exit {code}; traced peak {peak / 1e6:.0f} MB, largest snapshot {best['current'] / 1e6:.0f} MB, "
          f"max RSS {rss:.0f} MB")
    if best["snapshot"] is not None:
        for stat in best["snapshot"].statistics("traceback")[:args.top]:
            print(f"{stat.size / 1e6:.0f} MB in {stat.count} blocks")
            for line in stat.traceback.format()[-6:]:
                print("   ", line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
