"""The fine verdict in a check: which pairs are judged at 96 px, the fine level, and what it changes.

The arithmetic is in ``hires.py``.  Here:

- :func:`judge` scores the pairs the 32 px verdict would make error-level
  links, where both images have a fine square (``fine`` family);
- :func:`calibration` sets the fine level as the 32 px levels are set,
  without labels: upside-down large images cannot be anyone's copy, so the
  fine scores their best candidates reach give the level (at FINE_PER_10K),
  never below FINE_FLOOR; with too few large images to estimate that rate,
  never below FINE_SMALL_FLOOR either, and the stats say so;
- a pair judged below the fine level stays a link, but a weak one
  (``levels.matches``): a warning, which merges nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...files.remote import read_bytes
from ...search.run import SearchRun
from ...signals.families import Signatures
from ...signals import pool
from ...store.db import Store
from . import alignment, confirmed, descriptors, families
from . import hires
from . import pairs
from .holds import documents
from . import state

#: Lowest fine level, whatever the impostors say.  Measured (``benchmarks/finelevel.py``) on 50
#: BSDS500 photographs resized to 640 x 480 (the re-shot benchmark's distractors) and 25
#: synthetic ``testing.photo`` ones: copies cropped by 3-6 % a side and resized, half of them
#: mirrored, score 0.52 and up at their 5th percentile on the photographs (0.67 and up on the
#: synthetic ones); one photo's 8 px blur plus another's detail scores 0.29 at most (0.35
#: synthetic), and the unrelated best candidates of upside-down images 0.3 at most.
FINE_FLOOR = 0.45
#: The fine level of a dataset with too few large images to estimate its rate (fewer than
#: 10,000 / FINE_PER_10K, which cannot hold one impostor above it): a fixed, conservative
#: floor, so that its errors are copies beyond doubt in fine detail too; a copy below it is
#: still a warning.
FINE_SMALL_FLOOR = 0.5
#: The fine level is the score FINE_PER_10K of 10,000 impostors reach.  Not the error rate
#: (2 per 10,000): the fine verdict only judges pairs the 32 px verdict already made errors,
#: so it asks how often two different pictures' fine detail agrees this well by chance, and
#: a lookalike slipping through 1 time in 100 (of pairs already rare) costs less than the
#: copies a stricter level demotes.  On 500 upside-down photos of ``benchmarks/speed.py``
#: (synthetic, with flat shapes whose straight edges line up by chance) the impostors' fine
#: scores are 0.06 at the median, 0.42 at the 99th percentile and 0.67 at most; the tail
#: fitted at 2 per 10,000 gave 0.70, above 5 % of the copies.
FINE_PER_10K = 100.0
#: A fine score no unrelated impostor reaches (0.67 at most on ``benchmarks/speed.py``'s synthetic
#: photos, 0.55 at most on the field sets of ``benchmarks/field.py``): an upside-down image whose fine
#: detail lines up this well is a turned copy the 32 px filter (``levels.TURNED_COPY``) let through,
#: a re-contrasted one aligning under it at 32 px, and is left out.  Kept in, an export augmented by
#: turning (``tests/detectors/test_turned_augmented.py``, 96 px JPEGs) put the level at 0.96.
FINE_TURNED_COPY = 0.8
#: Large images whose upside-down selves calibrate the fine level (a content-keyed sample):
#: enough for a tail fit at FINE_PER_10K (its top 25), and each costs two 32 px alignments
#: and two fine scores.
FINE_IMPOSTORS = 250


def large(sigs: Signatures) -> np.ndarray:
    """(N,) bool: rows that decoded fine and carry a fine square."""
    if "fine" not in sigs.arrays:
        return np.zeros(len(sigs), bool)
    return sigs.valid & (sigs.arrays["fine"][:, 0] == 1)


def squares(store: Store, digests: Sequence[bytes], rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The fine squares of ``rows`` from the store (the signatures hold only each row's flag):
    (n, F, F) uint8, and whether each was found."""
    fam = families.HIRES_FAMILY
    stored = store.get_signatures([digests[r] for r in rows], fam.name, fam.params)
    out = np.zeros((len(rows), hires.F, hires.F), np.uint8)
    found = np.zeros(len(rows), bool)
    for n, r in enumerate(rows.tolist()):
        ok, blob = stored.get(digests[r], (False, b""))
        grey = hires.square(blob) if ok else None
        if grey is not None:
            out[n], found[n] = grey, True
    return out, found


