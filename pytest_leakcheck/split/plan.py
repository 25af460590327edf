"""Write a split manifest in which no group and no near-duplicate cluster spans two splits.

Groups (from the policy's rules) and near-duplicate clusters (from the core
search) are merged with union-find, so a chain of copies test A ~ train B ~
val C becomes one component; each component is then placed whole.  Placement
is greedy, largest component first, into the split with the largest remaining
deficit for the component's labels; files that are a component of their own
are dealt out per label in one vectorised step, which keeps a million files
fast.  Everything random comes from ``numpy.random.default_rng(seed)``.

With ``keep`` (an existing manifest) only components that span splits move,
whole, to the split holding most of their files; new files fill the
deficits; then shares outside the policy's ``split_share`` bounds are
repaired by moving as few files as possible.

Nothing here touches an image or writes a file: ``splitapply.py`` turns a
:class:`Plan` into a manifest, an edit of a kept manifest, or moves in a folder tree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..dataset import groups as group_rules
from .clusters import clusters_and_groups, copy_clusters, shard_units  # noqa: F401  (copy_clusters: the plan's API)
from .clusters import Found, found, keep_warned
from .clusters import pooled_policy, refuse_shards
from ..dataset import inventory
from .. import sources
from ..errors import PolicyError, UsageError
from ..files.names import excerpt
from ..policy.load import Policy

if TYPE_CHECKING:
    from ..pipeline.options import RunOptions

#: Kinds of finding that mean "same picture": their members must share a split.
COPY_KINDS = ("identical-file", "identical-pixels", "near-duplicate", "same-scene")
DEFAULT_NAMES = ("train", "val", "test")


# --------------------------------------------------------------------------
# The algorithm: pure numpy on integer ids, no files


def components(group_ids: np.ndarray, clusters: Iterable[Sequence[int]] = ()) -> np.ndarray:
    """Component id (0..C-1) per file: files share one if linked by group or by a cluster.

    ``group_ids`` is (N,) int, one id per group; ``clusters`` are lists of row
    indices that must stay together (near-duplicates).
    """
    uniq, gid = np.unique(group_ids, return_inverse=True)
    gid = gid.reshape(-1)
    parent = list(range(len(uniq)))
    merged = False

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for rows in clusters:
        rows = list(rows)
        if len(rows) < 2:
            continue
        head = find(int(gid[rows[0]]))
        for r in rows[1:]:
            other = find(int(gid[r]))
            if other != head:
                parent[max(head, other)] = min(head, other)
                head = min(head, other)
                merged = True
    if not merged:
        return gid
    roots = np.array(parent, dtype=np.int64)
    while True:  # pointer jumping: every id ends at its root
        nxt = roots[roots]
        if np.array_equal(nxt, roots):
            break
        roots = nxt
    _, comp = np.unique(roots[gid], return_inverse=True)
    return comp.reshape(-1)


@dataclass(frozen=True)
class Kept:
    """An existing split per file (-1: new); with ``bounds`` (min, max) per split, shares are
    repaired, counting ``weight`` per component (default: files; or groups)."""

    split: np.ndarray
    bounds: Sequence[tuple[float, float]] | None = None
    weight: np.ndarray | None = None


@dataclass(frozen=True)
class Assignment:
    split: np.ndarray  # (N,) int index into the split names
    moved: int = 0  # files whose kept split changed


def _apportion(total: int, weights: np.ndarray) -> np.ndarray:
    """Integers summing to ``total``, proportional to ``weights`` (largest remainder)."""
    w = np.clip(weights, 0, None).astype(np.float64)
    if total <= 0:
        return np.zeros(len(w), dtype=np.int64)
    if w.sum() <= 0:
        w = np.ones(len(w))
    exact = w * (total / w.sum())
    out = np.floor(exact).astype(np.int64)
    rest = total - int(out.sum())
    if rest:
        out[np.argsort(-(exact - out), kind="stable")[:rest]] += 1
    return out


class _Layout:
    """Per-component label counts as flat slices, so the greedy loop touches only its own labels."""

    def __init__(self, comp: np.ndarray, labels: np.ndarray, n_labels: int) -> None:
        keys = comp.astype(np.int64) * n_labels + labels
        uk, self.cnt = np.unique(keys, return_counts=True)
        self.comp_of = uk // n_labels
        self.lab = uk % n_labels
        n_comp = int(comp.max()) + 1 if len(comp) else 0
        self.start = np.searchsorted(self.comp_of, np.arange(n_comp))
        self.end = np.searchsorted(self.comp_of, np.arange(n_comp), side="right")
        self.size = np.bincount(comp, minlength=n_comp)


def _fill(
    todo: np.ndarray,
    lay: _Layout,
    deficit: np.ndarray,
    allowed: np.ndarray,
    rng: np.random.Generator,
    out: np.ndarray,
) -> None:
    """Place components ``todo`` into ``out`` (per component), updating ``deficit`` (K, L)."""
    sizes = lay.size[todo]
    multi = (lay.end[todo] - lay.start[todo]) > 1
    big = todo[(sizes > 1) | multi]
    order = big[np.lexsort((rng.permutation(len(big)), -lay.size[big]))]
    blocked = np.where(allowed, 0.0, -np.inf)
    for c in order.tolist():
        s, e = lay.start[c], lay.end[c]
        labs, cnts = lay.lab[s:e], lay.cnt[s:e]
        score = deficit[:, labs[0]] * cnts[0] if e - s == 1 else deficit[:, labs] @ cnts
        k = int(np.argmax(score + blocked))
        out[c] = k
        deficit[k, labs] -= cnts
    single = todo[(sizes == 1) & ~multi]
    if not len(single):
        return
    single = single[rng.permutation(len(single))]
    lab = lay.lab[lay.start[single]]
    by_label = np.argsort(lab, kind="stable")
    single, lab = single[by_label], lab[by_label]
    labels, first, counts = np.unique(lab, return_index=True, return_counts=True)
    for label, at, m in zip(labels.tolist(), first.tolist(), counts.tolist()):
        want = np.where(allowed, deficit[:, label], 0.0)
        share = _apportion(m, want)
        out[single[at : at + m]] = np.repeat(np.arange(len(share)), share)
        deficit[:, label] -= share


def assign(
    comp: np.ndarray,
    targets: Sequence[float],
    *,
    labels: np.ndarray | None = None,
    seed: int = 0,
    kept: Kept | None = None,
) -> Assignment:
    """A split (index into ``targets``) per file, keeping each component whole.

    ``labels`` (N,) int stratifies: every split gets each label in its target
    share, as far as whole components allow.  ``kept`` is an existing split
    to change as little as possible (:class:`Kept`).
    """
    rng = np.random.default_rng(seed)
    t = np.asarray(targets, dtype=np.float64)
    n = len(comp)
    labels = np.zeros(n, dtype=np.int64) if labels is None else np.asarray(labels, dtype=np.int64)
    n_labels = int(labels.max()) + 1 if n else 1
    lay = _Layout(comp, labels, n_labels)
    n_comp = len(lay.size)
    per_label = np.bincount(labels, minlength=n_labels).astype(np.float64)
    deficit = t[:, None] * per_label[None, :]
    out = np.full(n_comp, -1, dtype=np.int64)
    keep = None if kept is None else kept.split
    if keep is not None:
        held = keep >= 0
        votes = np.zeros((n_comp, len(t)), dtype=np.int64)
        np.add.at(votes, (comp[held], keep[held]), 1)
        voted = votes.sum(axis=1) > 0
        # The split holding most of a component's files; ties go to the earlier split.
        out[voted] = votes[voted].argmax(axis=1)
        placed = out[comp] >= 0
        np.subtract.at(deficit, (out[comp][placed], labels[placed]), 1.0)
    _fill(np.flatnonzero(out < 0), lay, deficit, t > 0, rng, out)
    if kept is not None and kept.bounds is not None:
        _repair_shares(out, lay.size.astype(np.float64) if kept.weight is None else kept.weight, kept.bounds)
    split = out[comp]
    moved = int(((split != keep) & (keep >= 0)).sum()) if keep is not None else 0
    return Assignment(split=split, moved=moved)


def _repair_shares(
    out: np.ndarray, weight: np.ndarray, bounds: Sequence[tuple[float, float]]
) -> None:
    """Move whole components from a split outside its bounds, fewest units first.

    A move never pushes the other split past its own bound, so every move
    shrinks the total violation and the loop ends.
    """
    total = float(weight.sum())
    lo = np.array([b[0] for b in bounds]) * total
    hi = np.array([b[1] for b in bounds]) * total
    eps = 1e-9
    for _ in range(len(out)):
        load = np.bincount(out, weights=weight, minlength=len(bounds))
        under, over = lo - load, load - hi
        if under.max() > eps:
            dst = int(np.argmax(under))
            need = under[dst]
            room = load - lo
            room[dst] = -np.inf
            src = int(np.argmax(room))
            cap = min(room[src], hi[dst] - load[dst])
        elif over.max() > eps:
            src = int(np.argmax(over))
            need = over[src]
            room = hi - load
            room[src] = -np.inf
            dst = int(np.argmax(room))
            cap = min(room[dst], load[src] - lo[src])
        else:
            return
        cand = np.flatnonzero(out == src)
        cand = cand[weight[cand] <= cap + eps]
        if not len(cand):
            return  # no whole component fits; the check will report the share
        w = weight[cand]
        enough = cand[w >= need - eps]
        # One component just big enough moves fewest files; otherwise the largest that fits.
        c = int(enough[np.argmin(weight[enough])]) if len(enough) else int(cand[np.argmax(w)])
        out[c] = dst


# --------------------------------------------------------------------------
# From a dataset to a manifest


@dataclass(frozen=True)
class SplitStat:
    name: str
    files: int
    share: float
    target: float
    label_distance: float  # total variation from the dataset's label distribution


@dataclass(frozen=True)
class Plan:
    names: tuple[str, ...]
    paths: tuple[str, ...]
    split: np.ndarray
    group: tuple[str | None, ...]
    columns: tuple[str, ...] = ()  # extra manifest columns carried over
    extra: dict[str, dict[str, str]] = field(default_factory=dict)
    stats: tuple[SplitStat, ...] = ()
    components: int = 0
    largest: int = 0
    clusters: int = 0
    warned: int = 0  # weak links whose files a fresh plan kept together (clusters.keep_warned)
    ungrouped: int = 0
    unreadable: int = 0  # files placed without their copies: the check could not decode them
    moved: int = 0
    dropped: int = 0  # kept-manifest rows whose file is gone
    stratified_by: str | None = None


def _read_rows(path: Path) -> tuple[list[str], dict[str, dict[str, str]]]:
    if not path.is_file():
        raise UsageError("manifest not found", path=str(path), fix="check the --keep path")
    fields, recs = sources.table.records(path, "manifest")
    for column in ("path", "split"):
        if column not in fields:
            raise PolicyError(f"manifest has no `{column}` column (columns: {excerpt(', '.join(fields)) or 'none'})",
                              path=str(path), line=1, fix="the first row must be a header like `path,split,group`")
    rows = {sources.clean_path(r.get("path", "")): r for _, r in recs}
    rows.pop("", None)
    return fields, rows


def factorize(values: Sequence[str | None], own: Sequence[str]) -> np.ndarray:
    """Integer ids; a ``None`` value gets an id of its own (keyed by ``own``)."""
    ids: dict[object, int] = {}
    return np.fromiter(
        (ids.setdefault(v if v is not None else ("\0", o), len(ids)) for v, o in zip(values, own)),
        dtype=np.int64,
        count=len(values),
    )


@dataclass(frozen=True)
class Shares:
    """The split asked for: test and validation shares (train has the rest), the seed, the
    manifest column (or ``folder``) to stratify by, and the three split names."""

    test: float
    val: float = 0.0
    seed: int = 0
    stratify: str | None = None
    names: Sequence[str] = DEFAULT_NAMES


def plan(
    policy: Policy,
    shares: Shares,
    *,
    keep: Path | None = None,
    current: Mapping[str, str] | None = None,
    store=None,
    opts: RunOptions | None = None,
) -> Plan:
    """Decide a split for every image under the policy's root; write nothing.

    ``keep`` is a manifest to keep; ``current`` (path -> split, e.g. the folders
    files sit in now) is kept like one: only what must change, changes.  ``opts``
    runs the search for copies (``jobs``, ``use_cache``).
    """
    test, val, names, stratify = shares.test, shares.val, shares.names, shares.stratify
    _check_shares(names, test, val)
    refuse_shards(policy)
    pooled = pooled_policy(policy)
    paths = [r.path for r in inventory.scan(pooled).records]
    source = (
        keep
        if keep is not None
        else (policy.manifest if policy.manifest and policy.manifest.is_file() else None)
    )
    fields, rows = _read_rows(source) if source is not None else ([], {})
    if current is not None:
        rows = {p: {"path": p, "split": s} for p, s in current.items()}
    # No image, no cluster: and a check over nothing is refused (blind.py), rightly, for a check.
    pool = found(policy, pooled, store=store, opts=opts) if paths else Found([], None, [])
    clusters, meta = pool.clusters, pool.meta
    if policy.groups:
        groups = group_rules.group_of(paths, policy, meta)
    else:
        groups = [rows.get(p, {}).get("group") or None for p in paths]
    row_of = {p: i for i, p in enumerate(paths)}
    gids = factorize(groups, paths)
    # A file's frames (and, when files move, a shard's members) are one unit however they are grouped.
    units = shard_units(paths, every_shard=current is not None)
    comp = components(gids, [*([row_of[p] for p in c if p in row_of] for c in clusters), *units])
    labels = _labels(stratify, paths, source, fields, rows)
    targets = (1 - test - val, val, test)
    kept = None
    joined = 0
    if keep is None and current is None:
        joined = len(np.unique(comp))
        comp = keep_warned(comp, [[row_of[p] for p in c if p in row_of] for c in pool.warned])
        joined -= len(np.unique(comp))
    else:
        held = _kept_splits(keep or policy.path, rows, names, paths)
        bounds, weight = _share_repair(policy, names, comp, gids, held)
        kept = Kept(held, bounds, None if weight is None else weight.astype(np.float64))
    result = assign(comp, targets, labels=labels, seed=shares.seed, kept=kept)
    carried = tuple(c for c in fields if c not in ("path", "split", "group"))
    return Plan(
        names=tuple(names),
        paths=tuple(paths),
        split=result.split,
        group=tuple(groups),
        columns=carried,
        extra={p: rows[p] for p in paths if p in rows} if carried else {},
        stats=_stats(result.split, labels, targets, names),
        components=int(comp.max()) + 1 if len(comp) else 0,
        largest=int(np.bincount(comp).max()) if len(comp) else 0,
        clusters=len(clusters),
        warned=joined,
        ungrouped=sum(g is None for g in groups),
        unreadable=pool.unreadable,
        moved=result.moved,
        dropped=len(set(rows) - set(paths)) if keep is not None else 0,
        stratified_by=stratify,
    )


def _check_shares(names: Sequence[str], test: float, val: float) -> None:
    if len(names) != 3 or len(set(names)) != 3:
        raise UsageError(
            f"--names needs three different split names, got {','.join(names)}",
            fix="e.g. --names train,valid,test",
        )
    if not (0 < test < 1 and 0 <= val < 1 and test + val < 1):
        raise UsageError(
            f"shares --test {test} and --val {val} must be in [0, 1) and leave some for train",
            fix="e.g. --test 0.2 --val 0.1",
        )


def _labels(stratify: str | None, paths: Sequence[str], source: Path | None, fields: Sequence[str],
            rows: dict[str, dict[str, str]]) -> np.ndarray | None:
    if stratify == "folder":
        return factorize([p.rsplit("/", 1)[0].rsplit("/", 1)[-1] if "/" in p else "" for p in paths], paths)
    if not stratify:
        return None
    if source is None:
        raise UsageError(
            f"--stratify {stratify} reads a manifest column, and there is no manifest",
            fix="pass --keep MANIFEST, or --stratify folder",
        )
    if stratify not in fields:
        raise PolicyError(
            f"manifest has no `{stratify}` column (columns: {excerpt(', '.join(fields))})",
            path=str(source),
            line=1,
            fix="name an existing column in --stratify, or `folder`",
        )
    return factorize([rows.get(p, {}).get(stratify, "") for p in paths], ["" for _ in paths])


def _kept_splits(
    keep: Path, rows: dict[str, dict[str, str]], names: Sequence[str], paths: Sequence[str]
) -> np.ndarray:
    """Each file's kept split index (-1: new)."""
    unknown = sorted({r["split"] for r in rows.values()} - set(names))
    if unknown:
        raise UsageError(
            f"the kept manifest uses split {unknown[0]!r}, not one of {', '.join(names)}",
            path=str(keep),
            fix="pass the manifest's split names as --names TRAIN,VAL,TEST",
        )
    index = {s: k for k, s in enumerate(names)}
    return np.array([index[rows[p]["split"]] if p in rows else -1 for p in paths], dtype=np.int64)


