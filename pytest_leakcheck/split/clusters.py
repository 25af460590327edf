"""What a split plan keeps together besides the policy's name rules: copy clusters, and groups read from inside files.

Images that live in one file on disk are kept together too (:func:`shard_units`).

One check over the whole tree (every file in one pseudo-split) finds the
copies wherever they sit now; when the policy has metadata rules (``dicom``,
``exif``, ``burst``: ``dataset/metagroups.py``) the same check reads them, so
``leakcheck split`` keeps every patient and every burst in one split, as the
check demands.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..dataset import metagroups
from ..detectors import Detectors
from ..errors import UsageError
from ..files import members
from ..report.model import COPY_KINDS

if TYPE_CHECKING:
    from ..pipeline.options import RunOptions
    from ..policy.load import Policy


@dataclass(frozen=True)
class Found:
    """What the pooled check found: clusters that must share a split, the metadata rules' values
    (None without such rules), and the weak links' clusters (``keep_warned``)."""

    clusters: list[list[str]]
    meta: metagroups.Values | None
    warned: list[list[str]]
    #: Files the check could not decode: no copy of theirs can be found, so none is kept with them.
    unreadable: int = 0


def found(policy: Policy, pooled: Policy, *, store: Any = None, opts: RunOptions | None = None) -> Found:
    """Every identical or near-duplicate cluster of the pooled check, its weak ones apart.

    A weak link's finding is not a cluster: it asks a person to look, and keeping it whole
    would chain the clusters it joins into one, which the check itself never does.
    """
    from ..pipeline.run import RunOptions, run, store_location
    from ..store import pseudonyms

    # A slot of its own in the store: the pooled check's search state must not replace the check's.
    opts = replace(opts or RunOptions(), state_slot="split")
    rules = metagroups.rules(policy)
    checked = replace(pooled, groups=rules, ungrouped="own-group") if rules else pooled
    done = run(checked, store=store, opts=opts)
    copies = [f for f in done.report.findings if f.kind in COPY_KINDS]
    clusters = [[m.path for m in f.members] for f in copies if not f.weak]
    warned = [[m.path for m in f.members] for f in copies if f.weak]
    unreadable = sum(len(f.members) for f in done.report.findings if f.kind == "unreadable-image")
    if not rules:
        return Found(clusters, None, warned, unreadable)
    key = pseudonyms.key(store.path if store is not None else store_location(policy, opts.use_cache))
    return Found(clusters, metagroups.values(done.inventory.records, done.signatures, key), warned, unreadable)


def clusters_and_groups(policy: Policy, pooled: Policy, *, store: Any = None,
                        opts: RunOptions | None = None) -> tuple[list[list[str]], metagroups.Values | None]:
    """Paths of every identical or near-duplicate cluster, and the metadata rules' values (None without such rules)."""
    done = found(policy, pooled, store=store, opts=opts)
    return done.clusters, done.meta


#: A fresh plan keeps the files of a warned link together while that joins at most this many files:
#: one trigger's burst or one leaf's shots stay whole, while a fixed camera's same-scene links, which
#: would chain every frame into one component, stop at this size.
WARNED_MAX = 10


def keep_warned(comp: np.ndarray, warned: Sequence[Sequence[int]], most: int = WARNED_MAX) -> np.ndarray:
    """``comp`` with the rows of each warned cluster joined, as long as a component stays within ``most`` files.

    Held-out probe 6 (docs/field.md): PlantVillage leaves shot twice, each pair a weak same-scene
    link, were planned into train and test, and the check of that plan warned about every pair.
    Joining them costs a fresh plan nothing; a plan that keeps current splits does not use this, as
    it would move files for a warning."""
    if not len(comp) or not any(len(rows) > 1 for rows in warned):
        return comp  # nothing to join: a million-file plan pays no Python loop over its components
    from ..search.unionfind import UnionFind

    uf = UnionFind()
    size = np.bincount(comp).tolist()
    for rows in warned:
        for a, b in zip(rows, rows[1:]):
            ra, rb = uf.find(int(comp[a])), uf.find(int(comp[b]))
            if ra != rb and size[ra] + size[rb] <= most:
                uf.union(ra, rb)
                size[min(ra, rb)] += size[max(ra, rb)]  # UnionFind keeps the lower root
    roots = np.arange(len(size))
    for c in uf.parent:  # only the components a warned link touched
        roots[c] = uf.find(c)
    return np.unique(roots[comp], return_inverse=True)[1].reshape(-1)


def copy_clusters(policy: Policy, pooled: Policy, *, store: Any = None,
                  opts: RunOptions | None = None) -> list[list[str]]:
    """Paths of every identical or near-duplicate cluster, whatever split they are in now."""
    return clusters_and_groups(replace(policy, groups=()), pooled, store=store, opts=opts)[0]


def shard_units(paths: Sequence[str], *, every_shard: bool) -> list[list[int]]:
    """Rows (indices into ``paths``) that must share a split because they live in one file on disk.

    The frames of a multi-frame DICOM file always do: they are one acquisition, and
    neighbouring frames are near copies of each other that the copy search need not
    catch.  The members of a tar, Parquet or Arrow shard only with ``every_shard``
    (the plan moves files between split folders, and a file moves only whole); a
    manifest may give each member its own split, as the loader reads it in place.
    """
    by_shard: dict[str, list[int]] = {}
    for i, path in enumerate(paths):
        if members.SEP in path and (members.is_member(path) if every_shard else members.is_frame(path)):
            by_shard.setdefault(members.shard_of(path), []).append(i)
    return [rows for rows in by_shard.values() if len(rows) > 1]


#: Split sources whose images live inside shard files: a plan moves files, so it cannot move them.
SHARD_KINDS = ("huggingface", "webdataset")


def refuse_shards(policy: Policy) -> None:
    """Refuse a policy of shards: the pooled search walks files, found none of their rows, and wrote an
    empty manifest as if done."""
    kind = policy.split_sources.kind if policy.split_sources is not None else None
    if kind in SHARD_KINDS:
        raise UsageError(f"the images are inside {kind} shards, and a split plan moves files",
                         fix="keep each finding's copies in one split when writing the shards (e.g. datasets' "
                             "`filter` on the rows `leakcheck check --format json` names), then check again")


def pooled_policy(policy: Policy) -> Policy:
    """Every file in one pseudo-split, so the core search links copies wherever they sit now.

    Same-scene searches that one split with itself: its matches are where ``turned-copy`` finds
    a copy turned by a few degrees, which the check across the planned splits would find.
    """
    scene = replace(policy.detectors.same_scene, within_split=True)
    detectors = Detectors(tuple((k, scene if k == "same_scene" else v) for k, v in policy.detectors.settings))
    return replace(
        policy,
        detectors=detectors,
        splits=(("all", ("**",)),),
        split_sources=None,
        split_names=("all",),
        pairs=(),
        within_split="error",
        groups=(),
        split_share=None,
        group_split="off",
    )
