"""What a detector searches in: the signatures, the splits of each row, the
split pairs to compare, an optional focus, and the store.

The search stage builds one :class:`SearchRun` from the inventory and the
policy and hands it to every detector, so detectors need neither: they
import this module, ``kernels`` and ``signals``, and nothing above them.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..progress import SILENT, Progress, Ticks
from ..signals.families import Signatures
from ..store.db import Store

# Images whose 16 px thumbnail varies by less than this (grey levels) carry
# too little structure for a perceptual signal to mean anything: plain sky,
# black frames.  Only the exact detectors judge them.
MIN_TEXTURE = 2.0


class Texture:
    """Whether rows carry enough structure for a perceptual match, computed on demand."""

    def __init__(self, sigs: Signatures) -> None:
        self.sigs = sigs
        self.known = np.full(len(sigs.valid), -1, dtype=np.int8)

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        todo = rows[self.known[rows] < 0]  # a repeat only costs a second std
        if len(todo):
            std = self.sigs.arrays["thumb"][todo].astype(np.float32).std(axis=1)
            self.known[todo] = self.sigs.valid[todo] & (std >= MIN_TEXTURE)
        return self.known[rows] == 1


@dataclass
class SearchRun:
    """One search over one inventory; detectors read it and add to ``stats``."""

    sigs: Signatures
    #: Split of each row, row-aligned to ``sigs``.
    split_of: tuple[str, ...]
    splits: tuple[str, ...]
    #: Split pairs to search: the configured cross pairs, then each split with itself.
    comparisons: tuple[tuple[str, str], ...]
    #: The policy's orientations, ``identity`` first.
    orientations: tuple[str, ...]
    store: Store
    root: Path
    paths: tuple[str, ...]
    max_pixels: int
    jobs: int | None = None
    #: Boolean mask over rows: search only pairs touching one (hook, pull request).
    focus: np.ndarray | None = None
    #: Figures a detector wants in the report's stats (e.g. a calibration).
    stats: dict[str, object] = field(default_factory=dict)
    #: Hears of each detector's search (progress.py); silent by default.
    progress: Progress = SILENT
    #: Where per-file work (full decodes) runs; None: local processes.
    executor: Executor | None = None
    #: Rows that stand for their exact copies in the same split (the first of each
    #: content); the search compares only these, and identical-file links the rest
    #: to them, so N copies cost N rows, never N² pairs.  None: every row.
    primary: np.ndarray | None = None
    #: Each row's group by the policy's rules (a burst, a portion, a patient), None where it has none:
    #: provenance that ties a pair (``aligned.hashed.held_levels``).  None: no groups known.
    groups: tuple[str | None, ...] | None = None
    #: Results one detector computes and may be asked for again in the same run (its own
    #: matches, then other detectors' through ``refine``), keyed by the detector's own keys.
    memo: dict[object, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.texture = Texture(self.sigs)
        self._splits = np.array(self.split_of, dtype=object)
        self._ticks: Ticks | None = None

    def ticks(self, total: int, unit: str = "block") -> Ticks:
        """Progress of the current detector's search in its own units: call the result after
        each of ``total`` blocks (from any thread).  A search that takes long (``aligned``)
        uses it so its bar moves; the search stage fills it when the detector returns."""
        self._ticks = Ticks(self.progress, total, unit)
        return self._ticks

    def forked_jobs(self, items: int, least: int) -> int:
        """Worker processes to run ``items`` pieces of a detector's work in, or 0 to run them here.

        Only a full local search (no focus, no cluster executor) with ``least`` items or more
        forks: forked workers read what the driver set up (a module's global) without a copy
        sent, and fewer items than that cost about as much to fork for as to do here.
        """
        jobs = self.jobs or os.cpu_count() or 1
        if (self.focus is not None or self.executor is not None or jobs < 2 or items < least
                or multiprocessing.get_start_method() != "fork"):
            return 0
        return jobs

    def take_ticks(self) -> Ticks | None:
        ticks, self._ticks = self._ticks, None
        return ticks

    @property
    def allowed(self) -> set[tuple[str, str]]:
        return set(self.comparisons)

    def rows_by_split(self, mask: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Rows of each split, optionally only those where ``mask`` holds."""
        mask = self.sigs.valid if mask is None else mask
        if self.primary is not None:
            mask = mask & self.primary
        return {s: np.flatnonzero((self._splits == s) & mask) for s in self.splits}

    def textured_rows(self) -> dict[str, np.ndarray]:
        """Rows worth a perceptual search.  A full search drops flat images up front;
        a focus search (one new image against everything) tests texture only on hits."""
        if self.focus is not None:
            return self.rows_by_split()
        return self.rows_by_split(self.texture(np.arange(len(self.sigs.valid))))

    def sides(self, a: str, b: str, rows: dict[str, np.ndarray]) -> list[tuple[np.ndarray, np.ndarray, bool]]:
        """(query rows, reference rows, same) blocks to search for one split pair.

        With a focus only pairs touching a focus row are searched, from both
        sides: one new image against the whole dataset, not everything again.
        """
        ra, rb = rows[a], rows[b]
        if self.focus is None:
            return [(ra, rb, a == b)]
        focus = self.focus
        fa, fb = ra[focus[ra]], rb[focus[rb]]
        if a == b:
            return [(fa, ra, False)]
        return [(fa, rb, False), (fb, ra[~focus[ra]], False)]