#: Without ``split_share`` in the policy, a kept split keeps at least this part of its share:
#: moving every group to the split holding most of it can otherwise empty a split (``apex-hud``
#: of ``benchmarks/field.py``: 6 videos, each mostly in train, left val with no file).
KEPT_SHARE_FLOOR = 0.5


def _share_repair(
    policy: Policy, names: Sequence[str], comp: np.ndarray, gids: np.ndarray, held: np.ndarray
) -> tuple[list[tuple[float, float]] | None, np.ndarray | None]:
    """The share bounds per split, and each component's weight (groups), to repair a kept split with:
    the policy's ``split_share``, else half of each split's share as it is kept now."""
    bounds = weight = None
    if policy.split_share is None:
        now = np.bincount(held[held >= 0], minlength=len(names)).astype(np.float64)
        if now.sum():
            bounds = [(KEPT_SHARE_FLOOR * float(n) / float(now.sum()), 1.0) for n in now]
    else:
        spec = {s: (lo, hi) for s, lo, hi in policy.split_share.bounds}
        bounds = [spec.get(s, (0.0, 1.0)) for s in names]
        if policy.split_share.by == "groups" and len(comp):
            # A component's weight is the number of groups in it.
            span = int(gids.max()) + 1
            weight = np.bincount(np.unique(comp * span + gids) // span)
    return bounds, weight


def _stats(
    split: np.ndarray, labels: np.ndarray | None, targets: Sequence[float], names: Sequence[str]
) -> tuple[SplitStat, ...]:
    n = len(split)
    labels = np.zeros(n, dtype=np.int64) if labels is None else labels
    n_labels = int(labels.max()) + 1 if n else 1
    overall = np.bincount(labels, minlength=n_labels) / max(n, 1)
    out = []
    for k, name in enumerate(names):
        mine = labels[split == k]
        dist = np.bincount(mine, minlength=n_labels) / len(mine) if len(mine) else overall
        if targets[k] == 0 and not len(mine):
            continue
        out.append(
            SplitStat(
                name,
                len(mine),
                len(mine) / max(n, 1),
                float(targets[k]),
                round(float(0.5 * np.abs(dist - overall).sum()), 4),
            )
        )
    return tuple(out)