def pictures(run: SearchRun) -> documents.Pictures:
    """What the template hold reads (``holds.documents``): the stored fine squares, the files
    themselves, and one memo of residuals for the run (aligned's own pairs, then the hash matches)."""
    memo = run.memo.setdefault("aligned-template-residuals", {})

    def fine(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # Only rows that carry a fine square are read: a small image never enters the fine path.
        out, found = np.zeros((len(rows), hires.F, hires.F), np.uint8), np.zeros(len(rows), bool)
        if "fine" not in getattr(run.sigs, "arrays", {}):  # no fine family computed: no squares
            return out, found
        ask = large(run.sigs)[rows]
        if ask.any():
            out[ask], found[ask] = squares(run.store, run.sigs.digests, rows[ask])
        return out, found

    return documents.Pictures(fine,
                              lambda r: read_bytes(str(run.root / run.paths[r])), lambda: run.max_pixels, memo)


def scores(run: SearchRun, i: np.ndarray, j: np.ndarray, flipped: np.ndarray,
           turned: Sequence[str] | None = None) -> np.ndarray:
    """Fine score of each pair (rows ``i``, ``j``), NaN where either image is small or has no fine evidence.

    A pair is judged once: its score is kept by content (``state.fine_keys``), for the
    rest of the run (aligned's own matches, then the hash matches ``refine`` asks about)
    and, in the store, for later checks; a pair whose two files and whose parameters are
    unchanged is not judged again.  A focus check (hook, pull request) reads the store and
    writes nothing.
    """
    i, j = np.asarray(i, np.int64), np.asarray(j, np.int64)
    out = np.full(len(i), np.nan, np.float32)
    big = large(run.sigs)
    todo = np.flatnonzero(big[i] & big[j]) if len(i) else np.zeros(0, np.int64)
    flips = np.asarray(flipped, bool)
    how = [None if turned is None else turned[n] for n in todo.tolist()]
    keys = state.fine_keys(run.sigs.digests, i[todo], j[todo], flips[todo], how)
    known = _known(run)
    new: dict[bytes, int] = {}  # once per key: a pair two detectors found the same way is one score
    for n, k in zip(todo.tolist(), keys):
        if k not in known:
            new.setdefault(k, n)
    if new:
        ask = np.fromiter(new.values(), np.int64, len(new))
        got, scored = _judged(run, i[ask], j[ask], flips[ask], None if turned is None else [turned[n] for n in ask])
        # Squares missing from the store (damage, a race) are no verdict: such a pair is asked again.
        known.update((k, v) for k, v, ok in zip(new, got.tolist(), scored.tolist()) if ok)
        if run.focus is None and scored.any():
            state.save_fine(run.store, _fine_key(), known, run.sigs.digests)
    out[todo] = [known.get(k, np.nan) for k in keys]
    return out


#: The constants of the fine arithmetic (``hires.py``) besides the families: part of the stored scores' key.
_ARITHMETIC = (hires.K, hires.REACH, hires.SUBZOOMS, hires.FINE_BLUR, hires.FINE_SIGMA,
               alignment.S, alignment.T, alignment.DETAIL_STD)


def _fine_key() -> str:
    return state.fine_store_key(families.DESC_FAMILY, families.HIRES_FAMILY, _ARITHMETIC)


def _known(run: SearchRun) -> dict[bytes, float]:
    """This run's fine scores by pair key, read from the store at the run's first question."""
    memo = run.memo
    if "aligned-fine" not in memo:
        memo["aligned-fine"] = state.known_fine(run.store, _fine_key())
    return memo["aligned-fine"]  # type: ignore[return-value]


def _judged(run: SearchRun, i: np.ndarray, j: np.ndarray, flips: np.ndarray,
            turned: Sequence[str] | None) -> tuple[np.ndarray, np.ndarray]:
    """Fine scores of pairs of large rows, and whether both squares were found in the store.

    Each image's square is read and high-passed once however many pairs it is in, and the
    pairs are scored PAIR_CHUNK at a time: memory follows the images, not the pairs (on a
    fixed-camera set most of N² pairs reach this).
    """
    out = np.full(len(i), np.nan, np.float32)
    rows = np.unique(np.concatenate([i, j]))
    gf, found = squares(run.store, run.sigs.digests, rows)
    pi, pj = np.searchsorted(rows, i), np.searchsorted(rows, j)
    scored = found[pi] & found[pj]
    todo = np.flatnonzero(scored)
    if len(todo):
        hp = hires.high_pass(gf)
        del gf
        g32 = run.sigs.arrays["desc:grey32"].reshape(-1, alignment.S, alignment.S)
        work = _Work(g32, hp, i, j, pi, pj, flips, turned)
        chunks = [todo[a:a + PAIR_CHUNK] for a in range(0, len(todo), PAIR_CHUNK)]
        for t, got in zip(chunks, _scored(run, work, chunks)):
            out[t] = got
    return out, scored


@dataclass(frozen=True)
class _Work:
    """What each chunk of pairs is scored from: every judged image's 32 px square and high-passed
    fine square, and the pairs (rows, positions among the squares, mirror, turn)."""

    g32: np.ndarray
    hp: np.ndarray
    i: np.ndarray
    j: np.ndarray
    pi: np.ndarray
    pj: np.ndarray
    flips: np.ndarray
    turned: Sequence[str] | None

    def chunk(self, t: np.ndarray) -> np.ndarray:
        how = None if self.turned is None else [self.turned[n] for n in t]
        return hires.passed_both_ways(self.g32[self.i[t]], self.g32[self.j[t]], self.hp[self.pi[t]],
                                      self.hp[self.pj[t]], self.flips[t], how)


def _scored(run: SearchRun, work: _Work, chunks: list[np.ndarray]) -> list[np.ndarray]:
    """Each chunk's fine scores: in the check's forked workers when there are pairs enough
    (``SearchRun.forked_jobs``), else here; the same chunks either way, so the same scores.

    Why: where a dataset is runs of near-identical frames (``muzzle`` of ``benchmarks/field.py``,
    2,393 images of cattle videos), tens of thousands of pairs reach the fine verdict, which was
    two thirds of the check's time on one core while the workers idled.
    """
    jobs = run.forked_jobs(sum(len(t) for t in chunks), FORK_FROM) if len(chunks) > 1 else 0
    return pool.shared_map(work.chunk, chunks, jobs) if jobs else [work.chunk(t) for t in chunks]


#: Pairs from which the fine verdict is scored in the check's workers: a pair costs about 1.6 ms
#: (``muzzle``, 75,258 pairs in 121 s), so below this forking costs about what it saves.
FORK_FROM = 1024


#: Pairs scored at once at F px: a few MB of squares and their turns.
PAIR_CHUNK = 64


def judge(run: SearchRun, found: pairs.Pairs, todo: np.ndarray, cal: dict[str, Any],
          turned: Sequence[str] | None = None) -> np.ndarray:
    """Fine scores of the ``todo`` pairs of ``found`` (NaN elsewhere), recorded in ``run.stats["aligned"]``.

    ``fine_judged`` counts every pair judged at F px, once however many detectors' matches
    asked (aligned's own, then pHash's and the thumbnail's through ``refine``), and
    ``fine_demoted`` those below the level; ``fine_pairs`` lists (paths, fine score) of the
    REPORTED_FINE_PAIRS of them closest to the level, either side (:func:`_reported`).
    """
    i, j = found.i, found.j
    out = np.full(len(i), np.nan, np.float32)
    if "fine_threshold" not in cal or not np.any(todo):
        return out
    at = np.flatnonzero(todo)
    out[at] = scores(run, np.asarray(i)[at], np.asarray(j)[at], np.asarray(found.flipped)[at],
                     None if turned is None else [turned[n] for n in at])
    stats = run.stats.setdefault("aligned", {})
    known: dict[tuple[str, str], float] = run.memo.setdefault(_JUDGED, {})  # type: ignore[assignment]
    for n in at[np.isfinite(out[at])].tolist():
        a, b = sorted((run.paths[int(i[n])], run.paths[int(j[n])]))
        known[(a, b)] = max(known.get((a, b), -1.0), round(float(out[n]), 4))
    level = float(cal["fine_threshold"])
    stats["fine_pairs"] = _reported(known, level)
    stats["fine_judged"] = len(known)
    stats["fine_demoted"] = sum(v < level for v in known.values())
    if len(known) > REPORTED_FINE_PAIRS:
        stats["fine_pairs_left_off"] = len(known) - REPORTED_FINE_PAIRS
    return out


#: ``run.memo`` key of every pair this run judged at F px: (paths) -> fine score.
_JUDGED = "aligned-fine-judged"
#: Judged pairs the report lists.  Every one was listed before: where a dataset is runs of
#: near-identical frames (``muzzle`` of ``benchmarks/field.py``, 75,258 pairs judged) that was
#: 20 MB of a 20 MB report, read again by ``report --html``.
REPORTED_FINE_PAIRS = 500


def _reported(known: dict[tuple[str, str], float], level: float) -> list[list[Any]]:
    """``[path, path, score]`` of the judged pairs closest to ``level`` (the ones whose verdict the
    level decides: the demoted and those kept by a little), at most REPORTED_FINE_PAIRS, by path."""
    near = sorted(known.items(), key=lambda kv: (abs(kv[1] - level), kv[0]))[:REPORTED_FINE_PAIRS]
    return [[a, b, v] for (a, b), v in sorted(near)]


def calibration(run: SearchRun, data: pairs.Data, p: pairs.Plan, turned_copy: float) -> dict[str, Any]:
    """The fine level and what it rests on (``fine_*`` keys of the aligned stats); nothing without large images.

    Each sampled large row, upside down, asks every split it is compared
    with for its candidates, as the 32 px calibration does; its best large
    candidate at 32 px (a turned copy in the data, at ``turned_copy`` or
    more, is left out) is scored at F px both ways.
    """
    big = large(run.sigs)
    every = np.concatenate([p.rows[a] for a in p.targets] or [np.zeros(0, np.int64)])
    rows = np.sort(every[big[every]])
    if not len(rows):
        return {}
    pick = pairs.by_content(run.sigs.digests, rows, FINE_IMPOSTORS)
    q, r, f = _impostor_pairs(data, p, pick, big, turned_copy)
    fam = families.HIRES_FAMILY
    imp = np.zeros(0, np.float32)
    if len(q):
        need = np.unique(np.concatenate([q, r]))
        gf, found = squares(run.store, run.sigs.digests, need)
        pq, pr = np.searchsorted(need, q), np.searchsorted(need, r)
        ok = np.flatnonzero(found[pq] & found[pr])
        if len(ok):
            upside_down = ["rot180"] * len(ok)
            imp = hires.both_ways(alignment.turn(data.grey[q[ok]], upside_down), data.grey[r[ok]],
                               alignment.turn(gf[pq[ok]], upside_down), gf[pr[ok]], f[ok])
            imp = confirmed.left_out(run, imp, q[ok], r[ok], f[ok])  # impostors that are copies by other evidence
            imp = imp[np.isfinite(imp)]
    turned = int(np.count_nonzero(imp >= FINE_TURNED_COPY))
    imp = imp[imp < FINE_TURNED_COPY]
    small = len(rows) < 1e4 / FINE_PER_10K
    floor = FINE_SMALL_FLOOR if small else FINE_FLOOR
    # Under 100 large images a tail fitted to their impostors extrapolates from noise: the 36 synthetic
    # photos of ``examples/`` (largest impostor 0.58) fitted 0.70, over a 4 %-cropped, brightened copy
    # at 0.68 once their 160 px JPEGs had fine squares.  There the level is the largest impostor seen.
    if small:
        level = max(floor, float(imp.max())) if len(imp) else floor
    else:
        level = alignment.calibrate(imp, FINE_PER_10K, floor=floor) if len(imp) else floor
    return {"fine_threshold": round(float(level), 4), "fine_images": int(len(rows)),
            "fine_calibrated_on": int(len(imp)), "fine_floor": floor, "fine_small_sample": bool(small),
            "fine_false_alarms_per_10k": FINE_PER_10K,
            "fine_largest_impostor": round(float(imp.max()), 4) if len(imp) else None,
            "fine_side": hires.F, "fine_family": fam.params, "fine_turned_copies": turned}


def _impostor_pairs(data: pairs.Data, p: pairs.Plan, pick: np.ndarray, big: np.ndarray,
                    turned_copy: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(upside-down row, its best large candidate at 32 px, mirrored) for the sampled rows that have one."""
    assert data.index is not None
    out: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for a in p.targets:
        rows = pick[p.split_of[pick] == a]
        if not len(rows):
            continue
        hog = data.hog[rows][:, descriptors.HOG_ROT180].astype(np.float32)
        views = [data.index.project(hog), *([data.index.project(hog[:, descriptors.HOG_HFLIP])] if p.mirror else [])]
        cand, flip = pairs.retrieve(data, p, a, rows, views)
        cand, flip = cand.reshape(len(rows), -1), flip.reshape(len(rows), -1)
        cand = np.where((cand >= 0) & big[np.maximum(cand, 0)], cand, -1)
        grey = np.ascontiguousarray(data.grey[rows][:, ::-1, ::-1]).astype(np.float32)
        sc = np.nan_to_num(alignment.verify(grey, cand, flip, data.references, always=1, tiles=False), nan=-np.inf)
        best = sc.argmax(1)
        top = sc[np.arange(len(rows)), best]
        keep = np.isfinite(top) & (top < turned_copy)
        out.append((rows[keep], cand[keep, best[keep]], flip[keep, best[keep]]))
    if not out:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, bool)
    return tuple(np.concatenate(x) for x in zip(*out))  # type: ignore[return-value]
