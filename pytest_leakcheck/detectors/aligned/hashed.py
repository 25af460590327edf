"""Hash and thumbnail matches judged by alignment (``refine``): the level each is held to, and its verdict.

Split from ``levels.py``, which sets the levels; here they are applied to
the matches other detectors found.  A hash match is held to the impostors'
error level only where provenance says a re-shot is expected (both files
in one group of the policy); elsewhere to aligned's own error level, which
this dataset's look-alike neighbours raised (:func:`held_levels`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...search.kernels import Match
from ...search.run import SearchRun
from ...signals import pool
from ...store import keys
from . import hires_levels
from . import pairs
from . import holds
from .holds import sparse
from . import state
from .families import DESC_FAMILY
from .levels import COVERED, HAIR, fine_level, levels_of


@dataclasses.dataclass(frozen=True)
class Held:
    """The levels each of a run's hash matches is held to (arrays over the matches)."""

    warn: np.ndarray
    #: Error level: the impostors' within one group, aligned's own (look-alikes) elsewhere.
    err: np.ndarray
    #: What a pHash hit within SURE_BITS on a small set is held to (:func:`_sure_hash`): the warning
    #: level, and the look-alike level too where no group ties the pair.
    sure: np.ndarray


def held_levels(run: SearchRun, cal: dict[str, Any], ij: np.ndarray) -> Held:
    """Warning and error level of each pair ``ij`` of hash matches.

    pHash and the 16 px thumbnail see less than the 32 px square aligned
    scores, so a hash match is held to what aligned's own matches are held
    to: the error level that this dataset's look-alike neighbours raised
    (``levels.alike``).  The exception is a pair provenance already ties,
    both files in one group of the policy (one burst, one portion, one
    patient): there a re-shot is expected, the hash is evidence the 32 px
    square cannot give, and the impostors' level stands.  On ``eggs``
    (``benchmarks/field.py``) 116 of its 118 pHash and thumbnail error links
    lie within one burst; on the probe's receipts (SROIE, no groups) every
    error link but one joined two receipts of one shop's template, at pHash
    0-8 and 32 px 0.86-0.97 under the look-alike level 0.985, the one copy at 0.9999.
    """
    split_of = np.array(run.split_of, dtype=object)
    within = split_of[ij[:, 0]] == split_of[ij[:, 1]]
    warn, hashed = levels_of(cal, within, hashed=True)
    alike = lookalike_level(cal)
    if alike is None:
        return Held(warn, hashed, warn)
    _, own = levels_of(cal, within)
    tied = same_group(run.groups, ij)
    # A hit within SURE_BITS is spared the small set's floor, never the look-alikes' level.
    return Held(warn, np.where(tied, hashed, own), np.where(tied, warn, np.maximum(warn, alike)))


def lookalike_level(cal: dict[str, Any]) -> float | None:
    """The score (with the hair) a hash match must reach where no group ties its files: the level
    this dataset's look-alike neighbours set (``levels.alike``), or None where it binds nothing new.

    None where there is none, or where it leaves no room for a copy (1 or more with the hair): then
    each image's third-nearest neighbour is itself a near-identical copy (three augmentations of one
    source, the next frames of a video), the sample measured copy families, not look-alikes, and
    the impostors' level stands.  On ``cones`` (``benchmarks/field.py``: Roboflow augmentations and
    video frames) it is 1.0, and holding its pHash 0 links to it made 12 of its 14 error findings
    warnings, every audited one a copy."""
    level = cal.get("neighbour_level")
    if level is None:
        return None
    alike = float(level) + float(cal.get("hair", HAIR))
    return alike if alike < 1.0 else None


def same_group(groups: Sequence[str | None] | None, ij: np.ndarray) -> np.ndarray:
    """Whether both files of each pair have a group and it is the same one."""
    if groups is None or not len(ij):
        return np.zeros(len(ij), bool)
    g = np.array(groups, dtype=object)
    a, b = g[ij[:, 0]], g[ij[:, 1]]
    return np.array([x is not None and x == y for x, y in zip(a, b)], bool)


