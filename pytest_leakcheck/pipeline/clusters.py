"""Which matches make one finding: clusters from error-level links, bounded, and scenes apart.

Three rules keep a finding something a person can act on (issue 37):

- **Only error-level links merge.**  A link is warning-level when its detector is
  set to ``warning`` or the detector calls the match weak (``Detector.weak``: a
  same-scene or aligned match below its error level, a thumbnail the pHash does
  not back up).  Such a link never joins two clusters and never raises one to
  error: it is a finding of its own, one per pair of clusters it joins.  Exact
  copies (equal bytes or pixels) are equal by definition and always merge.
- **Clusters do not chain.**  Near matches are not transitive (A ~ B ~ C does not
  make A ~ C), so error-level near links merge strongest first and never into a
  cluster over :data:`MAX_MEMBERS` files; a file the cap cut off from most of its
  leaks then moves to their cluster where it has room (``_settle``); a link between
  two clusters is reported as a pair of its own, at its own level.
- **A shared scene is one note.**  When the links join most of the dataset into
  one web (:data:`SCENE_SHARE` of its images, a fixed camera, one object shot
  again and again), or join more than :data:`MAX_MEMBERS` files densely (at least
  :data:`DENSE` near links per file: one board design among other boards), no near
  match among them tells a copy from another shot, so their near links become one
  ``shared-scene`` warning; exact copies among them still fail, and so do error-level
  links that stand out from a whole-dataset web (joining at most MAX_MEMBERS files
  by themselves).  Warning-level links
  joining more than :data:`MAX_MEMBERS` files densely become such a note too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..search.kernels import Match
from ..search.unionfind import UnionFind

#: No cluster of near matches grows past this many files.
MAX_MEMBERS = 25
#: Warning-level links per file that make a web of over MAX_MEMBERS files one scene (each file
#: alike to six others on average), not pairs to review one by one.
DENSE = 3
#: A web of links over this share of the dataset's images (and over MAX_MEMBERS) is one scene.
SCENE_SHARE = 0.5
#: Error-level links inside a whole-dataset web are copies standing out of it while they touch at
#: most this share of its files (chest X-rays: 40 of 5,355; a fixed camera's shots: 13 of 32).
STAND_OUT = 0.1


@dataclass(frozen=True)
class Scene:
    """Files whose near links form one web: reported once, with its links counted."""

    rows: tuple[int, ...]
    links: tuple[Match, ...]
    #: Whether it spans most of the dataset (else: a dense web of part of it).
    whole: bool


@dataclass
class Grouping:
    """Matches sorted into what each finding is made of."""

    #: Each cluster's links (error-level, plus exact copies), keyed by its root row.
    clusters: dict[int, list[Match]] = field(default_factory=dict)
    #: One link per pair of clusters that may not merge: (the link, whether it is warning-level).
    bridges: list[tuple[Match, bool]] = field(default_factory=list)
    scenes: list[Scene] = field(default_factory=list)


@dataclass(frozen=True)
class Judge:
    """What the grouping asks of each match, answered by the findings stage (detectors, policy)."""

    warning: Callable[[Match], bool]
    exact: Callable[[Match], bool]
    order: Callable[[Match], tuple]
    #: Whether a match joins files of two splits (a leak, where a within-split one is not).
    crossing: Callable[[Match], bool]
    #: Whether an error-level match stands out of a whole-dataset web however much of it such
    #: links touch (``Detector.stands_out_of_scene``: its verdict is a copy's, never a fixed scene's).
    stands: Callable[[Match], bool] = lambda m: False


def group(matches: Sequence[Match], judge: Judge, images: int) -> Grouping:
    """Sort ``matches`` (both files readable, level not off) into clusters, bridges and scenes."""
    out = Grouping()
    everything = UnionFind()
    for m in matches:
        everything.union(m.i, m.j)
    whole = {r for r, n in everything.size.items() if n > MAX_MEMBERS and n >= SCENE_SHARE * images}
    # Only a web over most of the dataset is folded here, whatever its links' levels.  A dense web
    # of error-level links over part of it is a family of copies as often as one scene: CIFAR-10's
    # many near-identical car photos are such a web, and folding it into a note dropped their
    # near-duplicates from error (``benchmarks/quality.py``).  Error links there make clusters of at
    # most MAX_MEMBERS files; a dense web of warning-level links is folded by ``_bridges``.
    standing = _standing(matches, judge, everything, whole)
    scene_links: dict[int, list[Match]] = {}
    kept = []
    for m in matches:
        root = everything.find(m.i)
        if root in whole and not judge.exact(m) and id(m) not in standing:
            scene_links.setdefault(root, []).append(m)
        else:
            kept.append(m)
    for root, links in sorted(scene_links.items()):
        rows = tuple(sorted(r for r in everything.parent if everything.find(r) == root))
        out.scenes.append(Scene(rows, tuple(links), whole=True))
    uf, overflow = _merge(kept, judge)
    if overflow:
        uf = _settle(uf, kept, overflow, judge)
        # A moved file's links to the cluster it left are now between clusters too: bridges.
        overflow = [m for m in kept if not judge.warning(m) and not judge.exact(m) and uf.find(m.i) != uf.find(m.j)]
    for m in kept:
        if not judge.warning(m) or judge.exact(m):
            if uf.find(m.i) == uf.find(m.j):
                out.clusters.setdefault(uf.find(m.i), []).append(m)
    bridging = [m for m in kept if judge.warning(m) and not judge.exact(m)]
    _bridges(out, uf, bridging, overflow, judge)
    return out


def _standing(matches: Sequence[Match], judge: Judge, everything: UnionFind, whole: set[int]) -> set[int]:
    """Error-level links inside a whole-dataset web that stand out from it: ``id()`` of each.

    The web a scene is named from may be made of warning-level links alone (5,355 chest X-rays of
    different children joined by weak ``aligned`` links), and a copy among them (pHash 0,
    thumbnail 1.000, aligned 1.000) is then no other shot of a scene: it is reported as a copy.
    Error-level links stand out when they touch few of the web's files (at most STAND_OUT of
    them) and, taken alone, join at most MAX_MEMBERS files each; otherwise (a fixed camera whose
    shots pass the error levels: 13 of 32 board shots in ``test_findings_shape.py``) they are
    the scene and are folded with it.  A detector whose verdict rules out a fixed scene
    (``Judge.stands``: a turned copy) stands out however many files its links touch; the
    clusters it makes are capped at MAX_MEMBERS as any.
    """
    strong = [m for m in matches if not judge.warning(m) and not judge.exact(m) and everything.find(m.i) in whole]
    if not strong:
        return set()
    uf = UnionFind()
    for m in strong:
        uf.union(m.i, m.j)
    touched = Counter(everything.find(r) for r in uf.parent)
    rows = Counter(everything.find(r) for r in everything.parent)
    return {id(m) for m in strong if judge.stands(m) or (uf.size[uf.find(m.i)] <= MAX_MEMBERS
            and touched[everything.find(m.i)] <= STAND_OUT * rows[everything.find(m.i)])}


def _merge(kept: Sequence[Match], judge: Judge) -> tuple[UnionFind, list[Match]]:
    """Exact copies first, whatever their number; then error-level near links, strongest first,
    each merging two clusters only while the result holds at most MAX_MEMBERS files."""
    uf = UnionFind()
    for m in kept:
        uf.find(m.i), uf.find(m.j)
        if judge.exact(m):
            uf.union(m.i, m.j)
    overflow = []
    for m in sorted((m for m in kept if not judge.warning(m) and not judge.exact(m)), key=judge.order):
        ra, rb = uf.find(m.i), uf.find(m.j)
        if ra == rb:
            continue
        if uf.size[ra] + uf.size[rb] <= MAX_MEMBERS:
            uf.union(ra, rb)
        else:
            overflow.append(m)
    return uf, overflow


def _settle(uf: UnionFind, kept: Sequence[Match], overflow: Sequence[Match], judge: Judge) -> UnionFind:
    """Clusters after moving files cut off by the cap towards the cluster holding more of their leaks.

    Strongest first, a file joins a cluster by its first link there, and pHash links precede
    aligned ones whatever their strength: in CIFAR-10's family of some 90 near-identical car photos
    a test image joined one cluster by a pHash link while as many of its error links across splits
    (its strongest, aligned 0.988, among them) led into another, and a listed pair was split over
    two findings (``benchmarks/quality.py --only init``).  A file at either end of a link over the
    cap moves to the other cluster when that holds more of its error links across splits (counted,
    not weighed: each is a leak to show in one finding), has room, and the cluster it leaves stays
    joined.  A file with an exact copy stays with it.  Each move puts more error links across splits
    inside findings, so the moves end.
    """
    member = {r: uf.find(r) for r in uf.parent}
    # Only the clusters a link over the cap touches take part: a file moves along such a link.
    touched = {member[r] for m in overflow for r in (m.i, m.j)}
    rows: dict[int, set[int]] = {}
    for r, root in member.items():
        if root in touched:
            rows.setdefault(root, set()).add(r)
    links: dict[int, dict[int, bool]] = {}
    pinned: set[int] = set()
    for m in kept:
        if member[m.i] not in touched or member[m.j] not in touched:
            continue
        if judge.exact(m):
            pinned.update((m.i, m.j))
        elif not judge.warning(m):
            for a, b in ((m.i, m.j), (m.j, m.i)):
                links.setdefault(a, {})[b] = links.get(a, {}).get(b, False) or judge.crossing(m)
    todo = sorted({r for m in overflow for r in (m.i, m.j)} - pinned)
    moved = True
    while moved:
        moved = False
        for r in todo:
            here = member[r]
            leaks = Counter(member[o] for o, crossing in links.get(r, {}).items() if crossing)
            there = max((c for c in leaks if c != here and len(rows[c]) < MAX_MEMBERS),
                        key=lambda c: (leaks[c], -c), default=None)
            if there is None or leaks[there] <= leaks[here] or not _joined(rows[here] - {r}, links):
                continue
            rows[here].discard(r)
            rows[there].add(r)
            member[r], moved = there, True
    out = UnionFind()
    for r, root in member.items():
        out.union(r, min(rows[root]) if root in touched else root)
    return out


def _joined(rows: set[int], links: dict[int, dict[int, bool]]) -> bool:
    """Whether ``rows`` are one cluster by the links among them (no rows, or one, are)."""
    if len(rows) <= 1:
        return True
    first = min(rows)
    seen, todo = {first}, [first]
    while todo:
        for o in links.get(todo.pop(), {}):
            if o in rows and o not in seen:
                seen.add(o)
                todo.append(o)
    return len(seen) == len(rows)


def _bridges(out: Grouping, uf: UnionFind, weak: Sequence[Match], overflow: Sequence[Match], judge: Judge) -> None:
    """Warning-level links and links over the cap: the strongest per pair of clusters, warning-level
    webs over MAX_MEMBERS files (a local scene) folded into one note."""
    web = UnionFind()
    for m in weak:
        web.union(uf.find(m.i), uf.find(m.j))
    files: dict[int, set[int]] = {}
    links: dict[int, int] = {}
    for m in weak:
        root = web.find(uf.find(m.i))
        files.setdefault(root, set()).update((m.i, m.j))
        links[root] = links.get(root, 0) + 1
    # Only a dense web is a scene: a sparse one (a few look-alikes chained) is left as pairs to review.
    local = {r for r, rows in files.items() if len(rows) > MAX_MEMBERS and links[r] >= DENSE * len(rows)}
    folded: dict[int, list[Match]] = {}
    best: dict[tuple[int, int], tuple[Match, bool]] = {}
    candidates = [(m, True) for m in weak] + [(m, False) for m in overflow]
    for m, warning in candidates:
        ra, rb = uf.find(m.i), uf.find(m.j)
        if ra == rb:
            continue  # already one cluster by error-level links: nothing to add
        if warning and web.find(ra) in local:
            folded.setdefault(web.find(ra), []).append(m)
            continue
        key = (min(ra, rb), max(ra, rb))
        # An error-level link outranks a warning-level one between the same clusters.
        if key not in best or (warning, judge.order(m)) < (best[key][1], judge.order(best[key][0])):
            best[key] = (m, warning)
    out.bridges = [best[k] for k in sorted(best)]
    for root in sorted(folded):
        out.scenes.append(Scene(tuple(sorted(files[root])), tuple(folded[root]), whole=False))
