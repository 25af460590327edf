"""The search stage, producing the matches: every enabled detector over the split pairs the policy compares.

It builds one :class:`~pytest_leakcheck.search.run.SearchRun` and loops over
the detector registry.  A full check reuses the last full search where
nothing changed: two files whose path, split and content are as they were
match (or not) exactly as before under the same parameters, so only pairs
touching a new or changed file are searched, through the focus mode the
commit hook and pull requests use.  Then each detector may take a second
look at everyone's matches (``refine``: verification).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from .. import detectors
from ..errors import StoreDamaged
from ..store import keys
from ..orientation import ORIENTATIONS
from ..search.run import SearchRun
from ..detectors.base import NEAR_MISSES, Detector
from ..dataset.inventory import Inventory
from ..search.kernels import Match, dedupe
from ..files.names import from_bytes, to_bytes
from ..policy.load import Policy
from ..signals.families import Signatures, search_orientations
from ..store.db import Store

if TYPE_CHECKING:
    from .options import RunOptions

T = TypeVar("T")


def comparisons(inv: Inventory, policy: Policy) -> list[tuple[str, str]]:
    """Split pairs to search: the configured cross pairs, then each split with itself."""
    pairs = list(policy.pairs)
    if policy.within_split != "off":
        pairs += [(s, s) for s in inv.splits]
    return pairs


def heads(split_of: Sequence[str], digests: Sequence[bytes]) -> np.ndarray:
    """Each row's first exact copy in its own split (itself when it is the first, or has no digest)."""
    first: dict[tuple[str, bytes], int] = {}
    return np.fromiter((first.setdefault((s, d), i) if d.strip(b"\0") else i
                        for i, (s, d) in enumerate(zip(split_of, digests))), dtype=np.int64, count=len(digests))


def with_heads(mask: np.ndarray, head: np.ndarray) -> np.ndarray:
    """``mask`` plus the first copy of every row in it: the row that is searched for it."""
    out = mask.copy()
    out[head[mask]] = True
    return out


def _collapsing(policy: Policy) -> bool:
    # Only identical-file links a copy to its first copy; without it every row is searched.
    return any(det.name == "identical-file" for det, _ in detectors.enabled(policy))


def new_run(inv: Inventory, sigs: Signatures, policy: Policy, store: Store, opts: RunOptions, *,
            focus: np.ndarray | None = None) -> SearchRun:
    """The :class:`SearchRun` over ``inv``; ``opts.executor`` is a connected executor or ``None``."""
    head = heads([r.split for r in inv.records], sigs.digests) if _collapsing(policy) else None
    primary = None if head is None else head == np.arange(len(head))
    if focus is not None and head is not None:
        focus = with_heads(focus, head)
    return SearchRun(
        sigs=sigs,
        split_of=tuple(r.split for r in inv.records),
        splits=inv.splits,
        comparisons=tuple(comparisons(inv, policy)),
        orientations=policy.orientations,
        store=store,
        root=policy.root,
        paths=tuple(r.path for r in inv.records),
        max_pixels=policy.files.max_pixels,
        jobs=opts.jobs,
        focus=focus,
        progress=opts.progress,
        executor=opts.pool,
        primary=primary,
        groups=tuple(r.group for r in inv.records),
        # Whether aligned searches itself: then what other detectors would only count there is not made.
        memo={"aligned_on": any(d.name == "aligned" for d, _ in detectors.enabled(policy))},
    )


def _sorted(matches: list[Match]) -> list[Match]:
    order = {n: k for k, n in enumerate(detectors.names())}
    matches.sort(key=lambda m: (min(m.i, m.j), max(m.i, m.j), order[m.detector]))
    return dedupe(matches)


def find(run: SearchRun, chosen: Sequence[tuple[Detector, Any]], alongside: Sequence[tuple[Detector, Any]] = (),
         focus: np.ndarray | None = None) -> tuple[list[Match], list[Match]]:
    """Every match the ``chosen`` detectors find in ``run``, sorted, one per pair and detector;
    and apart, those of the ``alongside`` detectors (searched with ``focus``, not ``run.focus``).

    Each chosen detector's search is begun in turn (``Detector.begin``); one that goes on in
    worker processes (same-scene's verification) works while the others search, the
    ``alongside`` ones (``aligned``) included, and its result is taken after them.  Any
    exception stops what still runs.
    """
    matches: list[Match] = []
    beside: list[Match] = []
    with ExitStack() as running:
        begun = []
        # Matches are sorted afterwards, so the order searches begin in changes nothing found.
        for det, settings in sorted(chosen, key=lambda pair: not pair[0].begins_first):
            begun.append((det, running.enter_context(_staged(run, det, lambda: det.begin(run, settings)))))
        inner, run.focus = run.focus, focus
        try:
            for det, settings in alongside:
                beside += _staged(run, det, lambda: det.find(run, settings))
        finally:
            run.focus = inner
        for det, pending in begun:
            if pending.running:
                run.progress.start(f"finishing ({det.name})")
            t = time.perf_counter()
            matches += pending.result()
            _timed(run, f"finishing {det.name}", t)
    run.progress.done()
    return _sorted(matches), _sorted(beside)


