"""``thumbnail``: cosine similarity of small grey thumbnails, blind to brightness and contrast.

Catches re-encoded, resized and recoloured copies whose hashes drift apart.
Thumbnails are normalised (zero mean, unit norm), so the cosine ignores a
brightness or contrast change; the search is exact but pruned (kernels.py).
On very large splits (``search: auto``, the default) candidates come from an
inverted file of the thumbnails (``search/lists.py``), scored exactly; ``search:
faiss`` does the same with FAISS (the ``faiss`` extra), ``search: exact`` never.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..validate import SEVERITIES, Ctx
from ..search import BACKENDS
from .base import Detector, PolicyView, section
from .hashing import far, hash_distance

if TYPE_CHECKING:
    from ..search.run import SearchRun
    from ..search.kernels import Match
    from ..signals.families import Family, Signatures


@dataclass(frozen=True)
class ThumbnailSettings:
    severity: str = "error"
    size: int = 16
    min_cosine: float = 0.95
    #: "auto" (exact below LISTS_PAIRS compared pairs, "lists" above), "exact" (kernels.cosine_pairs
    #: at any size), "lists" (an inverted file in numpy) or "faiss" (approximate candidates, exact scores).
    search: str = "auto"


#: Query x reference rows from which ``search: auto`` goes through the inverted file
#: (``retrieval.within(backend="lists")``): a split of about 70,000 against itself, or
#: 160,000 training images against 32,000 test images.  Below it the search is exact and
#: every figure measured on CIFAR-10 (50,000 x 50,000 within training, 2.5e9) is unchanged;
#: above it exact search grows with the square of the data (docs/scale.md).  An inverted
#: file costs each query a fixed amount, exact search a little per reference, so past some
#: tens of thousands of references the lists are cheaper (``benchmarks/scale.py``).
LISTS_PAIRS = 5e9


def _upright(x: int, y: int, cosine: float, orientation: str) -> Match:
    """``Match(i, j)`` with ``i < j``, as the hash detectors report it.  The cosine
    itself is symmetric (turning a thumbnail only permutes its pixels, and the
    searched orientations come with their inverses), so one direction suffices."""
    from ..search.kernels import Match
    from ..orientation import inverse

    if x < y:
        return Match(x, y, Thumbnail.name, cosine, orientation)
    return Match(y, x, Thumbnail.name, cosine, inverse(orientation))


def _indexed(ta: Any, tb: Any, names: list[str], min_cosine: float, same: bool,
             backend: str) -> tuple[Any, Any, Any, Any]:
    """``kernels.oriented_within`` of thumbnails ``ta`` against ``tb``, with the smaller side as the queries.

    An index costs each query a fixed number of probed lists, whatever the
    references number: 40,000 test images asking an index of 160,000 training
    images cost a quarter of the reverse.  Turning a thumbnail permutes its
    pixels, so row ``a`` turned by ``o`` meets row ``b`` exactly when ``b``
    turned by ``o``'s inverse meets ``a``: the swapped search asks with the
    inverse orientations, and its pairs and cosines are the same ones.
    """
    import numpy as np

    from ..search.kernels import oriented_within
    from ..orientation import inverse

    if same or len(ta) <= len(tb):
        return oriented_within(ta, tb, names, min_cosine, same=same, backend=backend)
    ib, ia, cos, kk = oriented_within(tb, ta, [inverse(o) for o in names], min_cosine, backend=backend)
    order = np.lexsort((ib, ia))
    return ia[order], ib[order], cos[order], kk[order]


def _cosine(run: SearchRun, names: list[str]) -> Any:
    """Cosine of rows ``i`` to rows ``j``, the nearest over the searched orientations."""
    import numpy as np

    from ..search.kernels import normalised_thumbs, orient_thumbs

    thumbs = run.sigs.arrays["thumb"]

    def cosine(i: np.ndarray, j: np.ndarray) -> np.ndarray:
        ti, tj = normalised_thumbs(thumbs[i]), normalised_thumbs(thumbs[j])
        cos = np.full(len(i), -1.0)
        for o in names:
            cos = np.maximum(cos, (orient_thumbs(ti, o) * tj).sum(axis=1))
        return cos

    return cosine


def _whole_verdict(run: SearchRun, settings: ThumbnailSettings, names: list[str]) -> dict[str, Any]:
    """Whether random pairs of the whole dataset reach ``min_cosine`` (``hashing.whole_verdict``)."""
    from . import homogeneity

    s = homogeneity.sample(run.textured_rows(), run.comparisons, run.split_of, run.sigs.digests)
    cos = _cosine(run, names)(s.i, s.j)
    return homogeneity.verdict(s, lambda idx: cos[idx] >= settings.min_cosine, cos)


def _separable(run: SearchRun, settings: ThumbnailSettings, names: list[str], found: list[Match],
               said: dict[str, Any]) -> list[Match]:
    """``found``, made warnings when random pairs of this dataset reach ``min_cosine`` too
    (``homogeneity``): a fixed camera's shots share one thumbnail.  The same within each part of
    the dataset (a folder, a file-name prefix): there, only matches touching it."""
    import numpy as np

    from . import homogeneity

    cosine = _cosine(run, names)

    def judge(i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        c = cosine(i, j)
        return c >= settings.min_cosine, c

    rows = run.textured_rows()
    mask = None
    # A quarter of the level's distance: unit vectors' squared distance is 2 (1 - cosine).
    same = 1 - (1 - settings.min_cosine) / 16
    if not said["inseparable"]:
        parts, mask = homogeneity.within_parts(rows, run.comparisons, run.split_of, run.sigs.digests, run.paths,
                                               homogeneity.PartJudge(judge, same))
        said = {**said, **parts}
    run.stats[Thumbnail.name] = said
    return homogeneity.weaken(found, said["inseparable"], mask, lambda m: homogeneity.turned_version(m, m.value >= same),
                              lambda m: m.value >= same)


class Thumbnail(Detector):
    name = "thumbnail"
    section = "thumbnail"
    rank = 30
    evidence_key = "thumbnail_cosine"
    default = ThumbnailSettings()
    signal_text = {"thumbnail_cosine": "thumbnail cosine {:.3f}"}
    init_keys = (("severity", ""), ("size", "side of the grey thumbnail"),
                 ("min_cosine", "contrast-normalised; lower finds more"))

    def parse(self, ctx: Ctx, raw: Any, at: tuple[str, ...]) -> ThumbnailSettings:
        raw = section(ctx, raw, at, ("severity", "size", "min_cosine", "search"))
        d = self.default
        return ThumbnailSettings(
            severity=ctx.choice(raw.get("severity", d.severity), (*at, "severity"), SEVERITIES),
            size=ctx.number(raw.get("size", d.size), (*at, "size"), int, 4, 64),
            min_cosine=ctx.number(raw.get("min_cosine", d.min_cosine), (*at, "min_cosine"), float, 0.5, 1.0),
            search=ctx.choice(raw.get("search", d.search), (*at, "search"), ("auto", *BACKENDS)),
        )

    def families(self, settings: ThumbnailSettings, policy: PolicyView) -> tuple[Family, ...]:
        from ..signals.families import thumb_family

        # Always computed: the texture test of every perceptual detector reads it.
        return (thumb_family(settings.size),)

    def find(self, run: SearchRun, settings: ThumbnailSettings) -> list[Match]:
        from ..search.kernels import cosine_pairs
        from ..signals.families import search_orientations

        import numpy as np

        from .hashing import Left

        names = list(search_orientations(run.orientations))
        thumbs = run.sigs.arrays["thumb"]
        rows = run.textured_rows()
        said = _whole_verdict(run, settings, names)
        left = Left.of(run, said)
        gone_views = [names.index(v) for v in left.views if v in names] if left is not None else []
        out: list[Match] = []
        for a, b in run.comparisons:
            for ra, rb, same in run.sides(a, b, rows):
                backend = settings.search
                if backend == "auto":
                    backend = "lists" if float(len(ra)) * len(rb) >= LISTS_PAIRS else "exact"
                if backend == "exact":
                    ia, ib, cos, kk = cosine_pairs(thumbs[ra], thumbs[rb], names, settings.min_cosine, same=same)
                else:
                    ia, ib, cos, kk = _indexed(thumbs[ra], thumbs[rb], names, settings.min_cosine, same, backend)
                tex = run.texture(ra[ia]) & run.texture(rb[ib])
                if left is not None:  # a view aligned covers, of a thumbnail that cannot tell copies apart here
                    gone = tex & np.isin(kk, gone_views)
                    left.count += int(gone.sum())
                    tex &= ~gone
                out += [
                    _upright(int(ra[x]), int(rb[y]), round(float(c), 4), names[int(o)])
                    for x, y, c, o in zip(ia[tex], ib[tex], cos[tex], kk[tex])
                ]
        if left is not None and left.count:
            said = {**said, "left_to_aligned": left.count}
        return _separable(run, settings, names, out, said)

    def summary(self, stats: Any) -> str:
        from .homogeneity import said

        return said(self.name, stats)

    def strength(self, match: Match, settings: ThumbnailSettings) -> float:
        return match.value

    def threshold(self, settings: ThumbnailSettings) -> float:
        return settings.min_cosine

    def weak(self, match: Match, sigs: Signatures, policy: PolicyView) -> bool:
        """A cosine the pHash does not back up is a warning-level link.  A 16 px
        thumbnail of a texture-free picture (bars, sky, a plain wall) is close
        to many unrelated ones; one such coincidence must not chain photos."""
        if match.weak:
            return True
        ph = policy.detectors.phash
        dist = hash_distance(sigs, "hash", match.i, match.j, match.orientation)
        return dist is not None and far(dist, ph)

    def pair_signals(self, sigs: Any, i: int, j: int, orientation: str, settings: Any) -> dict[str, float]:
        if not sigs.has("thumb"):
            return {}
        from ..search.kernels import normalised_thumbs, orient_thumbs

        thumbs = sigs.arrays["thumb"]
        ti = orient_thumbs(normalised_thumbs(thumbs[i : i + 1]), orientation)[0]
        tj = normalised_thumbs(thumbs[j : j + 1])[0]
        return {"thumbnail_cosine": round(float(ti @ tj), 4)}


DETECTOR = Thumbnail()
