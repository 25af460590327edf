"""Impostors that look like the data: pairs retrieval proposes across two class labels.

Upside-down impostors never look like an upright picture of the data, and on
pictures that are all alike they set the error level where different photos
pass: LFW's pre-aligned 100 px faces put the eyes in one place, and other press
photos of one man aligned at 0.87-0.90 against the small-set floor of 0.85
(``lfw-faces`` of ``benchmarks/field.py``), two CIFAR horses at 0.80 against a
level of 0.78 (``benchmarks/quality.py --only init``).  Where the data names a
class per image (ImageFolder class folders, a label column: ``dataset/labels``),
an image's retrieved candidates in the other splits that carry another label
are other pictures by the data's own account: the error level is raised to
where those reach at the asked rate (:func:`level`).

A picture filed under two classes is a copy all the same (``covidct``'s two
true errors are one CT slice under both labels), so scores no impostor reaches
(``TURNED_COPY``) are left out, and the few highest left are set aside before
the tail is fitted (:data:`SPARE`); a dataset whose cross-label candidates are
mostly copies (classes that are versions of one picture) gives no level at all.
The level is aligned's own: hash and thumbnail matches keep the impostors'
level (``levels.alike``), so it never demotes a hash-identical or turned copy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import alignment
from . import pairs
from . import uploads

#: Images whose cross-label candidates are scored (by content, as the impostors are).
ROWS = 4000
#: Of every this many cross-label scores, one of the highest is set aside as a possible
#: copy under two labels before the tail is fitted (at least ``SPARE_MIN``).
SPARE, SPARE_MIN = 200, 2
#: Fewer images with a cross-label candidate than this give no level: a tail needs a sample.
LEAST = 100
#: A share of cross-label scores at or above the copy score beyond which the classes are not
#: other pictures (an augmentation's folders, one picture per class): no level.
COPY_SHARE = 0.05


def ids(labels: Sequence[str | None] | None) -> np.ndarray | None:
    """(N,) an id per row's label (-1: none), or None when fewer than two labels are known."""
    if labels is None:
        return None
    index: dict[str, int] = {}
    out = np.array([-1 if x is None else index.setdefault(x, len(index)) for x in labels], np.int64)
    return out if len(index) >= 2 else None


def scores(data: pairs.Data, p: pairs.Plan, rows: np.ndarray, label: np.ndarray) -> np.ndarray:
    """The best score of each of ``rows`` against its retrieved candidates in the other splits that carry
    another label (rows with none left out), aligned at 32 px as the search aligns them."""
    out: list[np.ndarray] = []
    if data.index is None:
        return np.zeros(0)
    for a in p.targets:
        sel = rows[(p.split_of[rows] == a) & (label[rows] >= 0)]
        others = [g for g, b in enumerate(p.targets[a]) if b != a]
        if not len(sel) or not others:
            continue
        for r0 in range(0, len(sel), 256):
            q = sel[r0:r0 + 256]
            cand, flip = pairs.retrieve(data, p, a, q)
            cand, flip = cand[:, others].reshape(len(q), -1), flip[:, others].reshape(len(q), -1)
            theirs = np.where(cand >= 0, label[np.maximum(cand, 0)], -1)
            other = (cand >= 0) & (theirs >= 0) & (theirs != label[q][:, None])
            other &= ~uploads.same(p.upload, q, cand)
            cand = np.where(other, cand, -1)
            got = alignment.verify(data.grey[q].astype(np.float32), cand, flip, data.references,
                                   always=cand.shape[1], tiles=False)
            got = np.where(other, np.nan_to_num(got, nan=-np.inf), -np.inf).max(1)
            out.append(got[np.isfinite(got)])
    return np.concatenate(out) if out else np.zeros(0)


def level(s: np.ndarray, per_10k: float, copy: float) -> float | None:
    """Where cross-label scores ``s`` reach at ``per_10k``, the copies among them left out; None where
    they are too few or mostly copies (see the module's docstring)."""
    s = np.sort(s[np.isfinite(s)])
    copies = int(np.count_nonzero(s >= copy))
    if len(s) < LEAST or copies > COPY_SHARE * len(s):
        return None
    s = s[:len(s) - copies]
    spare = max(SPARE_MIN, len(s) // SPARE)
    return round(alignment.calibrate(s[:len(s) - spare], per_10k), 4)


def raised(out: dict[str, Any], data: pairs.Data, p: pairs.Plan, digests: Sequence[bytes],
           label: np.ndarray | None, copy: float) -> dict[str, Any]:
    """``out``'s aligned error levels raised to the cross-label level (``label_level``), where there is one."""
    if label is None:
        return {}
    every = np.sort(np.concatenate([p.rows[a] for a in p.targets] or [np.zeros(0, np.int64)]))
    s = scores(data, p, pairs.by_content(digests, every, ROWS), label)
    lv = level(s, float(out["error_false_alarms_per_10k"]), copy)
    said = {"label_on": int(len(s)), "label_top": [round(float(x), 4) for x in np.sort(s)[::-1][:12]]}
    if lv is None:
        return said
    return {**said, "label_level": lv, "error_threshold": max(out["error_threshold"], lv),
            "within_error_threshold": max(out.get("within_error_threshold", lv), lv)}
