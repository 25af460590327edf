"""Who the ``aligned`` detector asks about whom, and how two directions make one verdict.

The arithmetic (descriptors, retrieval, correlation) is in ``alignment.py``;
this module plans the search over splits:

- every row asks each split it is compared with (its own split too, when
  within-split duplicates are searched) for its top-k candidates;
- a row verifies its own candidates *and* the rows that retrieved it, with
  one set of windows for all of them, so every retrieved pair is scored in
  both directions and a pair's verdict is the better of the two: it does not
  depend on which file is in which split, or which split is smaller;
- the calibration asks the same question of upside-down rows (which cannot
  be anyone's copy) and scores their best candidates both ways too, and
  ``calibration``/``matches`` turn the scores into the two levels and the
  matches above them.

The verification and calibration blocks run on this process's threads, or,
given a :data:`Farm` (``cluster``: the owner's Dask cluster), wherever it
sends them: the same module-level block functions, the same inputs per block,
the results taken in block order, so both give the same pairs and levels.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...progress import no_tick
from ...search import lists, multiview
from ...signals.families import Signatures
from . import alignment, descriptors, turned, uploads

_BLOCK = 1024  # query rows per verification block; their candidate lists are padded to the block's longest
_REVERSE_TOP = 2  # impostors whose best few forward candidates are also scored backwards
_IMPOSTOR_BLOCK = 256  # impostor rows per calibration block
# Pairs pair_scores verifies at once, some 30 KB each meanwhile: ``refine`` asks about every hash
# match, and 12,887 MRI slices (alike by nature) took a check from 1.3 to 5.5 GB asking at once.
PAIR_BLOCK = 1024


class Templates:
    """Coarse templates of rows ``0..N-1`` and of their mirror images (``N..2N-1``), made when first asked.

    A focus search (one commit, one pull request) touches a few hundred
    rows; making every row's template up front cost it a second at 50,000
    images, and 1.2 KB per image for the whole check (the memo now holds
    512 B a row, in half precision).  Each row's template is made once, in
    the block that first needs it; threads that race for the same row write
    the same values.
    """

    def __init__(self, grey: np.ndarray) -> None:
        self.grey = grey
        # Half precision: the coarse templates only gate candidates and pick their window
        # (the verdict is computed at 32 px from the grey squares), and at a million rows a
        # float32 memo alone was a gigabyte.
        self.memo = np.zeros((len(grey), (alignment.T // 2) ** 2), np.float16)
        self.made = np.zeros(len(grey), bool)

    def __reduce__(self) -> tuple[Any, tuple[np.ndarray]]:
        """Pickled (to a cluster's workers) as the grey squares alone: each worker makes the
        templates its blocks need, rather than receiving a memo of 512 B a row, mostly empty."""
        return Templates, (self.grey,)

    def __getitem__(self, index: np.ndarray) -> np.ndarray:
        index = np.asarray(index)
        n, t = len(self.grey), alignment.T // 2
        rows = index % max(n, 1)
        todo = np.unique(rows[~self.made[rows]])
        if len(todo):
            self.memo[todo] = alignment.templates(self.grey[todo], coarse=True)
            self.made[todo] = True
        out = self.memo[rows].astype(np.float32)
        mirrored = index >= n
        if mirrored.any():
            out[mirrored] = out[mirrored].reshape(-1, t, t)[:, :, ::-1].reshape(-1, t * t)
        return out


@dataclass(frozen=True)
class Data:
    """Per-row arrays the search reads (global rows; invalid rows are never asked)."""

    grey: np.ndarray  # (N, 32, 32) uint8
    tmpl2: Templates  # coarse templates of rows 0..N-1, then of their mirror images
    hog: np.ndarray  # (N, 128) float16, as stored
    index: multiview.Index | None
    vec: np.ndarray  # (N, d) projected unit vectors (empty without an index)
    #: Whether mirror images are searched too; their vectors are projected for the rows that ask
    #: (a pull request's hundred, not every row: N x d floats less to hold).
    mirror: bool
    lists: np.ndarray | None = None  # (N,) each row's list in the inverted file, when the index has one

    @property
    def references(self) -> alignment.References:
        """The rows as verification's candidates."""
        return alignment.References(self.grey, self.tmpl2)


@dataclass(frozen=True)
class Plan:
    """Valid rows per split, the splits each split asks, and the search's knobs."""

    rows: dict[str, np.ndarray]
    targets: dict[str, tuple[str, ...]]
    split_of: np.ndarray  # (N,) object
    k: int
    mirror: bool
    upload: np.ndarray | None = None  # (N,) upload id of each row by its name (``uploads.ids``)


@dataclass(frozen=True)
class Pairs:
    """Unordered pairs i < j with their symmetric score and whether the best alignment is mirrored."""

    i: np.ndarray
    j: np.ndarray
    score: np.ndarray
    flipped: np.ndarray


#: Runs ``fn(data, plan, job)`` for each job elsewhere (a cluster's workers), returns the results in
#: job order and calls ``tick(1)`` as each arrives; ``fn`` is a module-level block function here.
Farm = Callable[[Callable[[Data, Plan, Any], Any], Iterable[Any], Callable[[int], None]], list]


def by_content(digests: Sequence[bytes], rows: np.ndarray, n: int) -> np.ndarray:
    """The ``n`` of ``rows`` with the smallest content digests, in row order: a bounded sample that
    depends on the contents alone.

    Unlike every k-th row, it does not shift when files are added, renamed
    or moved to another split: adding 1 % of new images replaces about 1 %
    of the sample, so what is estimated on it (the index, the levels) moves
    as little as the data did.
    """
    rows = np.asarray(rows, np.int64)
    if len(rows) <= n:
        return rows
    head = np.frombuffer(b"".join(digests[r][:8].ljust(8, b"\0") for r in rows.tolist()), ">u8")
    return np.sort(rows[np.lexsort((rows, head))[:n]])


def fit(sigs: Signatures, valid_rows: np.ndarray) -> multiview.Index:
    """The retrieval index, fitted on content-keyed samples of the valid rows: the projection, then
    (for a large dataset) the lists of the inverted file."""
    hog = sigs.arrays["desc:hog"]
    index = multiview.fit_index(hog[by_content(sigs.digests, valid_rows, multiview.PCA_SAMPLE)].astype(np.float32))
    if len(valid_rows) < multiview.IVF_MIN:
        return index
    sample = by_content(sigs.digests, valid_rows, multiview.KMEANS_SAMPLE)
    cent = multiview.fit_lists(index.project(hog[sample].astype(np.float32)), len(valid_rows))
    return dataclasses.replace(index, centroids=cent)


def prepare(sigs: Signatures, mirror: bool, index: multiview.Index | None) -> Data:
    """What the search reads; without an index only pairs can be scored (no retrieval)."""
    grey = sigs.arrays["desc:grey32"].reshape(-1, alignment.S, alignment.S)
    hog = sigs.arrays["desc:hog"]
    if index is None:
        return Data(grey, Templates(grey), hog, None, np.zeros((len(grey), 0), np.float32), mirror)
    vec = _project(index, hog)
    row_lists = None if index.centroids is None else lists.assign(vec, index.centroids)
    return Data(grey, Templates(grey), hog, index, vec, mirror, row_lists)


def _project(index: multiview.Index, hog: np.ndarray, perm: np.ndarray | None = None) -> np.ndarray:
    """Projected unit vectors of every row, in blocks: no float32 copy of all descriptors at once."""
    out = np.zeros((len(hog), index.basis.shape[1]), np.float32)
    for a in range(0, len(hog), 65536):
        block = hog[a:a + 65536].astype(np.float32)
        out[a:a + 65536] = index.project(block if perm is None else block[:, perm])
    return out


def plan(rows: dict[str, np.ndarray], comparisons: Sequence[tuple[str, str]], split_of: Sequence[str],
         k: int, mirror: bool, upload: np.ndarray | None = None) -> Plan:
    targets: dict[str, list[str]] = {}
    for a, b in comparisons:
        for x, y in ((a, b), (b, a)):
            if y not in targets.setdefault(x, []):
                targets[x].append(y)
    return Plan(rows, {a: tuple(t) for a, t in targets.items()}, np.array(split_of, dtype=object), k, mirror, upload)


def _local(rows: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Position of each ``wanted`` row in sorted ``rows``, -1 where absent."""
    if not len(rows):
        return np.full(len(wanted), -1, np.int64)
    pos = np.minimum(np.searchsorted(rows, wanted), len(rows) - 1)
    return np.where(rows[pos] == wanted, pos, -1)


def retrieve(data: Data, p: Plan, a: str, qrows: np.ndarray,
             views: list[np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(n, G, k) global candidate rows of split-``a`` rows in each split ``a`` asks (-1 padded), and mirror flags."""
    if views is None:
        mirrored = p.mirror and data.mirror and data.index is not None
        views = [data.vec[qrows], *([_project(data.index, data.hog[qrows], descriptors.HOG_HFLIP)] if mirrored else [])]
    out = np.full((len(qrows), len(p.targets[a]), p.k), -1, np.int64)
    flip = np.zeros(out.shape, bool)
    for g, b in enumerate(p.targets[a]):
        refs = p.rows[b]
        if not len(refs) or not len(qrows):
            continue
        exclude = _local(refs, qrows) if a == b else None
        if data.lists is None or data.index is None or data.index.centroids is None:
            idx, flip[:, g] = multiview.topk(views, data.vec[refs], p.k, exclude)
        else:
            idx, flip[:, g] = multiview.ivf_topk(views, data.vec[refs], data.lists[refs], data.index.centroids,
                                                 p.k, exclude)
        out[:, g] = np.where(idx >= 0, refs[np.maximum(idx, 0)], -1)
    return out, flip


def _pad(ql: np.ndarray, n: int, *columns: np.ndarray) -> list[np.ndarray]:
    """Flat entries sorted by local query ``ql`` -> (n, width) matrices, padded with -1 / False."""
    width = max(1, int(np.bincount(ql, minlength=n).max(initial=0)))
    slot = np.arange(len(ql)) - np.searchsorted(ql, ql)
    out = []
    for col in columns:
        m = np.full((n, width), False if col.dtype == bool else -1, col.dtype)
        m[ql, slot] = col
        out.append(m)
    return out


Retrieved = dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]  # split -> rows, candidates, flags


@dataclass(frozen=True)
class Lists:
    """Each query's candidates (its own, and the rows that retrieved it), one sorted int64 key per
    (query, candidate): ``((local query * N + row) << 2) | (from the reverse side) << 1 | mirrored``.

    One array, sorted in place, rather than three arrays, their lexsort and its reordered
    copies, which hold several times the memory at scale (``benchmarks/search_memory.py``).  Where a
    pair comes from both sides, the query's own retrieval wins (it sorts first).
    """

    keys: np.ndarray
    n: int  # rows in the dataset

    def block(self, a0: int, a1: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(local query, candidate row, mirrored) of the queries ``a0 <= q < a1``."""
        lo, hi = np.searchsorted(self.keys, [(a0 * self.n) << 2, (a1 * self.n) << 2])
        pair = self.keys[lo:hi] >> 2
        return pair // self.n, pair % self.n, (self.keys[lo:hi] & 1).astype(bool)


def _lists(p: Plan, a: str, ret: Retrieved) -> Lists:
    """The candidates of every split-``a`` query, as :class:`Lists`."""
    qrows, own, own_flip = ret[a]
    n = len(p.split_of)
    width = own.shape[1] * own.shape[2]

    def keys(ql: np.ndarray, r: np.ndarray, flip: np.ndarray, reverse: int) -> np.ndarray:
        return ((ql.astype(np.int64) * n + r) << 2) | (reverse << 1) | flip.astype(np.int64)

    parts = [keys(np.repeat(np.arange(len(qrows)), width), own.ravel(), own_flip.ravel(), 0)]
    for b in p.targets[a]:
        if b not in ret:
            continue
        brows, bret, bflip = ret[b]
        g = p.targets[b].index(a)
        col = bret[:, g].ravel()
        ql = _local(qrows, col)
        keep = (col >= 0) & (ql >= 0)
        parts.append(keys(ql[keep], np.repeat(brows, p.k)[keep], bflip[:, g].ravel()[keep], 1))
    own_valid = own.ravel() >= 0
    parts[0] = parts[0][own_valid]
    every = np.concatenate(parts)
    del parts
    every.sort()
    first = np.ones(len(every), bool)
    first[1:] = (every[1:] >> 2) != (every[:-1] >> 2)
    return Lists(every[first], n)


Job = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # a block's queries, and its lists (ql, r, fl)


def verify_block(data: Data, p: Plan | None, job: Job) -> tuple[np.ndarray, ...]:
    """Directed (query, candidate, score, flipped) of one block of queries against their lists
    (local query, candidate row, mirrored); the same here and on a cluster's worker."""
    qrows, ql, r, fl = job
    cand, flip = _pad(ql, len(qrows), r, fl)
    raw = alignment.verify(data.grey[qrows].astype(np.float32), cand, flip, data.references)
    # Only scores some calibration could let through are kept (no level is below
    # MIN_THRESHOLD): most candidates are unrelated, and keeping every one held about
    # 1 KB per row until the pairs were made.
    qi, kk = np.nonzero((cand >= 0) & (raw >= alignment.MIN_THRESHOLD))
    return qrows[qi], cand[qi, kk], raw[qi, kk], flip[qi, kk]


def _directed(data: Data, qrows: np.ndarray, lists: Lists,
              tick: Callable[[int], None] = no_tick, farm: Farm | None = None) -> list[np.ndarray]:
    """Directed (query, candidate, score, flipped) of ``qrows`` against their lists, block by block
    (``tick(1)`` after each: progress), here or on the ``farm``."""

    def job(a0: int) -> Job:
        nb = min(_BLOCK, len(qrows) - a0)
        ql, r, fl = lists.block(a0, a0 + nb)
        return qrows[a0:a0 + nb], ql - a0, r, fl

    def block(a0: int) -> tuple[np.ndarray, ...]:
        out = verify_block(data, None, job(a0))
        tick(1)
        return out

    starts = range(0, len(qrows), _BLOCK)
    # A farm takes the jobs as it sends them (a generator): the driver holds a few blocks' lists, not all.
    out = (multiview.in_blocks(block, starts) if farm is None
           else farm(verify_block, (job(a0) for a0 in starts), tick))
    return [np.concatenate(x) for x in zip(*out)] if out else [np.zeros(0, np.int64)] * 2 + [np.zeros(0)] * 2


def symmetric(q: np.ndarray, r: np.ndarray, score: np.ndarray, flipped: np.ndarray) -> Pairs:
    """The better direction of each unordered pair."""
    i, j = np.minimum(q, r).astype(np.int64), np.maximum(q, r).astype(np.int64)
    s = np.nan_to_num(np.asarray(score, np.float64), nan=-np.inf)
    order = np.lexsort((-s, j, i))
    i, j, s, f = i[order], j[order], s[order], np.asarray(flipped, bool)[order]
    first = np.ones(len(i), bool)
    first[1:] = (i[1:] != i[:-1]) | (j[1:] != j[:-1])
    first &= np.isfinite(s)
    return Pairs(i[first], j[first], s[first], f[first])


def blocks(p: Plan) -> int:
    """Blocks :func:`search` and :func:`impostors` run, for progress (``tick`` once per block)."""
    rows = [len(p.rows[a]) for a in p.targets]
    every = sum(rows)
    picked = min(alignment.CALIBRATION_QUERIES, every)
    imp = sum(-(-max(1, round(picked * n / every)) // _IMPOSTOR_BLOCK) for n in rows if n) if every else 0
    return sum(-(-n // _BLOCK) for n in rows) + imp


def search(data: Data, p: Plan, tick: Callable[[int], None] = no_tick, farm: Farm | None = None) -> Pairs:
    """Every row of every compared split against its lists: symmetric pairs.

    The retrieval runs here; with a ``farm`` the verification blocks run there."""
    ret: Retrieved = {}
    for a in p.targets:
        if len(p.rows[a]):
            ret[a] = (p.rows[a], *retrieve(data, p, a, p.rows[a]))
    cols: list[list[np.ndarray]] = [[], [], [], []]
    for a in ret:
        for acc, x in zip(cols, _directed(data, ret[a][0], _lists(p, a, ret), tick, farm)):
            acc.append(x)
    if not cols[0]:
        return symmetric(*(np.zeros(0, t) for t in (np.int64, np.int64, np.float64, bool)))
    return symmetric(*(np.concatenate(x) for x in cols))


def join(a: Pairs, b: Pairs) -> Pairs:
    """Two sets of pairs as one (a pair in both: its better score)."""
    return symmetric(*(np.concatenate([x, y]) for x, y in zip((a.i, a.j, a.score, a.flipped),
                                                               (b.i, b.j, b.score, b.flipped))))


def focus_search(data: Data, p: Plan, focus: np.ndarray) -> Pairs:
    """Pairs touching the focus rows: their candidates, each pair verified both ways.

    One-sided retrieval (a non-focus row that would have retrieved a focus
    row is not asked), two-sided verification.
    """
    pairs: list[np.ndarray] = []
    for a in p.targets:
        rows = p.rows[a][focus[p.rows[a]]]
        if len(rows):
            cand, flip = retrieve(data, p, a, rows)
            q = np.repeat(rows, cand.shape[1] * cand.shape[2])
            keep = cand.ravel() >= 0
            pairs.append(np.stack([q[keep], cand.ravel()[keep], flip.ravel()[keep]], 1))
    if not pairs:
        return symmetric(*(np.zeros(0, t) for t in (np.int64, np.int64, np.float64, bool)))
    ij = np.concatenate(pairs)
    score = pair_scores(data, ij[:, 0], ij[:, 1], ij[:, 2].astype(bool))
    return symmetric(ij[:, 0], ij[:, 1], score, ij[:, 2].astype(bool))


def pair_scores(data: Data, i: np.ndarray, j: np.ndarray, flip: np.ndarray | None = None,
                always: int = 0, turned: Sequence[str] | None = None) -> np.ndarray:
    """Score of given pairs, the better of both directions (and of both mirrors when ``flip`` is None).

    A focus search gates as the full search does; checking another
    detector's match (``always=1``) scores it whatever its 16 px correlation.
    ``turned`` (one orientation per pair): row ``i`` after it matches row
    ``j``, so ``i`` is turned that way to meet ``j`` and ``j`` back the other
    way to meet ``i``.
    """
    best = np.full(len(i), -np.inf)
    # In blocks of PAIR_BLOCK pairs: each pair is scored on its own, so the same scores as at once.
    for s in (slice(a, a + PAIR_BLOCK) for a in range(0, len(i), PAIR_BLOCK)):
        ij, how = (np.asarray(i)[s], np.asarray(j)[s]), None if turned is None else list(turned[s])
        back = None if how is None else [alignment.TURNS[o][1] for o in how]
        n = len(ij[0])
        for f in ([np.asarray(flip)[s]] if flip is not None else [np.zeros(n, bool), np.ones(n, bool)]):
            for q, r, t in ((ij[0], ij[1], how), (ij[1], ij[0], back)):
                grey = data.grey[q].astype(np.float32)
                if t is not None:
                    grey = alignment.turn(grey, t)
                raw = alignment.verify(grey, r[:, None], f[:, None], data.references, always=always)
                best[s] = np.fmax(best[s], raw[:, 0])
    return best


def impostors(data: Data, p: Plan, digests: Sequence[bytes], tick: Callable[[int], None] = no_tick,
              farm: Farm | None = None, judge: Callable[..., np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Best symmetric score of each of a content-keyed sample of rows (:func:`by_content`) turned upside down,
    against the other splits (``cross``) and against its own split (``within``).

    A row searched against two splits has two chances of a false alarm, and
    within-split links are only ever warnings, so each kind of comparison is
    calibrated on its own.  Chosen by content, not by split: relabelling
    splits leaves the sample as it is.
    """
    every = np.sort(np.concatenate([p.rows[a] for a in p.targets] or [np.zeros(0, np.int64)]))
    out: dict[str, list[np.ndarray]] = {"cross": [], "within": []}
    if len(every):
        pick = by_content(digests, every, alignment.CALIBRATION_QUERIES)
        for a in p.targets:
            rows = pick[p.split_of[pick] == a]
            if not len(rows):
                continue
            # Rows are independent: in blocks, on the retrieval's threads.
            def block(r0: int, a: str = a, rows: np.ndarray = rows) -> np.ndarray:
                maxima = _impostor_maxima(data, p, a, rows[r0:r0 + _IMPOSTOR_BLOCK])
                tick(1)
                return maxima

            starts = range(0, len(rows), _IMPOSTOR_BLOCK)
            best = np.concatenate(multiview.in_blocks(block, starts) if farm is None else
                                  farm(impostor_block, [(a, rows[r0:r0 + _IMPOSTOR_BLOCK]) for r0 in starts], tick))
            best = best if judge is None else judge(a, rows, best)  # copies by other evidence (``confirmed``)
            for kind, use in (("cross", [b != a for b in p.targets[a]]), ("within", [b == a for b in p.targets[a]])):
                if any(use):
                    out[kind].append(best[:, np.array(use)].max(1))
    return {kind: np.concatenate(v) if v else np.zeros(0) for kind, v in out.items()}


def impostor_block(data: Data, p: Plan, job: tuple[str, np.ndarray]) -> np.ndarray:
    """:func:`_impostor_maxima` of one block of split ``a``'s sampled rows, as a farm runs it."""
    return _impostor_maxima(data, p, *job)


def _impostor_maxima(data: Data, p: Plan, a: str, rows: np.ndarray, full: bool = False) -> Any:
    """(n, G): each upside-down row's best score in each split it asks (``full``: all, their candidates, mirrors)."""
    assert data.index is not None
    hog = data.hog[rows][:, descriptors.HOG_ROT180].astype(np.float32)
    views = [data.index.project(hog), *([data.index.project(hog[:, descriptors.HOG_HFLIP])] if p.mirror else [])]
    grey = np.ascontiguousarray(data.grey[rows][:, ::-1, ::-1])
    cand, flip = retrieve(data, p, a, rows, views)
    n, groups = len(rows), len(p.targets[a])
    cand, flip = cand.reshape(n, groups * p.k), flip.reshape(n, groups * p.k)
    # Every impostor's best few are scored, whatever their 16 px correlation, uncapped by tiles (``alignment.tiled``):
    # the cap only demotes, and capped impostors pulled CIFAR's error level from 0.785 to 0.745 (quality.py).
    fwd = np.nan_to_num(alignment.verify(grey.astype(np.float32), cand, flip, data.references,
                                         always=alignment.REFINE_TOP, tiles=False), nan=-np.inf)
    # Backwards too, for the best few: the candidate's windows against the upside-down row.
    top = np.argsort(-fwd, 1)[:, :_REVERSE_TOP]
    qi, kk = np.repeat(np.arange(n), top.shape[1]), top.ravel()
    keep = cand[qi, kk] >= 0
    qi, kk = qi[keep], kk[keep]
    tmpl2 = Templates(grey)
    back = alignment.verify(data.grey[cand[qi, kk]].astype(np.float32), qi[:, None], flip[qi, kk][:, None],
                            alignment.References(grey, tmpl2), always=1, tiles=False)
    fwd[qi, kk] = np.fmax(fwd[qi, kk], np.nan_to_num(back[:, 0], nan=-np.inf))
    turned.drop_copies(fwd, grey, cand, data.grey)  # an upside-down row meeting its own turned copy
    fwd[uploads.same(p.upload, rows, cand)] = -np.inf  # or another version of its upload
    return (fwd, cand, flip) if full else fwd.reshape(n, groups, p.k).max(2)


def neighbours(data: Data, p: Plan, rows: np.ndarray) -> np.ndarray:
    """(n, k): each of ``rows``' retrieved candidates in the other splits it asks, scored whatever their
    16 px correlation, best first (-inf where fewer): what the nearest images of this dataset score.
    In blocks of ``_IMPOSTOR_BLOCK`` rows, as the impostors are: every candidate is aligned at 32 px."""
    blocks = [_neighbours(data, p, rows[a:a + _IMPOSTOR_BLOCK]) for a in range(0, len(rows), _IMPOSTOR_BLOCK)]
    return np.concatenate(blocks) if blocks else np.full((0, p.k), -np.inf)


def _neighbours(data: Data, p: Plan, rows: np.ndarray) -> np.ndarray:
    assert data.index is not None
    out = np.full((len(rows), p.k), -np.inf)
    for a in p.targets:
        sel = np.flatnonzero(p.split_of[rows] == a)
        others = [g for g, b in enumerate(p.targets[a]) if b != a]
        if not len(sel) or not others:
            continue
        cand, flip = retrieve(data, p, a, rows[sel])
        cand, flip = cand[:, others].reshape(len(sel), -1), flip[:, others].reshape(len(sel), -1)
        got = np.nan_to_num(alignment.verify(data.grey[rows[sel]].astype(np.float32), cand, flip,
                                             data.references, always=cand.shape[1], tiles=False), nan=-np.inf)
        got = np.where((cand >= 0) & ~uploads.same(p.upload, rows[sel], cand), got, -np.inf)
        out[sel] = -np.sort(-got, 1)[:, :p.k]
    return out
