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

A dataset of many parts, each shot in its own fixed setup (19 foods, each on
its own shelf with its own coin and plate), passes that test while inside a
part it fails: a random partner is rarely of the same part.  So each part
where images are alike (:func:`parts`: the files of one folder name, of
one file-name prefix such as ``litchi`` of ``litchi002S(4).JPG``, or of one
name with its numbers left out) is tested on its own (:func:`part_verdict`):
how many other pictures of its part an image passes the level with, its
nearest left out.  A picture is counted once however many versions of it the
part holds: partners that are near-exact copies of one another (within a
quarter of the level) are one picture, since an export that keeps three
brightness versions of each source, or a picture uploaded under two names, is
a family of copies, not of look-alikes.  Where that is :data:`PART_COINCIDENCES` or more, the
detector's matches touching the part are warnings, said once
(``stats[name]["inseparable_parts"]``).  On the probe's ``ecustfd`` 2.2 % of
cross-split pairs of different portions of one food were within pHash 8, 0.28 %
of pairs of different foods.  Counting every version apart, the held-out
``pakcoy`` (three versions of each web picture, several uploads merged) failed
its parts ``dm*`` and ``bc*`` at 0.71 and 0.67, and pHash-0 copies across
splits stayed warnings; counted as pictures they are 0.11 and 0.09, while
every failed part of ``ecustfd`` stays failed (``benchmarks/field.py``).
"""

from __future__ import annotations

import re
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
#: Rows sampled in each part, and partners of each at most (every partner in a part this small).
PART_ROWS, PART_PARTNERS = 100, 400
#: Other images of its part an image passes a level with, its nearest left out (a copy), from
#: which on the level cannot tell a copy from the rest of the part.  Measured with pHash 8: the
#: ten classes of CIFAR-10 (``benchmarks/quality.py``) 0.00 each; the 60 parts of the probe's
#: ``ecustfd`` (a food, or its side or top views) 0.00-4.2, its false errors in parts at 0.26 and up.
PART_COINCIDENCES = 0.2
#: Passing partners of a row sorted into pictures at most; any beyond count as a picture each (a
#: row that passes with this many is a look-alike whatever its families).
MAX_FAMILY_PARTNERS = 64
#: Fewest rows a part needs to be tested on its own.
MIN_PART = 20
#: A part holding this share of the rows is the whole dataset, which :func:`sample` tests already.
WHOLE_PART = 0.8
#: Parts tested, the largest first: a folder per patient or per video makes thousands.
MAX_PARTS = 64
#: File-name prefixes a camera or phone gives every shot: they name the device, not what is shown.
#: Its shots are bursts of one subject as often as anything, and a burst is a leak: ``eggs`` of
#: ``benchmarks/field.py`` (``IMG_<date>_<time>``) lost 2 of its 29 burst pairs at error to such a part.
CAMERA_NAMES = frozenset({"img", "image", "dsc", "dscn", "dscf", "pxl", "photo", "mvimg", "gopr", "dji",
                          "screenshot", "snapshot", "capture", "frame"})


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

    cross = _cross(comparisons)
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


def parts(paths: Sequence[str], rows: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The rows of each part where images may be alike: one folder name (``cat/`` of
    ``train/cat/1.png`` and ``test/cat/9.png``), one file-name prefix of letters (``litchi*`` of
    ``litchi002S(4).JPG``, not a camera's ``IMG_``: :data:`CAMERA_NAMES`) or one name with its
    numbers left out (``litchi#s(#)``: the side views, apart from the top views ``litchi#t(#)``),
    with at least :data:`MIN_PART` rows and under :data:`WHOLE_PART` of them.

    A part that lies in one split only (``train*`` of ``train_00029.jpg``) has no partner across
    splits, and :func:`sample` leaves it untested."""
    import numpy as np

    every = np.concatenate(list(rows.values()) or [np.zeros(0, np.int64)])
    keys: dict[str, list[int]] = {}
    for r in np.unique(every).tolist():
        folder, _, name = paths[r].rpartition("/")
        if folder:
            keys.setdefault(folder.rpartition("/")[2].lower() + "/", []).append(r)
        found = re.match(r"[^\W\d_]+", name)
        prefix = found.group(0).lower() if found else ""
        if not prefix or prefix in CAMERA_NAMES:
            continue
        keys.setdefault(prefix + "*", []).append(r)
        stem = name.rpartition(".")[0] or name
        if re.search(r"\d", stem) and re.search(r"[^\W\d_]", stem):
            keys.setdefault(re.sub(r"\d+", "#", stem).lower(), []).append(r)
    kept = [(k, v) for k, v in keys.items() if MIN_PART <= len(v) < WHOLE_PART * len(np.unique(every))]
    kept = sorted(kept, key=lambda kv: (-len(kv[1]), kv[0]))[:MAX_PARTS]
    return {k: np.array(v, np.int64) for k, v in sorted(kept)}


#: ``judge(i, j) -> (passes, strength)`` of pairs of rows: whether each passes the level, how close it is.
Judge = Callable[["np.ndarray", "np.ndarray"], "tuple[np.ndarray, np.ndarray]"]


