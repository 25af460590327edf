"""SIGTERM always ends the check (issue 22, class 7), whatever the pool is doing.

The case that hung main for ever: a worker killed while the driver was reading its result,
half of a message left in the pipe.  ``concurrent.futures``' manager thread blocked reading
the rest, and the driver waited for it in ``shutdown`` (and again at interpreter exit).
The campaign over random moments is benchmarks/sigterm_campaign.py; a small run of it is here too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PACKAGE = str(Path(__file__).resolve().parents[2])

# The driver (this script) reads a 200 MB result from worker 0; once 20 MB have arrived it kills
# every worker and sends itself SIGTERM, as a cancelled CI job on a loaded runner would.
_HALF_READ = textwrap.dedent("""
    import os, signal, sys, threading, time
    from pytest_leakcheck.signals.pool import run_map

    def work(i):
        if i == 0:
            return b"x" * (200 << 20)
        if i == 1:
            return b""
        time.sleep(60)
        return b""

    def read_so_far():
        return next(int(line.split()[1]) for line in open("/proc/self/io") if line.startswith("rchar"))

    def meddle():
        start = read_so_far()
        while read_so_far() - start < 20 << 20:
            time.sleep(0.0005)
        me = os.getpid()
        children = open(f"/proc/{me}/task/{me}/children").read().split()
        for pid in children:
            os.kill(int(pid), signal.SIGKILL)
        print("workers", len(children), flush=True)
        os.kill(me, signal.SIGTERM)

    class Terminated(BaseException):
        pass

    def on_term(*_):
        raise Terminated()

    signal.signal(signal.SIGTERM, on_term)
    threading.Thread(target=meddle, daemon=True).start()
    try:
        for _ in run_map(work, list(range(16)), None, 2):
            pass
    except Terminated:
        print("terminated", flush=True)
""")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="reads /proc")
def test_sigterm_while_a_killed_worker_left_half_a_result_ends_the_driver(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", _HALF_READ], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": PACKAGE}, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=60)  # a hang guard, not a timing: main never ended
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.communicate()
        pytest.fail("the driver was still running 60 s after SIGTERM")
    assert proc.returncode == 0, err
    assert out.split() == ["workers", "2", "terminated"]


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_sigterm_campaign_small() -> None:
    """A few iterations of the campaign: every driver gone within 5 s, no worker left, the
    next run's findings equal to a clean run's."""
    script = Path(PACKAGE) / "benchmarks/sigterm_campaign.py"
    done = subprocess.run([sys.executable, str(script), "--iterations", "3", "--images", "120"],
                          capture_output=True, text=True, timeout=900)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    # The whole outcome as text: pytest shortens a dict to its first keys, hiding which count failed.
    assert result["ok"], json.dumps(result) + "\n" + done.stderr[-3000:]
    assert result["signals"] + result["finished_first"] == 6
    assert result["hangs"] == result["workers_left"] == result["wrong_findings"] == 0


def test_each_worker_gets_a_second_chunk_while_enough_remain() -> None:
    """Two chunks in flight per worker keep it busy while the driver writes; the last few go one each."""
    from collections import deque

    from pytest_leakcheck.signals import pool

    class Conn:
        def __init__(self) -> None:
            self.got: list[int] = []

        def send(self, message: tuple) -> None:
            self.got.append(message[1])

    a, b = Conn(), Conn()
    queued = {a: deque(), b: deque()}
    assert pool._deal(len, list(range(10)), 0, queued) == 4  # type: ignore[arg-type]
    assert (a.got, b.got) == ([0, 2], [1, 3])
    queued[a].popleft()  # a answered chunk 0
    assert pool._deal(len, list(range(10)), 4, queued) == 5  # type: ignore[arg-type]
    assert a.got == [0, 2, 4]
    c, d = Conn(), Conn()
    assert pool._deal(len, list(range(3)), 0, {c: deque(), d: deque()}) == 2  # type: ignore[arg-type]
    assert (c.got, d.got) == ([0], [1])  # the third waits for whichever worker finishes first
