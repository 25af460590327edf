"""``aligned``'s arithmetic above the alignment itself: the calibrated levels, the matches
they let through, and the incremental search with its stored model.

Split from ``aligned.py`` so that loading a policy (which reads the detector's
section) imports neither numpy nor the search: ``aligned.py`` imports this
module where it computes.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...search.kernels import Match
from ...search.run import SearchRun
from . import cluster
from . import confirmed
from . import fine_tones
from . import hires_levels
from . import pairs
from . import holds
from . import state
from . import uploads
from .alignment import calibrate
from .families import DESC_FAMILY, HIRES_FAMILY

#: What alignment covers: the mirror is one of the views every query is verified in.
COVERED = ("identity", "hflip")


@dataclasses.dataclass(frozen=True)
class _Families:
    """The families the stored model rests on, as one name and fingerprint for ``state.store_key``."""

    name: str
    params: str


#: The stored model holds the fine level too: a model from before it (or from another fine
#: square) is estimated again, not read without one.
#: ``uploads``: the levels leave out pairs of one upload since then, so a model from before is estimated again;
#: ``confirmed``: and impostors confirmed as turned copies (``confirmed.py``).
_KEYED = _Families(f"{DESC_FAMILY.name}+{HIRES_FAMILY.name}",
                   f"{DESC_FAMILY.params}+{HIRES_FAMILY.params}+uploads+confirmed")


def _key(det: Any, p: pairs.Plan) -> str:
    """Everything the stored model and pairs depend on besides the data: settings, descriptors, split pairs."""
    return state.store_key(det, p.mirror, sorted(p.targets.items()), _KEYED)




#: A rate of r per 10,000 can be estimated only from a dataset of 10,000 / r images or more
#: (5,000 for the default 2): a smaller one cannot hold a single false alarm at that rate,
#: and the impostors' tail fit then extrapolates from noise (a 2,000-image set's error
#: level came out at 0.7245, far under the 0.781 of 55,000 CIFAR images, and joined two
#: different cats at 0.7255).  Below that size the error level is at least SMALL_ERROR_FLOOR.
#: The error level of a dataset too small to estimate it: above what large sets
#: calibrate to (CIFAR-10, 55,000 images: 0.781 across splits, 0.823 within), so a
#: small dataset's errors are copies beyond doubt; the rest stay warnings.
SMALL_ERROR_FLOOR = 0.85
#: A link closer than this above its error level is weak (a warning that merges
#: nothing): the level is an estimate, and a coincidence a hair over it must not chain
#: two leaks into one cluster.  Small datasets (floored) get the wider hair.
HAIR, SMALL_HAIR = 0.002, 0.01


def too_small(images: int, det: Any) -> bool:
    """Whether ``images`` are too few to estimate the error level's rate (see SMALL_ERROR_FLOOR)."""
    return images < 1e4 / det.error_false_alarms_per_10k


def levels(imp: np.ndarray, det: Any, small: bool) -> tuple[float, float, float, bool]:
    """Warning and error thresholds from impostor maxima, the rate measured at the
    warning one, and whether the dataset was too small to estimate the error rate."""
    warn = round(calibrate(imp, det.false_alarms_per_10k), 4)
    err = round(max(warn, calibrate(imp, det.error_false_alarms_per_10k)), 4)
    if small:
        err = max(err, SMALL_ERROR_FLOOR)
    return warn, err, round(float((imp >= warn).mean() * 1e4), 1) if len(imp) else 0.0, small


#: Bootstrap resamples of the impostors behind ``levels_se`` (a few hundredths of a second at 8,000).
SE_DRAWS = 100


def levels_se(imp: np.ndarray, det: Any) -> tuple[float, float]:
    """Bootstrap standard error of the warning and error levels (before any floor).

    The levels are an extrapolation from a sample's tail, so they carry
    sampling noise; stating it tells a reader whether two runs' levels
    differ by more than the estimate does.  On CIFAR it agrees with the
    spread across disjoint content-keyed samples (0.007-0.010 against 0.0065
    at 8,000 impostors).  A fixed seed: the same data gives the same figure.
    """
    if len(imp) < 2:
        return 0.0, 0.0
    rng = np.random.default_rng(0)
    draws = np.array([[calibrate(s, det.false_alarms_per_10k, floor=0),
                       calibrate(s, det.error_false_alarms_per_10k, floor=0)]
                      for s in (imp[rng.integers(0, len(imp), len(imp))] for _ in range(SE_DRAWS))])
    return round(float(draws[:, 0].std(ddof=1)), 4), round(float(draws[:, 1].std(ddof=1)), 4)


