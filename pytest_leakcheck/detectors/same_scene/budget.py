"""Same-scene verifications a set of one scene spares: pairs that can only end inside its note.

On a fixed camera every shot is a re-shot of every other: each image's top ``candidates``
per compared split all verify (``chess`` of ``benchmarks/field.py``: 1,331 of 1,399 pairs),
and the report folds them into one ``shared-scene`` note (``pipeline/clusters.py``: a web of
links over :data:`SCENE_SHARE` of the images, and over :data:`MAX_MEMBERS`).  A same-scene
link there is never reported apart: at ``warning`` it neither stands out of the web (only
error-level links may) nor joins two clusters.  So the search verifies first each image's
single best candidate per compared split (both ways asked, as every candidate is); when the
matches those make already join such a web, the other candidates of rows inside it can only
add a link to the note, and are not verified.  What the note needs is the web; what a re-shot
across splits needs is its own best candidate, which was verified.  A turned copy
(``turned-copy``, which stands out of any web) is its picture's best candidate, as the copy
shares its every rare word; it too was verified.

Only where the search is heavy (:data:`BUDGET_FROM` candidate pairs, as many as go to the
check's workers) and the detector's links are warnings (at ``error`` a link may stand out of
the web).  The pairs spared are counted (``stats["same_scene"]["spared"]``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

#: ``pipeline/clusters.py``'s SCENE_SHARE and MAX_MEMBERS: a web of links over this share of the
#: images, and over this many files, is one scene.  Not imported: ``pipeline`` imports the
#: detectors (``tests/detectors/same_scene/test_budget.py`` holds them equal).
SCENE_SHARE = 0.5
MAX_MEMBERS = 25
#: Candidate pairs from which the budget applies (``find.BACKGROUND_FROM``, where verification
#: goes to the check's workers): below, every candidate is verified as before.
BUDGET_FROM = 500

#: Candidate pairs verified before any stage, spread over them, and the share of them that must
#: match for the stages to be retrieved and verified: stages are retrieved and verified while the
#: search waits, so on a set of many scenes they cost wall time the background verification would
#: not (``tracks`` of ``benchmarks/field.py``: 3,432 photos, 5,633 pairs, none spared, same-scene's
#: search 6.0-7.5 s -> 12.9-19.8 s wall in same-run pairs; 13 of its 64 probed pairs match). On one
#: scene nearly every candidate pair matches (``chess``: 1,331 of 1,399).
PROBE = 64
PROBE_SHARE = 0.6

Pair = tuple[int, int]


def staged(pairs: Sequence[Pair], first: Sequence[Pair]) -> tuple[list[Pair], list[Pair]]:
    """``pairs`` as (the best candidates, verified first; the others), each sorted."""
    best = set(first) & set(pairs)
    return sorted(best), sorted(p for p in pairs if p not in best)


def largest(pairs: Sequence[Pair], matched: Sequence[bool]) -> np.ndarray:
    """Rows of the largest web the ``matched`` pairs make (the first of equals by its smallest row)."""
    from ...search.unionfind import UnionFind

    uf = UnionFind()
    for (i, j), ok in zip(pairs, matched):
        if ok:
            uf.union(i, j)
    webs = uf.webs()
    best = max(webs.values(), key=len, default=[])
    return np.array(best, np.int64)


def is_scene(rows: np.ndarray, images: int) -> bool:
    """Whether a web of ``rows`` is the note's: over :data:`SCENE_SHARE` of ``images`` and over
    :data:`MAX_MEMBERS` files."""
    return len(rows) > MAX_MEMBERS and len(rows) >= SCENE_SHARE * images


def spare(rest: Sequence[Pair], inside: np.ndarray) -> list[Pair]:
    """The pairs of ``rest`` still to verify: those with a row outside the web ``inside``."""
    if not len(inside):
        return list(rest)
    within = set(inside.tolist())
    return [(i, j) for i, j in rest if i not in within or j not in within]


def plan(pairs: Sequence[Pair], stages: Iterable[Sequence[Pair]], images: int,
         verify: Callable[[list[Pair]], list[tuple[bool, object]]]) -> tuple[dict[Pair, object], list[Pair]]:
    """The pairs verified in stages (each image's best candidate, then its best two, ...: ``stages``)
    and what the search keeps of each, and the pairs left to verify.

    ``verify`` gives, per pair, whether it is a match and what the search keeps of it.  The first
    stage is verified whole.  Each later stage, and the pairs left, verify only the pairs that touch a
    row outside the web of the note's size where there is one (one link into it makes the row part of
    it).  A stage whose matches make no such web ends the stages: every pair left is verified.  Before
    the stages, :data:`PROBE` of ``pairs``: where under :data:`PROBE_SHARE` of them match, no stage is
    retrieved (``stages`` may be lazy) or verified."""
    done: dict[Pair, object] = {}
    matched: dict[Pair, bool] = {}
    inside = np.zeros(0, np.int64)
    probe = list(pairs[::max(1, len(pairs) // PROBE)][:PROBE])  # before any stage is retrieved
    for p, (ok, kept) in zip(probe, verify(probe) if probe else []):
        done[p], matched[p] = kept, ok
    if sum(matched.values()) < PROBE_SHARE * len(probe):
        return done, [p for p in pairs if p not in done]  # many scenes: the rest beside the next search
    for stage in stages:
        todo = [p for p in staged(pairs, stage)[0] if p not in done]
        todo = spare(todo, inside)
        for p, (ok, kept) in zip(todo, verify(todo)):
            done[p], matched[p] = kept, ok
        rows = largest(list(matched), list(matched.values()))
        inside = rows if is_scene(rows, images) else np.zeros(0, np.int64)
        if not len(inside):
            # Not one scene, as far as the stage shows: the rest goes to the workers beside the next
            # detectors' search.  Close to the edge on ``chess``: its first stage made a web of 145 of
            # 289 images, one over the half, its second of all 289 (``benchmarks/photos2mp.py --data``).
            break
    return done, spare([p for p in pairs if p not in done], inside)
