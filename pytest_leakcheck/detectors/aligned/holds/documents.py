"""Documents of one printed template: a sibling document is at most a warning.

Specimen ID cards of one country, invoices of one shop, forms of one office
share their layout, so pHash, the thumbnail and the 32 px and 96 px verdicts
score two such documents like copies, although their text or portrait differs:
on ``prado`` (``benchmarks/field.py``) 20 of 24 cross-split error links joined
two documents of one template.  Where both pictures of an error link are
documents (:func:`documents`, on the 96 px square the store keeps), both files
are decoded again at 288 px and the pair is held at warning where its largest
block residual says some text differs (``residual.rmax``, both levels of :data:`SIBLING`).

Only documents are asked: bursts, video frames and augmented copies differ from
their partners that way too, and the audits count them as leaks; applied to every
error link the same residual would have made warnings of 40 of 40 sampled error
links on ``eggs`` (``benchmarks/template_residual.py``).  The document test is
``benchmarks/document_test.py``.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from ....signals.decode import COLOUR, decode
from .. import hires
from . import residual

#: An edge is axis-aligned within this many degrees of a row or a column.
AXIS_DEGREES = 10.0
#: Gradient magnitude (grey levels per pixel at 96 px) under which no edge counts as strong; else
#: the strong edges are the top quarter of the square's gradient magnitudes.
MIN_EDGE = 4.0
#: A pixel is paper within this many grey levels of the square's 90th percentile (its light ground).
PAPER_LEVELS = 8.0
#: Two kinds of document, each a conjunction of its features (``axis``: share of strong edges along
#: rows or columns, typeset and ruled; ``lines``: row-to-row variation of the vertical-stroke energy
#: left after a 9-row moving average, over its mean, lines of text; ``detail``: mean absolute
#: Laplacian over the standard deviation, small print; ``paper``: share of the light ground).
#: A card (ID cards, passports: printed on a patterned ground, dense small print) and a page
#: (invoices, forms, screenshots: ruled text on a plain light ground).  On 300 files a set
#: (``benchmarks/document_test.py``): 253 of ``prado``'s and 206 of 285 ``invoices`` are documents;
#: of 13 photo sets none but 1 of 298 ``cones`` (a cone on white) and of ``damage`` (a handwritten
#: sign), and 3 of ``screws``' training plots.
#: ``along``: lines over the same variation of columns; text runs along rows, a grid (a
#: transparency checkerboard behind a paw print, ``tracks``: 0.9-1.0) or a blot both ways.
CARD = {"axis": 0.36, "lines": 0.25, "detail": 0.6, "along": 1.3}
PAGE = {"axis": 0.55, "paper": 0.3, "lines": 0.15, "along": 1.3}
#: The residuals (``residual.rmax``) over which two documents differ somewhere, both: ``rmax`` over
#: the median block, on ``prado`` one MRZ's pairs 0.44-0.45, documents of one template 1.67 and more
#: (``benchmarks/template_residual.py``); ``rtex`` over the median inked block, 0.29-0.30 and
#: 0.64-2.11 there (38 siblings), which a mostly blank page needs: its median block is paper (a paw
#: print on white card and its copy, ``tracks``: rmax 2,695, rtex 0.25).  ``rmax`` 0.9, not 1.0: till
#: receipts of one shop (held-out ``sroie``, other totals and dates on one printed layout, a few digits of a
#: long page) reach only 0.93-1.06, still twice one MRZ's copies (tuned on that set, stop 63).
SIBLING = {"rmax": 0.9, "rtex": 0.5}
#: Document pairs asked at most per call (two decodes and a second or so each): beyond it the rest
#: keep their verdict, an error, as they were before this hold.
MAX_PAIRS = 400
#: Squares read and tested at once (the features' float planes take about 0.4 MB a square: the
#: rows of a leaky set's error links, all at once, raised ``tracks``' peak RSS from 306 to 445 MB).
BLOCK = 256
#: Files whose decoded squares are kept while the pairs are asked (about 0.35 MB each): a template's
#: documents are linked with one another, so each is in several pairs.
KEEP_ROWS = 48


def _row_mean(a: np.ndarray, width: int) -> np.ndarray:
    """Moving average of each row of ``a`` (n, L) over ``width`` samples, edges repeated."""
    pad = width // 2
    p = np.pad(a, ((0, 0), (pad, pad)), mode="edge")
    c = np.cumsum(np.pad(p, ((0, 0), (1, 0))), axis=1)
    return (c[:, width:] - c[:, :-width]) / width


def features(fine: np.ndarray) -> dict[str, np.ndarray]:
    """The features of :data:`CARD` and :data:`PAGE` of each (96, 96) grey square of ``fine`` (n, 96, 96)."""
    f = np.asarray(fine, np.float32)
    gy, gx = np.gradient(f, axis=(1, 2))
    mag = np.hypot(gx, gy)
    n = len(f)
    floor = np.maximum(np.percentile(mag.reshape(n, -1), 75, axis=1), MIN_EDGE)[:, None, None]
    strong = mag > floor
    ang = np.degrees(np.arctan2(gy, gx)) % 90
    axis = strong & ((ang < AXIS_DEGREES) | (ang > 90 - AXIS_DEGREES))
    share = axis.sum((1, 2)) / np.maximum(strong.sum((1, 2)), 1)
    lines = _variation(np.abs(gx).mean(axis=2))  # vertical strokes per row: lines of text
    columns = _variation(np.abs(gy).mean(axis=1))  # horizontal strokes per column: a grid, not text
    lap = np.abs(4 * f[:, 1:-1, 1:-1] - f[:, :-2, 1:-1] - f[:, 2:, 1:-1] - f[:, 1:-1, :-2] - f[:, 1:-1, 2:])
    detail = lap.mean((1, 2)) / np.maximum(f.std((1, 2)), 1.0)
    light = np.percentile(f.reshape(n, -1), 90, axis=1)[:, None, None]
    paper = (np.abs(f - light) < PAPER_LEVELS).mean((1, 2))
    return {"axis": share, "lines": lines, "detail": detail, "paper": paper,
            "along": lines / np.maximum(columns, 1e-6)}


def _variation(profile: np.ndarray) -> np.ndarray:
    """Each (n, L) profile's variation left after a 9-sample moving average, over its mean."""
    return (profile - _row_mean(profile, 9)).std(axis=1) / np.maximum(profile.mean(axis=1), 1e-6)


