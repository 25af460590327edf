"""What the round-4 hostile campaigns share (issue 34): a child run with a time and memory limit,
and the tally every campaign prints.

Each campaign (``hostile_journals.py``, ``hostile_shards.py``, ``hostile_stores.py``,
``hostile_inputs.py``) builds small hostile inputs in temporary folders and runs leakcheck in a
child process, counting: inputs tried, exit codes, exit 3 (or a traceback), hangs (over the time
limit), files moved outside the repository (must be 0) and leaks passed (exit 0 where a full,
trusted check finds a leak; must be 0).
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

PACKAGE = str(Path(__file__).resolve().parent.parent)
sys.path.insert(0, PACKAGE)
#: Seconds a child may take; memory it may map (the limit the issue's hostile round ran under).
LIMIT = 120
MEMORY = 3 << 30
BAD = ("exit 3", "hangs", "files moved outside the repository", "leaks passed")


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": PACKAGE, "LEAKCHECK_DEBUG": ""}


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def leakcheck(*args: str, cwd: Path | None = None) -> tuple[int | None, str, str]:
    """``leakcheck ARGS`` in a child under :data:`LIMIT` and :data:`MEMORY`: (exit code or None on a hang, out, err)."""
    try:
        done = subprocess.run([sys.executable, "-m", "pytest_leakcheck", *args], capture_output=True, text=True,
                              timeout=LIMIT, env=env(), cwd=cwd, preexec_fn=_limit)
    except subprocess.TimeoutExpired:
        return None, "", ""
    return done.returncode, done.stdout, done.stderr


def snapshot(folder: Path) -> dict[str, str]:
    """Every file below ``folder`` and a digest of its bytes (links as their target)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            path = Path(dirpath, name)
            rel = path.relative_to(folder).as_posix()
            out[rel] = "-> " + os.readlink(path) if path.is_symlink() else hashlib.sha256(path.read_bytes()).hexdigest()
    return out


class Tally:
    """The counts a campaign prints, one JSON line per input and the totals at the end."""

    def __init__(self, family: str) -> None:
        self.family = family
        self.totals: Counter = Counter()
        self.t0 = time.monotonic()

    def count(self, case: str, code: int | None, err: str, *, leak: bool = False, moved_out: bool = False,
              missed: bool = False, **extra: object) -> None:
        """One input: its exit code; ``leak`` when a leak is present that a trusted full check finds;
        ``missed`` when the report lacks a finding it must hold (a byte copy), whatever the exit code."""
        t = self.totals
        t["inputs tried"] += 1
        t[f"code {code}"] += 1
        t["exit 3"] += code == 3 or "Traceback" in err
        t["hangs"] += code is None
        t["files moved outside the repository"] += moved_out
        t["leaks passed"] += (leak and code == 0) or missed
        last = err.strip().splitlines()[-1][:140] if err.strip() else ""
        print(json.dumps({"case": case, "exit": code, **extra, "said": last}), flush=True)

    def finish(self) -> int:
        figures = {k: self.totals[k] for k in ("inputs tried", *BAD)}
        codes = {k[5:]: v for k, v in sorted(self.totals.items()) if k.startswith("code ") and v}
        print(json.dumps({"family": self.family, **figures, "exit codes": codes,
                          "seconds": round(time.monotonic() - self.t0, 1)}))
        return 1 if any(self.totals[k] for k in BAD) else 0