def _staged(run: SearchRun, det: Detector, search: Callable[[], T]) -> T:
    """``search()`` as the detector's own progress stage: a slow one (aligned) shows as itself."""
    run.progress.start(f"searching ({det.name})", len(run.comparisons), unit="split pair")
    t = time.perf_counter()
    out = search()
    _timed(run, f"searching {det.name}", t)
    ticks = run.take_ticks()  # a detector that counted its own blocks (run.ticks)
    if ticks is not None:
        ticks.finish()
    else:
        run.progress.advance(len(run.comparisons))
    return out


def _timed(run: SearchRun, stage: str, since: float) -> None:
    """Seconds a search stage took, in ``stats["seconds_stages"]`` (``benchmarks/speed.py`` prints each one's share)."""
    stages: dict[str, float] = run.stats.setdefault("seconds_stages", {})  # type: ignore[assignment]
    stages[stage] = round(stages.get(stage, 0.0) + time.perf_counter() - since, 3)


def search(inv: Inventory, sigs: Signatures, policy: Policy, store: Store, opts: RunOptions, *,
           focus: np.ndarray | None = None) -> tuple[list[Match], dict[str, Any]]:
    """All matches of the enabled detectors, and the figures they report (``stats``)."""
    enabled = detectors.enabled(policy)
    reusable = [(d, s) for d, s in enabled if d.incremental]
    # Detectors that keep their own incremental state search every time, beside the others.
    slow = [(d, s) for d, s in enabled if not d.incremental]
    run = new_run(inv, sigs, policy, store, opts, focus=focus)
    progress = opts.progress
    matches, beside = (find(run, reusable, slow, focus) if focus is not None
                       else _incremental(run, policy, reusable, slow))
    matches += beside
    progress.start("verifying", len(enabled), unit="detector")
    for det, settings in enabled:
        t = time.perf_counter()
        matches = det.refine(run, settings, matches)
        _timed(run, f"verifying {det.name}", t)
        progress.advance()
    progress.done()
    # What ran, for the summary: a copy turned a way no detector searched is
    # not found, and a clean report must not read as if it had been looked for.
    checked = {det.name: list(det.orientations(settings, policy)) for det, settings in enabled}
    run.stats["checked"] = checked
    seen = {o for orientations in checked.values() for o in orientations}
    if seen:
        run.stats["not_searched"] = [o for o in ORIENTATIONS if o not in seen]
    return matches, run.stats


# --------------------------------------------------------------------------
# Incremental full search


def _matches_key(policy: Policy, chosen: Sequence[tuple[Detector, Any]], snapshot_key: str) -> str:
    """Everything a match between two unchanged files depends on."""
    return keys.matches([d.params(s) for d, s in chosen], policy.pairs, policy.within_split,
                        search_orientations(policy.orientations), snapshot_key)


def _joined(items: list[str]) -> np.ndarray:
    return np.frombuffer(to_bytes("\0".join(items)), dtype=np.uint8)


def _split_joined(array: np.ndarray) -> list[str]:
    return from_bytes(array.tobytes()).split("\0")


