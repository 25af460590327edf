"""Whether a detector can tell copies from the rest of *this* dataset: its level against random pairs.

A level set once for all data (a hash distance, a cosine) or calibrated on
impostors that never look like the data (``aligned``'s upside-down images)
says nothing of a fixed camera, where every photo is the same board with one
piece moved: there a quarter of all pairs of different shots are within
pHash 8 and pass ``aligned``'s levels (``benchmarks/field.py``, ``chess``).
So each level is also held against pairs of this dataset drawn at random
across the compared splits.  Such pairs are impostors that look like the data;
a copy among them is rare, and is discounted by leaving out each sampled
row's nearest partner (a row has one or two copies, a fixed scene has
every other shot).  When more than :data:`INSEPARABLE` of what remains
passes a detector's level, the detector cannot separate copies from the rest
here: it says so once (``stats[name]["inseparable"]``) and its matches are
warnings at most.  On ordinary data the share is zero: the probe of
``benchmarks/field.py`` measured 0.0-0.1 % of cross-split pairs within pHash 8
on five of its datasets, 25.8 % on ``chess``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

#: Rows sampled, and random partners drawn for each (the nearest of them is left out).
ROWS, PARTNERS = 500, 5
#: Share of random pairs passing a level above which the detector cannot separate copies.
INSEPARABLE = 0.01
#: Fewest passing pairs that make the verdict: one or two coincidences in a small set say nothing.
MIN_PASSING = 3


@dataclass(frozen=True)
class Sample:
    """Random pairs: row ``i[n]`` against row ``j[n]``, ``PARTNERS`` consecutive pairs per sampled row."""

    i: np.ndarray
    j: np.ndarray
    per_row: int


def sample(rows: dict[str, np.ndarray], comparisons: Sequence[tuple[str, str]], split_of: Sequence[str],
           digests: Sequence[bytes], n_rows: int = ROWS, partners: int = PARTNERS) -> Sample:
    """Rows chosen by content (the same data gives the same sample), each with ``partners`` distinct
    random rows of a split it is compared with: another split where there is one, else its own
    (never itself)."""
    import numpy as np

    targets: dict[str, list[str]] = {}
    for a, b in comparisons:
        for x, y in ((a, b), (b, a)):
            if y not in targets.setdefault(x, []):
                targets[x].append(y)
    cross = {a: [b for b in t if b != a] or t for a, t in targets.items()}
    every = np.sort(np.concatenate([rows[a] for a in cross if a in rows] or [np.zeros(0, np.int64)]))
    rng = np.random.default_rng(0)
    qi: list[int] = []
    qj: list[int] = []
    for r in _by_content(digests, every, n_rows).tolist():
        pool = np.concatenate([rows.get(b, np.zeros(0, np.int64)) for b in cross[split_of[r]]])
        pool = pool[pool != r]
        # Distinct partners: a copy drawn twice would be left out once and counted once.
        drawn = pool[rng.integers(0, len(pool), 4 * partners)] if len(pool) > partners else pool
        drawn = drawn[np.sort(np.unique(drawn, return_index=True)[1])][:partners]
        if len(drawn) < partners:
            continue  # a split too small to draw from: its rows are drawn from the other side
        qi += [r] * partners
        qj += drawn.tolist()
    return Sample(np.array(qi, np.int64), np.array(qj, np.int64), partners)


def _by_content(digests: Sequence[bytes], rows: np.ndarray, n: int) -> np.ndarray:
    """The ``n`` rows with the smallest content digests: a sample that depends on the contents alone."""
    import numpy as np

    if len(rows) <= n:
        return rows
    head = np.frombuffer(b"".join(digests[r][:8].ljust(8, b"\0") for r in rows.tolist()), ">u8")
    return np.sort(rows[np.lexsort((rows, head))[:n]])


def verdict(s: Sample, passes: Callable[[np.ndarray], np.ndarray], strength: np.ndarray) -> dict[str, Any]:
    """How many of the random pairs pass (``passes(indices) -> bool``), each row's strongest partner left
    out (``strength``: larger is closer), and whether that is too many to separate copies."""
    import numpy as np

    if not len(s.i):
        return {"random_pairs": 0, "random_passing": 0, "inseparable": False}
    k = s.per_row
    strength = np.asarray(strength, np.float64).reshape(-1, k)
    keep = np.ones(strength.shape, bool)
    keep[np.arange(len(strength)), np.argmax(strength, 1)] = False
    idx = np.flatnonzero(keep.ravel())
    passing = int(np.asarray(passes(idx), bool).sum())
    share = passing / max(1, len(idx))
    return {"random_pairs": int(len(idx)), "random_passing": passing,
            "inseparable": bool(passing >= MIN_PASSING and share > INSEPARABLE)}


def said(name: str, stats: Any) -> str:
    """The one sentence a report says of a detector that cannot separate copies here, or ""."""
    if not isinstance(stats, dict) or not stats.get("inseparable"):
        return ""
    try:
        passing, pairs = int(stats.get("random_passing", 0)), int(stats.get("random_pairs", 0))
    except (TypeError, ValueError):  # a saved report may say anything
        return ""
    left = stats.get("left_to_aligned")
    also = (f"; {left} in views aligned searches are left to it"
            if isinstance(left, int) and not isinstance(left, bool) and left > 0 else "")
    return (f"{name} cannot tell copies from other images of this dataset "
            f"({passing} of {pairs} random pairs pass its level): its matches are warnings only{also}")