def refine(run: SearchRun, settings: Any, matches: list[Match]) -> list[Match]:
    """Hash and thumbnail matches take the pair's aligned verdict, in whatever orientation they were found.

    A hash hit is a candidate that alignment can check: the first image
    turned as the hash found it (mirrored, rotated), the pair is aligned
    and judged by detail (every such pair, whatever its 16 px
    correlation) and held to the levels of :func:`held_levels`.  Below the
    warning level it is dropped (a low-texture
    picture whose hash or thumbnail is near many unrelated ones, in any
    orientation); below the error level it is a weak link.  Measured on
    the visible CIFAR half: every listed near-duplicate pHash finds
    scores 0.84 or more, pairs of different classes 0.6 or less.
    """
    cal = run.stats.get("aligned")
    if not cal:
        return matches
    matches = _left_to_aligned(run, matches)
    check = [n for n, m in enumerate(matches) if m.detector in ("phash", "thumbnail")]
    if not check:
        return matches
    data = pairs.prepare(run.sigs, "hflip" in run.orientations, None)
    ij = np.array([(matches[n].i, matches[n].j) for n in check], np.int64)
    flip = np.array([matches[n].orientation == "hflip" for n in check])
    named = [matches[n].orientation for n in check]
    turned = [o if o not in COVERED else "identity" for o in named]
    scores, glyph = _glyph_aware_scores(run, data, ij, flip, (turned, named))
    held = held_levels(run, cal, ij)
    tied = same_group(run.groups, ij)
    out = list(matches)
    hair = float(cal.get("hair", HAIR))
    # Error-level verdicts between large images are judged at 96 px too, as aligned's own pairs are.
    asked = pairs.Pairs(ij[:, 0], ij[:, 1], scores, flip)
    insep = bool(cal.get("inseparable"))
    # A match already weak (its hash inseparable here, ``homogeneity``) stays weak whatever the
    # 96 px look says, so it is not looked at: on a fixed camera (``chess`` of
    # ``benchmarks/field.py``) those were most of the check's time.
    weak_in = np.array([matches[n].weak for n in check], bool)
    todo = np.isfinite(scores) & (scores >= held.err + hair) & ~weak_in & (not insep)
    cal = fine_level(run, ij[todo, 0], ij[todo, 1])
    fs = hires_levels.judge(run, asked, todo, cal, turned)
    low = (fs < float(cal.get("fine_threshold", -np.inf))) | insep
    for k, n in enumerate(check):
        s = scores[k]
        if not np.isfinite(s):
            continue  # no candidate to score (an invalid row): left as the hash found it
        weak = (s < (held.sure[k] if _sure_hash(matches[n], cal, bool(tied[k])) else held.err[k] + hair)) or low[k]
        if s < held.warn[k] and (glyph[k] or not _kept_below(matches[n])):
            out[n] = None
        else:
            out[n] = dataclasses.replace(matches[n], weak=True) if weak or s < held.warn[k] else matches[n]
    free = [k for k in range(len(check)) if not tied[k]]
    _template(run, out, [check[k] for k in free], [named[k] for k in free])
    return [m for m in out if m is not None]


def _template(run: SearchRun, out: list[Match | None], check: list[int], named: list[str]) -> None:
    """The hash matches still errors that join two documents of one template (``holds.documents``),
    made weak in ``out``: pHash and the thumbnail see the layout two such documents share; on
    ``prado`` (``benchmarks/field.py``) 42 of the 45 pairs of its error findings were theirs (the
    rest 2 byte copies and a turned copy).  Their count goes to aligned's ``template_held``.  A pair
    the policy ties (both files in one group) is not asked: there a re-shot is expected, as in
    :func:`held_levels`."""
    ask = [k for k, n in enumerate(check) if out[n] is not None and not out[n].weak]  # type: ignore[union-attr]
    if not ask:
        return
    ij = np.array([(out[check[k]].i, out[check[k]].j) for k in ask], np.int64)  # type: ignore[union-attr]
    none = np.zeros(len(ask))
    asked = holds.Asked(getattr(run.sigs, "arrays", {}).get("desc:grey32"), ij[:, 0], ij[:, 1], none.astype(bool), none, none,
                        hires_levels.pictures(run), [named[k] for k in ask])
    held, counts = holds.apply(asked, (holds.TEMPLATE,))
    for k in np.flatnonzero(held).tolist():
        n = check[ask[k]]
        out[n] = dataclasses.replace(out[n], weak=True)  # type: ignore[arg-type]
    stats = run.stats["aligned"]
    stats["template_held"] = int(stats.get("template_held", 0)) + counts[holds.TEMPLATE.stat]