def _unchanged(run: SearchRun, prev: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Which rows are as they were (same path, split, content), and each old row's new row (-1: gone)."""
    changed = np.ones(len(run.paths), dtype=bool)
    old_paths, old_splits = _split_joined(prev["paths"]), _split_joined(prev["splits"])
    index = {p: k for k, p in enumerate(old_paths)}
    new_of_old = np.full(len(old_paths), -1, dtype=np.int64)
    old_digests = prev["digest"]
    # A row that became (or stopped being) the first copy searched for its
    # content is searched again: the matches of the old first copy are gone.
    primary = np.ones(len(run.paths), dtype=bool) if run.primary is None else run.primary
    old_head = heads(old_splits, [d.tobytes() for d in old_digests]) if run.primary is not None else None
    for i, (path, split) in enumerate(zip(run.paths, run.split_of)):
        k = index.get(path, -1)
        if k >= 0 and old_splits[k] == split and run.sigs.digests[i] == old_digests[k].tobytes() and (
                old_head is None or (old_head[k] == k) == primary[i]):
            changed[i] = False
            new_of_old[k] = i
    return changed, new_of_old


def _incremental(run: SearchRun, policy: Policy, chosen: Sequence[tuple[Detector, Any]],
                 alongside: Sequence[tuple[Detector, Any]] = ()) -> tuple[list[Match], list[Match]]:
    """:func:`find` over the whole dataset, reusing the last full search where nothing changed;
    and the matches of the ``alongside`` detectors, which search the whole dataset meanwhile."""
    key = _matches_key(policy, chosen, keys.signatures(detectors.families(policy), policy.files.max_pixels))
    prev = run.store.load_snapshot(key)  # its shapes checked (store/consistent.py); the numbers here:
    if prev is not None and ((prev["detector"] >= len(detectors.names())).any()
                             or (prev["orientation"] >= len(ORIENTATIONS)).any()):
        raise StoreDamaged("a stored snapshot is inconsistent: an unknown detector or orientation number",
                           path=str(run.store.path) if run.store.path else None)
    if prev is None:
        result, beside = find(run, chosen, alongside)
        changed, new_of_old = np.ones(len(run.paths), dtype=bool), np.zeros(0, dtype=np.int64)
    else:
        changed, new_of_old = _unchanged(run, prev)
        run.focus = changed if run.primary is None else with_heads(changed, heads(run.split_of, run.sigs.digests))
        found, beside = find(run, chosen if changed.any() else [], alongside)
        run.focus = None
        mi, mj = new_of_old[prev["i"]], new_of_old[prev["j"]]
        names = detectors.names()
        # Only the detectors reused here: an exact link is never taken from the store.
        keep = (mi >= 0) & (mj >= 0) & np.isin(prev["detector"], [names.index(d.name) for d, _ in chosen])
        cached = [
            Match(int(a), int(b), names[int(d)], float(v), ORIENTATIONS[int(o)], bool(w))
            for a, b, d, v, o, w in zip(mi[keep], mj[keep], prev["detector"][keep], prev["value"][keep],
                                        prev["orientation"][keep], prev["weak"][keep])
        ]
        result = _sorted([*cached, *found])
    if prev is None or changed.any() or (new_of_old < 0).any():
        run.store.save_snapshot(key, _match_arrays(run, result), kind="matches")
    _near_misses(run, f"{key}:near-misses", fresh=prev is None, searched=prev is None or bool(changed.any()))
    _verdicts(run, f"{key}:verdicts", [d.name for d, _ in chosen], searched=prev is None or bool(changed.any()))
    return result, beside


def _verdicts(run: SearchRun, key: str, names: Sequence[str], *, searched: bool) -> None:
    """Each reused detector's figures (``stats[name]``: what ``homogeneity`` found of this dataset) kept
    beside its matches: a search with nothing changed reuses the matches, weak as that verdict made
    them, and its report still says why they are warnings."""
    # A detector's figures sit under its name or its Python spelling (``same_scene``, the images
    # same-scene could not search: a warm run once lost that note).
    names = [*names, *(n.replace("-", "_") for n in names)]
    if searched:
        kept = {n: run.stats[n] for n in names if isinstance(run.stats.get(n), dict)}
        run.store.put_meta({key: json.dumps(kept)})
        return
    stored = run.store.get_meta(key)
    try:
        last = json.loads(stored) if stored else {}
    except ValueError:  # the store is trusted, but a damaged row only loses a note
        return
    for name, figures in (last.items() if isinstance(last, dict) else ()):
        if name in names and isinstance(figures, dict):
            run.stats.setdefault(name, figures)


def _near_misses(run: SearchRun, key: str, *, fresh: bool, searched: bool) -> None:
    """Near misses (the review page's chart) of a search that reused the last one's matches.

    A full search records them all; a search of the changed files adds theirs
    to the last full search's (pairs of files since changed or gone may linger
    there until the next full search); a search with nothing changed shows the
    last ones.  Kept in the store beside the matches.
    """
    stored = run.store.get_meta(key)
    last = json.loads(stored) if stored and not fresh else {}
    now = run.stats.get("near_misses") or {}
    merged = dict(last)
    for name, rec in now.items():
        old = last.get(name, {}).get("values", [])
        lower = bool(rec.get("lower_is_stronger", True))
        values = sorted([*old, *rec["values"]], reverse=not lower)[:NEAR_MISSES]
        merged[name] = {**rec, "values": values}
    if merged:
        run.stats["near_misses"] = merged
    if searched and now:
        run.store.put_meta({key: json.dumps(merged)})


def _match_arrays(run: SearchRun, matches: list[Match]) -> dict[str, np.ndarray]:
    names = detectors.names()
    return {
        "paths": _joined(list(run.paths)),
        "splits": _joined(list(run.split_of)),
        "digest": np.array([np.frombuffer(d.ljust(32, b"\0"), dtype=np.uint8) for d in run.sigs.digests],
                           dtype=np.uint8).reshape(-1, 32),
        "i": np.array([x.i for x in matches], dtype=np.int64),
        "j": np.array([x.j for x in matches], dtype=np.int64),
        "detector": np.array([names.index(x.detector) for x in matches], dtype=np.int8),
        "value": np.array([x.value for x in matches], dtype=np.float64),
        "orientation": np.array([ORIENTATIONS.index(x.orientation) for x in matches], dtype=np.int8),
        "weak": np.array([x.weak for x in matches], dtype=bool),
    }