def documents(fine: np.ndarray) -> np.ndarray:
    """Whether each 96 px grey square looks like a printed card (:data:`CARD`) or page (:data:`PAGE`)."""
    if not len(fine):
        return np.zeros(0, bool)
    got = features(fine)
    card = np.logical_and.reduce([got[k] >= v for k, v in CARD.items()])
    page = np.logical_and.reduce([got[k] >= v for k, v in PAGE.items()])
    return card | page


@dataclasses.dataclass(frozen=True)
class Pictures:
    """What the hold reads: the stored 96 px squares of rows (squares, found), a row's file's bytes,
    the decode's pixel limit, and a memo of residuals by pair for the rest of the check."""

    fine: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
    read: Callable[[int], bytes]
    max_pixels: Callable[[], int]
    memo: dict[tuple[int, int, str], dict[str, float] | None]


def from_files(read: Callable[[int], bytes], max_pixels: Callable[[], int]) -> Pictures:
    """:class:`Pictures` whose 96 px squares are made from the files themselves, as ``hires.row`` stores
    them, for a detector that keeps none (``turned_copy``, asked about a few error links)."""

    def fine(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        out, found = np.zeros((len(rows), hires.F, hires.F), np.uint8), np.zeros(len(rows), bool)
        for k, r in enumerate(np.asarray(rows).tolist()):
            try:
                sq = hires.square(hires.row(decode(read(r), max_pixels(), COLOUR), None))  # type: ignore[arg-type]
            except Exception:  # noqa: BLE001 - unreadable now: no document, the verdict stands
                sq = None
            if sq is not None:
                out[k], found[k] = sq, True
        return out, found

    return Pictures(fine, read, max_pixels, {})


def held(pictures: Pictures | None, i: np.ndarray, j: np.ndarray, how: Sequence[str]) -> np.ndarray:
    """Pairs of two documents whose 288 px residual says they differ (:data:`SIBLING`): at most warnings.

    ``how``: how each pair's first image is turned onto the second (``identity``, ``hflip``, a turn)."""
    i, j = np.asarray(i, np.int64), np.asarray(j, np.int64)
    out = np.zeros(len(i), bool)
    if pictures is None or not len(i):
        return out
    both = _both(pictures, i, j)
    kept: collections.OrderedDict[int, residual.Squares | None] = collections.OrderedDict()
    for n in both[np.lexsort((j[both], i[both]))].tolist():  # by row, so a file's squares serve its pairs
        key = (int(i[n]), int(j[n]), how[n])
        if key not in pictures.memo:
            pictures.memo[key] = _residual(pictures, kept, key)
        r = pictures.memo[key]
        out[n] = differ(r)
    return out


def differ(r: dict[str, float] | None) -> bool:
    """Whether a pair's residual (``residual.rmax``) says two documents differ somewhere: over both levels
    of :data:`SIBLING`; None (no residual) never does."""
    return r is not None and all(r[k] > v for k, v in SIBLING.items())


def _both(pictures: Pictures, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """The pairs (at most MAX_PAIRS) whose two pictures are documents (:func:`documents`)."""
    rows = np.unique(np.concatenate([i, j]))
    doc = np.zeros(rows.max() + 1, bool)
    for a in range(0, len(rows), BLOCK):  # in blocks: the features hold ~0.4 MB a square at once
        block = rows[a:a + BLOCK]
        squares, found = pictures.fine(block)
        doc[block[found]] = documents(squares[found])
    return np.flatnonzero(doc[i] & doc[j])[:MAX_PAIRS]


def held_turned(pictures: Pictures | None, i: np.ndarray, j: np.ndarray, maps: Sequence[np.ndarray],
                sizes: Sequence[tuple[tuple[int, int], tuple[int, int]]]) -> np.ndarray:
    """:func:`held` for ``turned_copy``'s error links, each lined up by its own map (``residual.turned``:
    ``maps[n]`` takes the grey of ``j[n]`` onto that of ``i[n]``, of ``sizes[n]``).  Two documents of one
    template turned a degree apart (``prado``: a Belgian residence card in Dutch and in French, detail
    0.861 at 128 px over the level 0.86) differ in their text as siblings lined up by a hash do."""
    i, j = np.asarray(i, np.int64), np.asarray(j, np.int64)
    out = np.zeros(len(i), bool)
    if pictures is None or not len(i):
        return out
    for n in _both(pictures, i, j).tolist():
        try:
            r = residual.turned(pictures.read(int(i[n])), pictures.read(int(j[n])), maps[n], sizes[n],
                                pictures.max_pixels())
        except Exception:  # noqa: BLE001 - a file changed or gone since the decode: the verdict stands
            r = None
        out[n] = differ(r)
    return out


def _residual(pictures: Pictures, kept: collections.OrderedDict[int, residual.Squares | None],
              key: tuple[int, int, str]) -> dict[str, float] | None:
    """The pair's 288 px residuals, None where a file cannot be read or decoded again (no hold).
    ``kept``: the squares of the last :data:`KEEP_ROWS` files decoded, by row."""
    from ....orientation import inverse

    a, b, how = key
    qa, qb = _squares(pictures, kept, a), _squares(pictures, kept, b)
    if qa is None or qb is None:
        return None
    # Both ways, the larger: which file is turned onto which picks another alignment where two are
    # about as good, and the residual with it (``sroie``'s receipts ``342`` ~ ``360``: 1.06 one way,
    # 0.88 the other); a copy is alike both ways, and whether a pair is held must not hang on its order.
    ways = [r for r in (residual.rmax(qa, qb, how, 0), residual.rmax(qb, qa, inverse(how), 0)) if r is not None]
    return {k: max(r[k] for r in ways) for k in ways[0]} if ways else None


def _squares(pictures: Pictures, kept: collections.OrderedDict[int, residual.Squares | None],
             row: int) -> residual.Squares | None:
    if row in kept:
        kept.move_to_end(row)
        return kept[row]
    try:
        got: residual.Squares | None = residual.squares(pictures.read(row), pictures.max_pixels())
    except Exception:  # noqa: BLE001 - a file changed or gone since the decode: the verdict stands
        got = None
    kept[row] = got
    if len(kept) > KEEP_ROWS:
        kept.popitem(last=False)
    return got