def calibration(data: pairs.Data, p: pairs.Plan, det: Any, digests: Sequence[bytes],
                tick: Callable[[int], None] | None = None, farm: pairs.Farm | None = None,
                judge: confirmed.Judge | None = None) -> dict[str, Any]:
    """Cross-split levels (``threshold``, ``error_threshold``) and within-split ones.

    An upside-down image whose detail lines up with another image at
    TURNED_COPY or more is not an impostor: the data holds a turned copy of
    it (an upside-down or flipped duplicate, as audits of aerial and medical
    sets find).  Such scores are left out of the calibration, or one of them
    in a small set would raise the levels to 1 and hide every copy.
    A ``farm`` (the owner's cluster) runs the impostor blocks; ``judge`` counts rows whose
    candidate is their copy by other evidence as turned copies too (``confirmed``).
    """
    raw = pairs.impostors(data, p, digests, *([tick] if tick is not None else []),
                          **({"farm": farm} if farm is not None else {}),
                          **({"judge": judge} if judge is not None else {}))
    imp = {kind: v[~(v >= TURNED_COPY)] for kind, v in raw.items()}
    cross = imp["cross"] if len(imp["cross"]) else imp["within"]
    images = int(sum(len(r) for r in p.rows.values()))
    small = too_small(images, det)
    warn, err, measured, _ = levels(cross, det, small)
    within = levels(imp["within"], det, small) if len(imp["within"]) else (warn, err, measured, small)
    n = int(max(len(imp["cross"]), len(imp["within"])))
    return {"threshold": warn, "error_threshold": err,
            "false_alarms_per_10k": measured, "error_false_alarms_per_10k": det.error_false_alarms_per_10k,
            "asked_false_alarms_per_10k": det.false_alarms_per_10k,
            # The smallest non-zero rate this many impostors can show: one of them.
            "resolution_per_10k": round(1e4 / max(1, len(cross)), 1),
            "small_sample": small, "images": images, "error_floor": SMALL_ERROR_FLOOR,
            "hair": SMALL_HAIR if small else HAIR,
            "within_threshold": within[0], "within_error_threshold": within[1],
            "calibrated_on": n,
            # Sampling noise of the cross-split levels (warning, error): see levels_se.
            "levels_se": list(levels_se(cross, det)),
            "turned_copies": int(sum((v >= TURNED_COPY).sum() for v in raw.values()))}


#: Which retrieved neighbour of each sampled image stands for an unrelated one: the third best across
#: splits, leaving out the two nearest (a copy and its twin, a burst's other shot).
NEIGHBOUR_RANK = 3
#: Images whose neighbours are scored (by content, as the impostors are).
NEIGHBOUR_ROWS = 4000


def alike(cal: dict[str, Any], data: pairs.Data, p: pairs.Plan, digests: Sequence[bytes]) -> dict[str, Any]:
    """``cal`` held against what images of this dataset score: their retrieved neighbours and random pairs.

    Upside-down impostors never look like another shot of one fixed scene,
    nor like another egg on the same stand: on such data they put the error
    level where different photos pass (eggs align at 0.96-0.97 with a level of
    0.947, ``benchmarks/field.py``).  Each sampled image's ``NEIGHBOUR_RANK``-th
    best retrieved candidate in the other splits is an impostor that looks like
    the data; the error level is raised to where those reach at the asked rate.
    Then random pairs across splits (``homogeneity``): when too many reach
    even that level, the detector says so and makes warnings only
    (:func:`strong`), for pairs closer than every random pair kept (each row's
    nearest partner left out): a copy still shows, a fixed scene's shots do not."""
    # A hash or thumbnail match is evidence of its own: held to the impostors' level (``refine``).
    out = {**cal, "hash_error_threshold": cal["error_threshold"],
           "within_hash_error_threshold": cal.get("within_error_threshold", cal["error_threshold"])}
    every = np.sort(np.concatenate([p.rows[a] for a in p.targets] or [np.zeros(0, np.int64)]))
    near = pairs.neighbours(data, p, pairs.by_content(digests, every, NEIGHBOUR_ROWS))
    rank = near[:, NEIGHBOUR_RANK - 1] if near.shape[1] >= NEIGHBOUR_RANK else np.zeros(0)
    rank = rank[np.isfinite(rank)]
    if len(rank):
        level = round(calibrate(rank, float(cal["error_false_alarms_per_10k"])), 4)
        out["neighbour_level"], out["neighbours_on"] = level, int(len(rank))
        out["error_threshold"] = max(out["error_threshold"], level)
        out["within_error_threshold"] = max(out.get("within_error_threshold", level), level)
        out.update(_neighbour_warning(cal, rank))
    return {**out, **_random_pairs(out, data, p, digests)}


