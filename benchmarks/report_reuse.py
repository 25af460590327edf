"""What `leakcheck report --html` costs after a check, against the check itself.

Run by hand: ``python benchmarks/report_reuse.py [--n 300] [--size 1600x1200] [--repeat 2]``.
It builds (once, cached under the system temp folder) N distinct JPEGs at SIZE split 80/20
into train and test, plus 12 leaks (train photos mirrored and re-saved into test), and then,
in one run, REPEAT rounds of, each as a subprocess with a fresh store:

- ``leakcheck check`` (cold: every file decoded, every pair searched): the baseline;
- ``leakcheck report --html`` right after it (the findings reused from the store);
- ``leakcheck check`` again (warm: signatures and search results reused);
- ``leakcheck report --html --no-cache``: the report as it was before it reused anything
  (a whole check, then the page).

Wall and CPU seconds of each (CPU: what a busy shared machine distorts least) and the
ratios to the cold check.  Target (issue 37): the report after a check at most 0.25 of the check.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from PIL import Image

from benchdata import generated

LEAKS = 12


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    c, t = _children_cpu(), time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)} exited {out.returncode}:\n{out.stderr}")
    return time.perf_counter() - t, _children_cpu() - c, out.returncode


def _dataset(n: int, size: tuple[int, int]) -> Path:
    root = generated(f"report-reuse-{size[0]}x{size[1]}", n, size)
    leaks = root / "test" / "leaks"
    if not (leaks / ".complete").exists():
        leaks.mkdir(parents=True, exist_ok=True)
        for path in sorted((root / "train").glob("*.jpg"))[:LEAKS]:
            with Image.open(path) as img:
                img.transpose(Image.Transpose.FLIP_LEFT_RIGHT).save(leaks / path.name, quality=85)
        (leaks / ".complete").touch()
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--size", default="1600x1200", help="WIDTHxHEIGHT of each photo")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("-j", "--jobs", type=int, default=2)
    args = parser.parse_args()
    size = tuple(int(v) for v in args.size.split("x"))
    root = _dataset(args.n, size)  # type: ignore[arg-type]
    policy = str(root / "leakcheck.yaml")
    leakcheck = [sys.executable, "-m", "pytest_leakcheck"]
    rows: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeat):
            env = {**os.environ, "LEAKCHECK_CACHE": str(Path(tmp, f"store{r}.sqlite"))}
            html = str(Path(tmp, f"review{r}.html"))
            steps = {
                "check (cold)": [*leakcheck, "check", "--policy", policy, "-q", "-j", str(args.jobs)],
                "report --html after it": [*leakcheck, "report", "--html", html, "--policy", policy, "-q"],
                "check (warm)": [*leakcheck, "check", "--policy", policy, "-q", "-j", str(args.jobs)],
                "report --html --no-cache (a whole check)": [*leakcheck, "report", "--html", html, "--policy",
                                                             policy, "-q", "--no-cache", "-j", str(args.jobs)],
            }
            for name, cmd in steps.items():
                wall, cpu, code = _run(cmd, env)
                rows.setdefault(name, []).append((wall, cpu))
                print(f"round {r + 1}: {name}: {wall:.1f} s wall, {cpu:.1f} s CPU, exit {code}", flush=True)
    cold = rows["check (cold)"]
    print(f"\n{args.n + LEAKS} images at {size[0]}x{size[1]}, {args.repeat} rounds; ratio to the cold check "
          "of the same round (wall / CPU):")
    for name, values in rows.items():
        ratios = [(w / cw, c / cc) for (w, c), (cw, cc) in zip(values, cold)]
        text = ", ".join(f"{w:.3f} / {c:.3f}" for w, c in ratios)
        print(f"  {name}: {text}")


if __name__ == "__main__":
    main()
