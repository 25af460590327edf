"""Progress on a terminal, silence in CI logs and under --quiet, a timing line always (issue 15)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

if sys.platform == "win32":  # pseudo-terminals are POSIX
    pytest.skip("no pty on Windows", allow_module_level=True)

import fcntl
import pty
import struct
import termios

from pytest_leakcheck.pipeline.run import check
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.progress import SILENT, Timer, for_stream


def _run_on_pty(args: list[str], cwd: Path) -> tuple[int, str, str]:
    """Run leakcheck with stderr on a pseudo-terminal; (exit code, stdout, what the terminal showed)."""
    master, slave = pty.openpty()
    # A fresh pseudo-terminal is 0 columns wide; a real one has a size.
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "pytest_leakcheck", *args], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=slave, env={**os.environ, "COLUMNS": "100"})
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    out = proc.stdout.read().decode() if proc.stdout else ""
    code = proc.wait()
    os.close(master)
    return code, out, shown.decode(errors="replace")


def _args(root: Path, *extra: str) -> list[str]:
    return ["check", "--policy", str(root / "leakcheck.yaml"), "-j", "1", "--no-cache", *extra]


@pytest.mark.slow
def test_progress_bars_appear_on_a_terminal(leaky_dataset: Path) -> None:
    code, out, shown = _run_on_pty(_args(leaky_dataset), leaky_dataset)
    assert code == 1, out
    for stage in ("listing", "hashing", "decoding", "searching (phash)", "verifying"):
        assert stage in shown, shown
    assert "/78" in shown  # counts against the total: 78 contents decoded (one byte copy)
    assert "leakcheck: 79 images in " in shown


@pytest.mark.slow
def test_quiet_on_a_terminal_shows_only_the_timing_line(leaky_dataset: Path) -> None:
    code, _, shown = _run_on_pty(_args(leaky_dataset, "--quiet"), leaky_dataset)
    assert code == 1
    # One line: the timing summary (which may name a slow stage, "hashing 0.6 s", on a loaded machine).
    assert "%|" not in shown and "/79" not in shown
    assert shown.strip().startswith("leakcheck: 79 images in ") and len(shown.strip().splitlines()) == 1


@pytest.mark.slow
def test_no_bars_when_stderr_is_not_a_terminal(leaky_dataset: Path) -> None:
    """CI logs: stderr is a pipe; no bar, no carriage returns, one timing line with its stages."""
    proc = subprocess.run([sys.executable, "-m", "pytest_leakcheck", *_args(leaky_dataset)],
                          cwd=leaky_dataset, capture_output=True, text=True)
    assert proc.returncode == 1
    assert "\r" not in proc.stderr and "%|" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("leakcheck: 79 images in "), proc.stderr


@pytest.mark.slow
def test_the_pipeline_reports_each_stage_in_order(leaky_dataset: Path) -> None:
    timer = Timer()
    check(policy=load(leaky_dataset / "leakcheck.yaml"), use_cache=False, jobs=1, progress=timer)
    timer.done()
    stages = list(timer.seconds)
    assert stages[:3] == ["listing", "hashing", "decoding"]
    assert "searching (identical-file)" in stages and "searching (phash)" in stages
    assert stages[-1] == "verifying"


class _Counting:
    def __init__(self) -> None:
        self.totals: dict[str, int | None] = {}
        self.counts: dict[str, int] = {}
        self._stage = ""

    def start(self, stage: str, total: int | None = None, unit: str = "file") -> None:
        self._stage = stage
        self.totals[stage] = total
        self.counts.setdefault(stage, 0)

    def advance(self, n: int = 1) -> None:
        self.counts[self._stage] += n

    def done(self) -> None:
        pass


@pytest.mark.slow
def test_counts_reach_their_totals(leaky_dataset: Path) -> None:
    seen = _Counting()
    check(policy=load(leaky_dataset / "leakcheck.yaml"), use_cache=False, jobs=1, progress=seen)
    assert seen.counts["listing"] == 79
    # A first check hashes only the files that share a size (a byte copy has its original's size); the
    # rest get their digest from the decode's one read (``pipeline/digests.py``).
    sizes = Counter(p.stat().st_size for p in leaky_dataset.rglob("*") if p.suffix in (".jpg", ".png"))
    shared = sum(n for n in sizes.values() if n > 1)
    assert shared >= 2
    assert seen.totals["hashing"] == seen.counts["hashing"] == shared
    assert seen.totals["decoding"] == seen.counts["decoding"] == 78  # one byte copy: one content


@pytest.mark.parametrize("quiet", [False, True])
def test_for_stream_never_draws_on_a_pipe(quiet: bool) -> None:
    read, write = os.pipe()
    with os.fdopen(write, "w") as stream:
        chosen = for_stream(stream, quiet=quiet)
        assert type(chosen) is Timer
    os.close(read)
    assert SILENT.start("x", 3) is None


def _square(x: int) -> int:
    return x * x


def test_run_map_streams_results_from_its_own_pool() -> None:
    """Decoding progress follows results as they come: run_map's own pool yields, not returns a list."""
    from pytest_leakcheck.signals.pool import run_map

    results = run_map(_square, list(range(40)), None, 2)
    assert not isinstance(results, list)
    assert list(results) == [x * x for x in range(40)]


