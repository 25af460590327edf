"""Progress of the long stages, behind a tiny interface that knows nothing of terminals.

The pipeline (listing, hashing, decoding, searching, verifying) calls
``start(stage, total)``, ``advance(n)`` and ``done()`` on whatever it is
given (and ``resize(total, unit)`` when a stage learns its size only once
it has planned its work, as ``aligned``'s search does: :class:`Ticks`); :data:`SILENT` by default, so library callers, the pytest plugin and
tests pay nothing.  The CLI passes :func:`for_stream`'s choice: a tqdm bar on
a terminal, and in CI logs or under ``--quiet`` a :class:`Timer` that only
records how long each stage took, for the one-line summary printed always.
Anything that runs long (a Dask or S3 stage, say) can report through the
same three calls.

tqdm is imported only when a bar is shown: the pre-commit hook (run with stderr
captured) must not pay for its import (``tests/cli/test_lean.py`` measures it).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Protocol, TextIO


class Progress(Protocol):
    """What a stage reports.  ``total=None``: the count is not known in advance."""

    def start(self, stage: str, total: int | None = None, unit: str = "file") -> None: ...

    def advance(self, n: int = 1) -> None: ...

    def resize(self, total: int | None, unit: str = "file") -> None:
        """The current stage's size, counted anew in ``unit`` (what was counted so far is dropped)."""

    def done(self) -> None: ...


class _Silent:
    """Reports nothing: the default everywhere below the CLI."""

    def start(self, stage: str, total: int | None = None, unit: str = "file") -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass

    def resize(self, total: int | None, unit: str = "file") -> None:
        pass

    def done(self) -> None:
        pass


SILENT: Progress = _Silent()


class Timer:
    """Records each stage's wall time (in first-started order) and shows nothing."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._stage: str | None = None
        self._t0 = 0.0

    def start(self, stage: str, total: int | None = None, unit: str = "file") -> None:
        self.done()
        self._stage, self._t0 = stage, time.perf_counter()

    def advance(self, n: int = 1) -> None:
        pass

    def resize(self, total: int | None, unit: str = "file") -> None:
        pass

    def done(self) -> None:
        if self._stage is not None:
            self.seconds[self._stage] = self.seconds.get(self._stage, 0.0) + time.perf_counter() - self._t0
            self._stage = None

    def summary(self, total: float) -> str:
        """``3.2 s (listing 0.1 s, hashing 0.4 s, ...)``: the line the CLI prints at the end."""
        parts = ", ".join(f"{stage} {_secs(s)}" for stage, s in self.seconds.items() if s >= 0.05)
        return f"{_secs(total)}" + (f" ({parts})" if parts else "")


class Bar(Timer):
    """A tqdm bar per stage on ``stream``, with count, rate and ETA when the total is known."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self._stream = stream
        self._bar: Any = None

    def start(self, stage: str, total: int | None = None, unit: str = "file") -> None:
        super().start(stage, total, unit)
        from tqdm import tqdm

        self._bar = tqdm(total=total, desc=stage, unit=f" {unit}", file=self._stream, leave=False,
                         dynamic_ncols=True, mininterval=0.2)

    def advance(self, n: int = 1) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def resize(self, total: int | None, unit: str = "file") -> None:
        if self._bar is not None:
            self._bar.unit = f" {unit}"
            self._bar.reset(total=total)

    def done(self) -> None:
        super().done()
        if self._bar is not None:
            self._bar.close()
            self._bar = None


class Ticks:
    """A stage's own count of its work, for a search that plans blocks and runs them on threads.

    ``tick = Ticks(progress, total, unit)`` resizes the current stage to
    ``total`` units; ``tick(n)`` after each block (from any thread) moves it;
    ``tick.finish()`` fills what a shortcut skipped.  A search takes ``tick`` as
    a plain ``Callable[[int], None]``, so it needs nothing of this module.
    """

    def __init__(self, progress: Progress, total: int, unit: str = "block") -> None:
        self._progress, self.total, self.count = progress, total, 0
        self._lock = threading.Lock()
        resize = getattr(progress, "resize", None)  # a Progress written before resize() existed
        if resize is not None:
            resize(total, unit)

    def __call__(self, n: int = 1) -> None:
        with self._lock:  # tqdm's update is not atomic; blocks finish on several threads
            n = max(0, min(n, self.total - self.count))
            self.count += n
            if n:
                self._progress.advance(n)

    def finish(self) -> None:
        self(self.total - self.count)


def no_tick(n: int = 1) -> None:
    """The tick of a search nobody watches."""


def for_stream(stream: TextIO, *, quiet: bool = False) -> Timer:
    """A bar when ``stream`` is a terminal and not ``quiet``, else a silent timer."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream is not a terminal
        tty = False
    return Bar(stream) if tty and not quiet else Timer()


def _secs(s: float) -> str:
    return f"{s:.1f} s" if s < 120 else f"{int(s // 60)} min {int(s % 60)} s"