def _glyph_aware_scores(run: SearchRun, data: pairs.Data, ij: np.ndarray, flip: np.ndarray,
                        views: tuple[list[str], list[str]]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_scores` of the matches, and which join two glyphs that are not one drawing
    (``sparse.held_turned``): those are left unscored at -1, below every level, and dropped
    whatever their hash distance.  Two writings of one stroke agree in a hash by their blank ground:
    on ``cmnist`` of ``benchmarks/field.py`` (15,000 64 px Chinese characters) 823,824 pairs are
    within pHash 8, 81 % of them different characters; pHash 0-2 made false copies, and aligning
    them all kept the first check running past 40 minutes.  Kept within pHash 2 as warnings, they
    were 574 warnings (8 of 8 sampled other characters or writings); dropped, 108."""
    turned, named = views
    grey32 = getattr(run.sigs, "arrays", {}).get("desc:grey32")  # none without aligned's descriptors
    glyph = (np.zeros(len(ij), bool) if grey32 is None
             else sparse.held_turned(grey32, ij[:, 0], ij[:, 1], named))
    cal = run.stats["aligned"]
    cal["glyphs_held"] = int(cal.get("glyphs_held", 0)) + int(np.count_nonzero(glyph))
    scores = np.full(len(ij), -1.0)  # finite: a NaN is a row left as the hash found it
    keep = np.flatnonzero(~glyph)
    if len(keep):
        scores[keep] = _scores(run, data, ij[keep], flip[keep], [turned[k] for k in keep], [named[k] for k in keep])
    return scores, glyph


def _kept_below(m: Match) -> bool:
    """Whether a hash hit that aligns below the warning level is still said, as a warning: a pHash
    within ``SURE_BITS``.  Flat pictures never reach here (hashes match textured images only), and
    where the impostors of a dataset align well (symmetric traffic signs turned upside down set
    aligned's levels at 0.97), dropping it hid adjacent frames of one sign track at pHash 2."""
    return m.detector == "phash" and m.value <= SURE_BITS


def _left_to_aligned(run: SearchRun, matches: list[Match]) -> list[Match]:
    """``matches`` without those of a hash that cannot tell copies from the rest of this dataset
    (``homogeneity``), in a view aligned's own search covers; their count in the hash's stats.

    Such a match is no evidence (random pairs of the dataset pass the hash too) and could only
    be a warning, and aligned's own search already looks at every image in these views.  On a
    fixed camera (``chess`` of ``benchmarks/field.py``: 17,600 of them) scoring them was a third
    of the check's time and changed nothing but how many links one shared-scene note counts.
    A turned match is kept and scored: no other search looks at that view."""
    left: dict[str, int] = {}
    out = []
    for m in matches:
        stats = run.stats.get(m.detector)
        if (m.weak and m.orientation in COVERED and m.detector in ("phash", "thumbnail")
                and isinstance(stats, dict) and stats.get("inseparable")):
            left[m.detector] = left.get(m.detector, 0) + 1
        else:
            out.append(m)
    for name, n in left.items():
        run.stats[name] = {**run.stats[name], "left_to_aligned": n}
    return _turned_budget(run, out)


#: Weak turned matches of one hash kept per image: the closest this many, by the hash's own value.
TURNED_PER_IMAGE = 8


def _turned_budget(run: SearchRun, matches: list[Match]) -> list[Match]:
    """``matches`` with each image's weak turned hash matches cut to its ``TURNED_PER_IMAGE`` closest.

    A weak match stays weak whatever its aligned score (:func:`refine`): scoring it only decides
    whether it is a warning or dropped, and it never merges clusters, so no error depends on how
    many are scored.  Where a hash cannot tell copies here and the pictures are round or symmetric,
    they run to a hundred per image: on ``eyes`` (fundus photos, ``benchmarks/field.py``) 418,000
    were scored at 32 px, two thirds of the check's time.  A pair is kept while it is among the
    closest of either of its images; the rest are counted in the hash's stats."""
    turned = [n for n, m in enumerate(matches)
              if m.weak and m.orientation not in COVERED and m.detector in ("phash", "thumbnail")]
    if len(turned) <= TURNED_PER_IMAGE:
        return matches
    drop: set[int] = set()
    for name in ("phash", "thumbnail"):
        mine = [n for n in turned if matches[n].detector == name]
        sign = 1.0 if name == "phash" else -1.0  # a Hamming distance, lower closer; a similarity, higher
        keep: set[int] = set()
        for side in ("i", "j"):
            ends = np.array([getattr(matches[n], side) for n in mine], np.int64)
            order = np.lexsort((np.array([sign * matches[n].value for n in mine]), ends))
            first = np.r_[True, ends[order][1:] != ends[order][:-1]]
            rank = np.arange(len(order)) - np.maximum.accumulate(np.where(first, np.arange(len(order)), 0))
            keep.update(np.array(mine, np.int64)[order[rank < TURNED_PER_IMAGE]].tolist())
        gone = set(mine) - keep
        if gone:
            drop |= gone
            run.stats[name] = {**run.stats.get(name, {}), "turned_beyond_budget": len(gone)}
    return [m for n, m in enumerate(matches) if n not in drop] if drop else matches


#: A pHash hit within this many bits, in whatever orientation, is a copy on its own evidence.
SURE_BITS = 2


def _sure_hash(m: Match, cal: dict[str, Any], tied: bool = False) -> bool:
    """Whether aligned's error level must not demote ``m``, a pHash hit within ``SURE_BITS``: held to
    the warning level instead (no texture-free coincidence).  A hash that random pairs of this
    dataset pass (``homogeneity``) is no evidence: its matches come here already weak.

    On a small set, where the error level is a conservative floor for aligned's own weak evidence
    (a mirrored CIFAR copy at distance 0 that aligns at 0.764 is a copy, mirrored or not).  And in
    a pair the policy ties (``tied``: both files in one group), where a copy is expected and the
    error level, set by upside-down impostors, may say only that aligned cannot tell here: on
    ``tumor`` (12,887 MRI slices, ``benchmarks/field.py``) impostors put it at 0.99, and versions
    of one slice under another exposure (pHash 2, 128 px detail 0.99 at identity geometry) align at
    0.98-0.99 at 32 px.  A group-split finding already fails such a pair; this says its pixels agree."""
    return ((bool(cal.get("small_sample")) or tied) and m.detector == "phash" and not m.weak
            and m.value <= SURE_BITS)


def _scores(run: SearchRun, data: pairs.Data, ij: np.ndarray, flip: np.ndarray, turned: list[str],
            orientations: list[str]) -> np.ndarray:
    """``pairs.pair_scores`` of the matches, those scored by an earlier check taken from the store.

    A check that changes something remembers today's scores; a focus check (the hook, a
    pull request) reads them and writes nothing."""
    key = keys.digest(("refined", state.STORE_VERSION, DESC_FAMILY.name, DESC_FAMILY.params))
    pair_keys = state.pair_keys(run.sigs.digests, ij[:, 0], ij[:, 1], orientations)
    known = state.known_scores(run.store, key)
    todo = np.array([k not in known for k in pair_keys], bool)
    scores = np.array([known.get(k, np.nan) for k in pair_keys], np.float64)
    if todo.any():
        # Once per key: a pair that phash and thumbnail both found in one orientation is one score.
        first = {pair_keys[n]: n for n in reversed(np.flatnonzero(todo).tolist())}
        t = np.array(sorted(first.values()), np.int64)
        got = _pair_scores(run, _Asked(data, ij[t, 0], ij[t, 1], flip[t], [turned[n] for n in t]))
        new = dict(zip((pair_keys[n] for n in t), got.tolist()))
        scores[todo] = [new[k] for k, d in zip(pair_keys, todo) if d]
    if run.focus is None and (todo.any() or len(known) != len(pair_keys)):
        state.save_scores(run.store, key, pair_keys, scores)
    return scores


@dataclasses.dataclass(frozen=True)
class _Asked:
    """Matches to score at 32 px (``pairs.pair_scores`` with ``always=1``), a block at a time."""

    data: pairs.Data
    i: np.ndarray
    j: np.ndarray
    flip: np.ndarray
    turned: list[str]

    def block(self, a: int) -> np.ndarray:
        s = slice(a, a + pairs.PAIR_BLOCK)
        return pairs.pair_scores(self.data, self.i[s], self.j[s], self.flip[s], always=1, turned=self.turned[s])


#: Matches from which their 32 px scores are computed in the check's forked workers: a pair costs
#: about 0.2 ms, so below this the fork costs about what it saves.
FORK_FROM = 4 * pairs.PAIR_BLOCK


def _pair_scores(run: SearchRun, asked: _Asked) -> np.ndarray:
    """The matches' 32 px scores, blocks of ``pairs.PAIR_BLOCK`` in the check's forked workers when
    there are many (``SearchRun.forked_jobs``), else here: each pair is scored on its own, so the
    same scores either way.  Where a dataset is runs of near-identical frames (``muzzle`` of
    ``benchmarks/field.py``), hash matches run to tens of thousands."""
    starts = list(range(0, len(asked.i), pairs.PAIR_BLOCK))
    jobs = run.forked_jobs(len(asked.i), FORK_FROM) if len(starts) > 1 else 0
    blocks = pool.shared_map(asked.block, starts, jobs) if jobs else [asked.block(a) for a in starts]
    return np.concatenate(blocks or [np.zeros(0)])