@pytest.mark.slow
def test_units_name_what_is_counted(leaky_dataset: Path) -> None:
    units: dict[str, str] = {}

    class Units(_Counting):
        def start(self, stage: str, total: int | None = None, unit: str = "file") -> None:
            super().start(stage, total, unit)
            units[stage] = unit

    check(policy=load(leaky_dataset / "leakcheck.yaml"), use_cache=False, jobs=2, progress=Units())
    assert units["decoding"] == "file" and units["searching (phash)"] == "split pair"
    assert units["verifying"] == "detector"


@pytest.mark.slow
def test_the_hook_and_a_piped_check_never_import_tqdm(leaky_dataset: Path) -> None:
    """import tqdm costs 40-90 ms: the pre-commit hook (stderr captured) must not pay it."""
    code = ("import sys\nfrom pytest_leakcheck.cli import main\n"
            "main(['hook', '--policy', 'leakcheck.yaml', 'test/identical.jpg'])\n"
            "main(['check', '--policy', 'leakcheck.yaml', '-j', '1'])\n"
            "print('tqdm' in sys.modules, file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=leaky_dataset, capture_output=True, text=True)
    assert proc.stderr.strip().splitlines()[-1] == "False", proc.stderr


class _Moves(_Counting):
    """Records every resize and every advance, in order, per stage."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[str, str, object]] = []

    def advance(self, n: int = 1) -> None:
        super().advance(n)
        self.events.append((self._stage, "advance", n))

    def resize(self, total: int | None, unit: str = "file") -> None:
        self.totals[self._stage] = total
        self.counts[self._stage] = 0
        self.events.append((self._stage, "resize", (total, unit)))


def test_aligned_search_moves_block_by_block(leaky_dataset: Path) -> None:
    """aligned's stage is counted in its own blocks (search and calibration), advanced after each one,
    not left at 0 and filled at the end."""
    seen = _Moves()
    check(policy=load(leaky_dataset / "leakcheck.yaml"), use_cache=False, jobs=1, progress=seen)
    events = [(kind, value) for stage, kind, value in seen.events if stage == "searching (aligned)"]
    assert events[0][0] == "resize"
    total, unit = events[0][1]
    assert unit == "block" and total >= 3
    steps = [v for kind, v in events[1:] if kind == "advance"]
    assert len(steps) >= 3 and all(v == 1 for v in steps[:3])  # one tick per block as it finishes
    assert seen.counts["searching (aligned)"] == total


def test_aligned_bar_shows_its_blocks_on_a_sized_terminal(leaky_dataset: Path) -> None:
    """On a real (100-column) pseudo-terminal the aligned stage draws a bar counted in blocks."""
    code, _, shown = _run_on_pty(_args(leaky_dataset), leaky_dataset)
    assert code == 1
    counts = [(int(a), int(b)) for a, b in
              re.findall(r"searching \(aligned\):[^\r\n]*?\| (\d+)/(\d+) \[[^\]\r\n]*block/s\]", shown)]
    # Counted in blocks against their planned total (how often tqdm redraws depends on the clock;
    # that every block advances it is test_aligned_search_moves_block_by_block's).
    assert counts and all(total >= 3 and done <= total for done, total in counts), shown