@dataclass(frozen=True)
class PartJudge:
    """How a detector judges pairs within a part: ``judge``, and ``same``, the strength from which
    two images are versions of one picture (a quarter of the level's distance: pHash 2 of 8)."""

    judge: Judge
    same: float


def within_parts(rows: dict[str, np.ndarray], comparisons: Sequence[tuple[str, str]], split_of: Sequence[str],
                 digests: Sequence[bytes], paths: Sequence[str], judge: PartJudge) -> tuple[dict[str, Any], PartMask]:
    """:func:`part_verdict` of each of the :func:`parts`: the stats to add (the parts that failed, and
    their coincidences per image) and a mask of the rows in a failed part."""
    import numpy as np

    mask = np.zeros(len(split_of), bool)
    stuck = np.zeros(len(split_of), bool)  # in a failed part where close matches are no evidence either
    failed: dict[str, float] = {}
    kept: list[str] = []
    tested = 0
    for name, members in parts(paths, rows).items():
        sub = {s: r[np.isin(r, members)] for s, r in rows.items()}
        found = part_verdict(sub, comparisons, split_of, digests, judge)
        if found is None:
            continue
        tested += 1
        if found[0] >= PART_COINCIDENCES and found[1] >= MIN_PASSING:
            mask[members] = True
            failed[name] = round(found[0], 2)
            if _close_separable(sub, comparisons, split_of, digests, judge):
                kept.append(name)
            else:
                stuck[members] = True
    out: dict[str, Any] = {"parts_tested": tested} if tested else {}
    if failed:
        out["inseparable_parts"] = dict(sorted(failed.items(), key=lambda kv: (-kv[1], kv[0])))
    if kept:
        out["close_separable_parts"] = sorted(kept)
    # A row in several failed parts (``mango*`` and ``mango#s(#)``) is freed only if every one of them is.
    return out, PartMask(mask, mask & ~stuck)


@dataclass(frozen=True)
class PartMask:
    """Rows in a part that failed (:func:`within_parts`), and those of such parts where matches as close
    as versions of one picture (``PartJudge.same``) are still rare between different pictures."""

    failed: np.ndarray
    close_ok: np.ndarray

    def any(self) -> bool:
        return bool(self.failed.any())