def _random_pairs(out: dict[str, Any], data: pairs.Data, p: pairs.Plan, digests: Sequence[bytes]) -> dict[str, Any]:
    """What random pairs across splits say of the levels in ``out`` (``homogeneity``): nothing new where
    few pass the error level; else the levels raised past every random pair kept (see :func:`alike`)."""
    from .. import homogeneity

    comparisons = [(a, b) for a, t in p.targets.items() for b in t]
    s = homogeneity.sample(p.rows, comparisons, p.split_of, digests, homogeneity.ROWS // 2)
    score = (np.nan_to_num(pairs.pair_scores(data, s.i, s.j, None, always=1), nan=-1.0)
             if len(s.i) else np.zeros(0))
    said = homogeneity.verdict(s, lambda idx: score[idx] >= out["error_threshold"], score)
    if not said["inseparable"]:
        return said
    top = round(float(np.sort(score.reshape(-1, s.per_row), 1)[:, :-1].max()), 4)
    warn, within = max(out["threshold"], top), max(out.get("within_threshold", out["threshold"]), top)
    return {**said, "threshold": warn, "within_threshold": within, "random_top": top,
            "error_threshold": max(out["error_threshold"], warn),
            "within_error_threshold": max(out.get("within_error_threshold", out["error_threshold"]), within)}


def _neighbour_warning(cal: dict[str, Any], rank: np.ndarray) -> dict[str, Any]:
    """The warning levels raised to where the retrieved neighbours reach at the warning rate.

    The warning rate is per row searched, and a row is compared with its nearest
    candidates, not with a random image: on a clean ImageFolder of phone photos
    (``clothing`` of probe 3) different garments on one floor aligned at 0.87-0.92,
    over the 0.870 that upside-down impostors set, and made 141 warnings.  The
    levels the impostors set stay those of hash and thumbnail matches
    (``hash_threshold``): a hash hit is evidence of its own, which aligned only checks.
    """
    level = round(calibrate(rank, float(cal["asked_false_alarms_per_10k"])), 4)
    warn, within = float(cal["threshold"]), float(cal.get("within_threshold", cal["threshold"]))
    return {"neighbour_warning_level": level, "hash_threshold": warn, "within_hash_threshold": within,
            "threshold": max(warn, level), "within_threshold": max(within, level)}


def levels_of(cal: dict[str, float], within: np.ndarray, hashed: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Warning and error level of each pair, by whether it lies within a split; ``hashed``: the error
    level of a hash or thumbnail match, the impostors' (before ``alike`` raised it, where it did).

    Each image's retrieved neighbours raise aligned's own error level, since
    aligned searched for them; a pHash hit between two candled eggs is another
    signal, which random pairs of the dataset were checked against already:
    at the raised level, 24 of the 38 pHash error links on ``eggs`` (``benchmarks/field.py``; the
    sampled ones all burst shots of one egg) fell to warnings."""
    warn_x, warn_w = cal["threshold"], cal.get("within_threshold", cal["threshold"])
    err_x, err_w = cal["error_threshold"], cal.get("within_error_threshold", cal["error_threshold"])
    if hashed and not cal.get("inseparable"):
        warn_x, warn_w = cal.get("hash_threshold", warn_x), cal.get("within_hash_threshold", warn_w)
        err_x, err_w = cal.get("hash_error_threshold", err_x), cal.get("within_hash_error_threshold", err_w)
    return np.where(within, warn_w, warn_x), np.where(within, err_w, err_x)


def strong(found: pairs.Pairs, cal: dict[str, float], split_of: np.ndarray | None = None) -> np.ndarray:
    """Which pairs the 32 px verdict makes error-level links (at or above the error level plus the hair)."""
    within = np.zeros(len(found.i), bool) if split_of is None else split_of[found.i] == split_of[found.j]
    if cal.get("inseparable"):  # random pairs of this dataset pass the levels: warnings only
        return np.zeros(len(found.i), bool)
    return found.score >= levels_of(cal, within)[1] + float(cal.get("hair", HAIR))


def matches(found: pairs.Pairs, cal: dict[str, float], split_of: np.ndarray | None = None,
            fine_scores: np.ndarray | None = None, glyph_held: np.ndarray | None = None) -> list[Match]:
    """Matches at or above the warning level of their kind (cross or within split); weak below the error
    level, below the fine level where a pair of large images was judged at 96 px (``fine_scores``), or
    between two glyphs that are not the same drawing (``glyph_held``, ``sparse.held``)."""
    within = np.zeros(len(found.i), bool) if split_of is None else split_of[found.i] == split_of[found.j]
    warn, _ = levels_of(cal, within)
    keep = np.flatnonzero(found.score >= warn)
    weak = ~strong(found, cal, split_of)
    if glyph_held is not None:
        weak |= glyph_held
    if fine_scores is not None and "fine_threshold" in cal:
        weak |= fine_scores < float(cal["fine_threshold"])  # NaN (not judged): the 32 px verdict stands
    return [Match(int(found.i[n]), int(found.j[n]), "aligned", round(float(found.score[n]), 4),
                  "hflip" if found.flipped[n] else "identity", weak=bool(weak[n]))
            for n in keep]


#: Detail correlation no impostor reaches (the largest of 2,000 on the visible CIFAR
#: half: 0.85) and copies do (median 0.92): an upside-down image scoring this is a
#: turned copy in the data, and is left out of the calibration.
TURNED_COPY = 0.95



def find(run: SearchRun, settings: Any) -> list[Match]:
    """Matches above the calibrated warning level (weak below the error level); the levels in ``run.stats``.

    Incremental (``state``): the index and the levels come from the
    store while the data has not changed too much since they were
    estimated, pairs between unchanged rows come from the store, and only
    new or changed rows are searched, against everything.  A focus search
    (hook, pull request) searches only the focus rows and writes nothing.
    """
    if not run.sigs.has("desc:grey32"):
        return []
    p = pairs.plan(run.rows_by_split(), run.comparisons, run.split_of, settings.candidates,
                    "hflip" in run.orientations, uploads.ids(run.paths))
    key, ids = _key(settings, p), state.row_ids(run.paths, run.split_of, run.sigs.digests)
    model, now_ids = state.load_model(run.store, key), np.sort(ids)
    changed = len(ids) if model is None else model.changed(now_ids)
    if model is None or changed > state.INDEX_AFTER * max(1, len(model.ids)):
        (model, found, data), changed = _fresh(run, settings, p, ids), 0
    else:
        data = pairs.prepare(run.sigs, p.mirror, model.index)
        # Scattered only if a block is sent: a search around a few changed rows stays here.
        with cluster.farm(run.executor, data, p) as farm:
            if changed > state.LEVELS_AFTER * max(1, len(model.ids)) and run.focus is None:
                cal = _estimate(run, data, p, settings, farm=farm)
                model = dataclasses.replace(model, calibration=cal, ids=now_ids,
                                            estimated={**model.estimated, "levels_at": state.now(),
                                                       "levels_on": len(ids)})
                state.save_model(run.store, key, model)
                changed = 0
            found = (pairs.focus_search(data, p, run.focus) if run.focus is not None
                     else _update(run, data, p, key, ids, farm))
    run.stats["aligned"] = {**model.calibration, **model.estimated, "changed_since": int(changed),
                            "reestimate_after": state.LEVELS_AFTER}
    run.memo[_FINE_LATER] = functools.partial(_fine_later, run, p, key, model)
    if "fine_threshold" not in model.calibration and np.any(big := hires_levels.large(run.sigs)):
        run.stats["aligned"]["fine_images"] = int(np.count_nonzero(big))  # the level's, once it is estimated
    # Only error-level links can change (a weak link stays one), and with a focus only those the
    # report keeps: those are judged at 96 px where both images are large.
    todo = strong(found, model.calibration, p.split_of)
    if run.focus is not None:
        todo &= run.focus[found.i] | run.focus[found.j]
    # Where a picture carries little detail of its own, a high score says less (``holds``).
    held = np.zeros(len(todo), bool)
    ask = np.flatnonzero(todo)
    error_level = levels_of(model.calibration, p.split_of[found.i[ask]] == p.split_of[found.j[ask]])[1]
    held[ask], counts = holds.apply(holds.Asked(run.sigs.arrays["desc:grey32"], found.i[ask], found.j[ask],
                                                found.flipped[ask], found.score[ask], error_level,
                                                hires_levels.pictures(run)))
    run.stats["aligned"].update(counts)
    todo &= ~held
    cal = fine_level(run, found.i[todo], found.j[todo], data)
    scores = hires_levels.judge(run, found, todo, cal)
    if "fine_threshold" in cal:  # a faint fine verdict where the tones disagree (``fine_tones``)
        faint = fine_tones.held(run.sigs.arrays["desc:grey32"], found.i, found.j, found.flipped, scores,
                                float(cal["fine_threshold"]))
        run.stats["aligned"]["fine_tones_held"] = int(np.count_nonzero(faint & todo))
        held |= faint & todo
    return _focus(run, matches(found, cal, p.split_of, scores, held))


#: ``run.memo`` key of what estimates the fine level when a pair first needs it (:func:`fine_level`).
_FINE_LATER = "aligned-fine-later"


def fine_level(run: SearchRun, i: np.ndarray, j: np.ndarray, data: pairs.Data | None = None) -> dict[str, Any]:
    """Aligned's levels (``run.stats["aligned"]``), with the fine level once pairs ``i``, ``j`` need it.

    The fine level is estimated the first time an error-level pair of two large
    images is to be judged at 96 px, then kept with the stored model: a dataset
    that never has one (a fixed camera, whose pairs all stay warnings, or small
    images) does not pay for its impostors (0.7 s of a 9 s check on ``chess`` of
    ``benchmarks/field.py``).
    """
    cal = run.stats["aligned"]
    if "fine_threshold" in cal or not len(i) or _FINE_LATER not in run.memo:
        return cal
    big = hires_levels.large(run.sigs)
    if np.any(big[np.asarray(i)] & big[np.asarray(j)]):
        cal.update(run.memo.pop(_FINE_LATER)(data))
    return cal


def _fine_later(run: SearchRun, p: pairs.Plan, key: str, model: state.Model,
                data: pairs.Data | None) -> dict[str, Any]:
    """The fine level (``hires_levels.calibration``), saved with the model unless the search has a focus."""
    data = data if data is not None else pairs.prepare(run.sigs, p.mirror, model.index)
    fine = hires_levels.calibration(run, data, p, TURNED_COPY)
    if run.focus is None and fine:
        state.save_model(run.store, key, dataclasses.replace(model, calibration={**model.calibration, **fine}))
    return fine


def _estimate(run: SearchRun, data: pairs.Data, p: pairs.Plan, settings: Any,
              tick: Callable[[int], None] | None = None, farm: pairs.Farm | None = None) -> dict[str, Any]:
    """The 32 px levels (:func:`calibration`, its impostor blocks on the ``farm`` when there is one);
    the fine level waits until a pair needs it (:func:`fine_level`)."""
    judge = confirmed.judge(run, data, p)
    return alike(calibration(data, p, settings, run.sigs.digests, tick, farm, judge), data, p, run.sigs.digests)

def _fresh(run: SearchRun, settings: Any, p: pairs.Plan,
           ids: np.ndarray) -> tuple[state.Model, pairs.Pairs, pairs.Data]:
    """Index, levels and every pair estimated and searched afresh, and stored."""
    index = pairs.fit(run.sigs, np.flatnonzero(run.sigs.valid))
    data = pairs.prepare(run.sigs, p.mirror, index)
    tick = run.ticks(pairs.blocks(p), "block")  # the bar moves block by block: search, then levels
    # With the owner's Dask cluster the blocks of both run on its workers, the data sent once.
    with cluster.farm(run.executor, data, p) as farm:
        found = pairs.search(data, p, tick, farm)
        cal = _estimate(run, data, p, settings, tick, farm)
    at = state.now()
    model = state.Model(index, cal, np.sort(ids),
                        {"index_at": at, "index_on": len(ids), "levels_at": at, "levels_on": len(ids)})
    key = _key(settings, p)
    state.save_model(run.store, key, model)
    state.save_pairs(run.store, key, ids, found)
    return model, found, data

def _update(run: SearchRun, data: pairs.Data, p: pairs.Plan, key: str, ids: np.ndarray,
            farm: pairs.Farm | None = None) -> pairs.Pairs:
    """Stored pairs between unchanged rows, plus a search around the new and changed ones."""
    stored = state.load_pairs(run.store, key)
    if stored is None:
        found, dirty = pairs.search(data, p, farm=farm), True
    else:
        kept, new, gone = state.carry(*stored, ids)
        found = pairs.join(kept, pairs.focus_search(data, p, new)) if new.any() else kept
        dirty = bool(new.any()) or gone
    if dirty:
        state.save_pairs(run.store, key, ids, found)
    return found

def _focus(run: SearchRun, matches: list[Match]) -> list[Match]:
    focus = run.focus
    return matches if focus is None else [m for m in matches if focus[m.i] or focus[m.j]]
