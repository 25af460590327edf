"""The fine level held against what this dataset's own look-alikes score at 96 px.

The fine level (``hires_levels.calibration``) is set by upside-down large images against their best
candidates.  An upside-down hand or face never looks like another upright one: on a set of one kind
of subject posed alike on one plain ground the impostors' fine scores stay far under the floor
(``signdigits`` of ``benchmarks/field.py``: 100 px hand signs, largest 0.24 against the floor 0.45),
while two students' hands making one sign, which the 32 px verdict had already made errors, agreed at
0.45-0.51 in fine detail and stayed errors (3 of 3 different hands by eye).

So, as ``levels.alike`` does for the 32 px level, each sampled large image's retrieved neighbours in
the other splits stand for impostors that look like the data.  Fine detail agrees more the better
two pictures align at 32 px, and the fine verdict only judges pairs at the 32 px error level, so the
neighbours that stand for them are each image's nearest one that the 32 px verdict does not already
call a copy (under its error level), and of those the NEAREST share by their 32 px score.  A neighbour
whose fine detail agrees as only copies do (``hires_levels.FINE_TURNED_COPY``) is a copy, and where
one is among the nearest share they are copy families, not look-alikes, and set nothing (on ``eyes``,
fundus photos with augmented copies, 37 of 132 were, and the rest, other copies at 0.74-0.79, had
raised the level from 0.73 to 0.79 and made 6 copy links at pHash 0-2 warnings).
The fine level is raised to the largest fine score of the rest: too few for a tail fit at the fine
rate, so, as for a small sample of impostors, the largest seen.  ``benchmarks/field.py``: on
``signdigits`` the nearest tenth of 1,000 images' neighbours (32 px 0.82-0.87) reach 0.54, where
copies of its own pictures cropped 3-6 % a side and resized score 0.63 and up at their 5th
percentile; 3 -> 0 near-duplicate errors.  On ``lfw-faces`` they reach 0.70 (its two aligned error
links, another press photo and a shot seconds apart at one event, 0.51 and 0.53, became warnings);
``xray-wrist`` 0.48, ``dental`` 0.25 (the floor stands), the same error links on both.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import alignment, pairs, uploads

#: Large images whose nearest neighbours are scored in fine detail (a content-keyed sample): each costs
#: its candidates' 32 px alignment and one fine score (about 2 ms).
ROWS = 1000
#: The share of those neighbours, the best aligned at 32 px, that stand for the pairs the fine verdict judges.
NEAREST = 0.1


def neighbour_pairs(data: pairs.Data, p: pairs.Plan, pick: np.ndarray, big: np.ndarray,
                    below: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(row, its best large neighbour across splits at 32 px under ``below``, mirrored, 32 px score)
    for the sampled ``pick`` rows that have one."""
    assert data.index is not None
    out: list[tuple[np.ndarray, ...]] = []
    for a in p.targets:
        rows = pick[p.split_of[pick] == a]
        others = [g for g, b in enumerate(p.targets[a]) if b != a]
        if not len(rows) or not others:
            continue
        cand, flip = pairs.retrieve(data, p, a, rows)
        cand, flip = cand[:, others].reshape(len(rows), -1), flip[:, others].reshape(len(rows), -1)
        cand = np.where((cand >= 0) & big[np.maximum(cand, 0)] & ~uploads.same(p.upload, rows, cand), cand, -1)
        sc = np.nan_to_num(alignment.verify(data.grey[rows].astype(np.float32), cand, flip, data.references,
                                            always=cand.shape[1], tiles=False), nan=-np.inf)
        sc = np.where((cand >= 0) & (sc < below), sc, -np.inf)
        at = sc.argmax(1)
        top = sc[np.arange(len(rows)), at]
        keep = np.isfinite(top)
        out.append((rows[keep], cand[keep, at[keep]], flip[keep, at[keep]], top[keep]))
    if not out:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, bool), np.zeros(0)
    return tuple(np.concatenate(x) for x in zip(*out))  # type: ignore[return-value]


def nearest(coarse: np.ndarray) -> np.ndarray:
    """Indices of the NEAREST share of neighbours by their 32 px score ``coarse`` (at least one)."""
    n = max(1, int(round(NEAREST * len(coarse))))
    return np.argsort(-coarse, kind="stable")[:n]


def level(fine: np.ndarray, coarse: np.ndarray, copy: float) -> dict[str, Any]:
    """The fine level the nearest neighbours set (``fine_neighbour_*`` keys of the aligned stats); none
    where a copy (fine ``copy`` or more) is among them: then the nearest neighbours are copy families
    (an export's augmentations), whose other members agree as copies do, not as look-alikes."""
    ok = np.isfinite(fine)
    fine, coarse = fine[ok], coarse[ok]
    copies = int(np.count_nonzero(fine >= copy))
    if not len(fine):
        return {"fine_neighbour_copies": copies}
    near = nearest(coarse)
    out: dict[str, Any] = {"fine_neighbour_copies": copies, "fine_neighbours_on": int(len(near)),
                           "fine_neighbours_from": round(float(coarse[near].min()), 4)}
    if np.any(fine[near] >= copy):
        return out
    return {**out, "fine_neighbour_level": round(float(fine[near].max()), 4)}