def _close_separable(rows: dict[str, np.ndarray], comparisons: Sequence[tuple[str, str]], split_of: Sequence[str],
                     digests: Sequence[bytes], judge: PartJudge) -> bool:
    """Whether a failed part passes :func:`part_verdict` at the strength of versions of one picture
    (``judge.same``), each partner that close counted apart: then a match that close is a copy, not one
    of the part's look-alikes.

    The part test counts what passes the level, and its count grows with the part: in 12,887 MRI
    slices (``tumor`` of ``benchmarks/field.py``) pHash and the thumbnail failed the part ``tr*`` (slices
    of one scan are alike), and copies at pHash 0 and cosine 0.9999 across splits became warnings, 128
    of 873 off the report's pixel findings.  At the closeness of versions few different slices pass.
    A part shot in one fixed setup (a small object moved on one shelf) has many other shots that close,
    counted apart here, and stays failed (``tests/detectors/test_homogeneity.py``)."""
    import numpy as np

    def strict(i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        _, strength = judge.judge(i, j)
        strength = np.asarray(strength, np.float64)
        return strength >= judge.same, strength

    found = part_verdict(rows, comparisons, split_of, digests, PartJudge(strict, np.inf))
    return found is None or not (found[0] >= PART_COINCIDENCES and found[1] >= MIN_PASSING)


def part_verdict(rows: dict[str, np.ndarray], comparisons: Sequence[tuple[str, str]], split_of: Sequence[str],
                 digests: Sequence[bytes], judge: PartJudge) -> tuple[float, int] | None:
    """How many other pictures of one part an image passes the level with, its nearest left out (a copy),
    the versions of one picture counted once (:func:`pictures`):
    the mean over :data:`PART_ROWS` rows of the part, each held against every row of the part in a
    split it is compared with (:data:`PART_PARTNERS` of them at most, the count scaled up to all);
    and how many such pairs were seen.  None when no row has a partner.

    A small part cannot be judged by a share of a few random pairs as the whole dataset is: its
    coincidences are few per image yet many per part, and a row's nearest of five random partners,
    left out as a possible copy, is most of them (``ecustfd``: 2 of 400 such pairs passed pHash 8
    among the plums, where 2.7 % of all their cross-split pairs do)."""
    import numpy as np

    if not any(len(r) for r in rows.values()):
        return None
    s = sample(rows, comparisons, split_of, digests, PART_ROWS, partners=1)
    rng = np.random.default_rng(0)
    cross = _cross(comparisons)
    found: list[float] = []
    seen = 0
    for r in s.i.tolist():
        pool = np.concatenate([rows.get(b, np.zeros(0, np.int64)) for b in cross.get(split_of[r], [])])
        pool = pool[pool != r]
        if len(pool) < 2:
            continue
        drawn = pool if len(pool) <= PART_PARTNERS else rng.choice(pool, PART_PARTNERS, replace=False)
        passes, strength = judge.judge(np.full(len(drawn), r, np.int64), drawn)
        passes = np.asarray(passes, bool)
        near = drawn[passes][np.argsort(-np.asarray(strength, np.float64)[passes], kind="stable")]
        beyond = max(pictures(near, judge) - 1, 0)
        seen += beyond
        found.append(beyond * len(pool) / len(drawn))
    return (float(np.mean(found)), seen) if found else None


def pictures(rows: np.ndarray, judge: PartJudge) -> int:
    """How many pictures ``rows`` (nearest first) hold: each in turn, with every later row at least
    ``judge.same`` to it, is one.  Only the first :data:`MAX_FAMILY_PARTNERS` are sorted."""
    import numpy as np

    left = rows[:MAX_FAMILY_PARTNERS]
    count = len(rows) - len(left)
    while len(left):
        count += 1
        head, left = left[0], left[1:]
        if len(left):
            _, strength = judge.judge(np.full(len(left), head, np.int64), left)
            left = left[np.asarray(strength, np.float64) < judge.same]
    return count


def _cross(comparisons: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    """The splits each split is compared with: the others where there are any, else itself."""
    targets: dict[str, list[str]] = {}
    for a, b in comparisons:
        for x, y in ((a, b), (b, a)):
            if y not in targets.setdefault(x, []):
                targets[x].append(y)
    return {a: [b for b in t if b != a] or t for a, t in targets.items()}


def weaken(found: list[Any], whole: bool, mask: PartMask | None = None,
           one_picture: Callable[[Any], bool] | None = None, close: Callable[[Any], bool] | None = None) -> list[Any]:
    """``found`` with every match weak (``whole``: the dataset failed), or those touching a failed part.

    ``one_picture``: the matches a failed part leaves strong (:func:`turned_version`).  In a held-out
    Roboflow export of brain MRI slices (flipped, turned and re-contrasted versions of each picture, one
    picture uploaded under two names) both parts failed and 170 cross-split links at pHash 0, thumbnail
    cosine 0.99 and more, were warnings only, most of them flipped or turned."""
    import dataclasses

    if whole:
        return [dataclasses.replace(m, weak=True) for m in found]
    if mask is None or not mask.any():
        return found
    spared = one_picture or (lambda m: False)
    near = close or (lambda m: False)
    failed, ok = mask.failed, mask.close_ok

    def freed(m: Any) -> bool:  # as close as versions, in parts where that closeness is rare
        return bool(near(m) and (ok[m.i] or not failed[m.i]) and (ok[m.j] or not failed[m.j]))

    return [dataclasses.replace(m, weak=True) if (failed[m.i] or failed[m.j]) and not spared(m) and not freed(m)
            else m for m in found]


def turned_version(match: Any, close: bool) -> bool:
    """Whether a match in a failed part is a turned version of one picture: ``close`` (as near as the part
    test takes for versions of one picture, ``PartJudge.same``) and found in an orientation other than
    identity.  Another shot of a fixed setup is as close (a small object moved: pHash 0, ``tests``), but
    upright: a camera that stays put does not turn its scene over, an export that augments does."""
    return close and match.orientation != "identity"


def noted(stats: Any) -> bool:
    """Whether a detector's stats carry a verdict a report must state: the dataset or a part failed, or
    its error level was raised over the dataset's own impostors (``raised``)."""
    return isinstance(stats, dict) and bool(stats.get("inseparable") or stats.get("inseparable_parts")
                                            or stats.get("raised"))


def said(name: str, stats: Any) -> str:
    """The one sentence a report says of a detector that cannot separate copies here, or ""."""
    if not isinstance(stats, dict):
        return ""
    if not stats.get("inseparable"):
        return _said_parts(name, stats)
    try:
        passing, pairs = int(stats.get("random_passing", 0)), int(stats.get("random_pairs", 0))
    except (TypeError, ValueError):  # a saved report may say anything
        return ""
    left = stats.get("left_to_aligned")
    also = (f"; {left} of its matches, upright or mirrored, were not reported: aligned searches those "
            "views itself"
            if isinstance(left, int) and not isinstance(left, bool) and left > 0 else "")
    past = stats.get("turned_beyond_budget")
    if isinstance(past, int) and not isinstance(past, bool) and past > 0:
        also += f"; {past} turned matches beyond each image's closest were not judged"
    return (f"{name} cannot tell copies from other images of this dataset "
            f"({passing} of {pairs} random pairs pass its level): its matches are warnings only{also}")


def _said_parts(name: str, stats: dict) -> str:
    """The sentence for parts of the dataset that failed (:func:`within_parts`), or ""."""
    names = stats.get("inseparable_parts")
    if not isinstance(names, dict) or not names:  # a saved report may say anything
        return ""
    shown = ", ".join(str(n) for n in list(names)[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    return (f"{name} cannot tell copies from other images within {len(names)} part"
            f"{'s' if len(names) > 1 else ''} of this dataset ({shown}: an image there passes its level with "
            f"other images of its part besides its nearest): its matches there are warnings only")
