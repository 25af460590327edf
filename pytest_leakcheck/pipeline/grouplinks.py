"""What the pixel search says about a group whose files sit in two splits.

A group rule says files belong together (a patient, a video, a burst of shots); the pixel search
says which of them look alike.  A group-split finding states what the search found between its
files across splits, so a reviewer can tell a burst rule that joined four different boards shot
4 s apart (nothing alike) from frames of one scene.  Warning-level links between two files of such
a group are folded into its finding rather than listed apart.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations

from ..dataset.inventory import Inventory
from ..policy.load import Policy
from ..report.model import Finding, finding_id
from ..search.kernels import Match
from ..signals.families import Signatures


@dataclass(frozen=True)
class Tally:
    """By group-split finding id: the warnings folded into it, and the rows of its files that a
    pixel link joins to a file of the group in another split (filled in by :func:`fold`)."""

    split_ids: frozenset[str]
    folded: Counter[str] = field(default_factory=Counter)
    linked: dict[str, set[int]] = field(default_factory=dict)


def fold(matches: Sequence[Match], level: dict[int, str], inv: Inventory, tally: Tally) -> list[Match]:
    """``matches`` (decoded, not off) without the warnings between two files of one group that a
    group-split finding reports; those are counted in ``tally.folded``, and every link between its
    files across splits in ``tally.linked``.

    Such a warning asks nothing its group-split finding does not (one split for the group ends
    both).  On ``apex-hud`` of ``benchmarks/field.py`` (frames of 6 videos, every video in two
    splits) they were 1,900 of 2,005 warnings.
    """
    group_of = [r.group for r in inv.records]
    split_id = {g: fid for g in set(group_of) - {None}
                if (fid := finding_id("group-split", [g])) in tally.split_ids}
    kept = []
    for m in matches:
        g = group_of[m.i]
        same = g == group_of[m.j] and g in split_id
        if same and inv.records[m.i].split != inv.records[m.j].split:
            tally.linked.setdefault(split_id[g], set()).update((m.i, m.j))
        if same and level[id(m)] == "warning":
            tally.folded[split_id[g]] += 1
        else:
            kept.append(m)
    return kept


def searched(inv: Inventory, sigs: Signatures, policy: Policy, focused: bool) -> Callable[[Finding], bool]:
    """Whether the pixel search compared a group-split finding's files across its splits: a full
    check (a focused one searches only pairs touching the focus), decoded files in two splits or
    more, and every pair of those splits in ``pairs.compare``.  Only then may "no two look alike"
    be said."""
    if focused:
        return lambda f: False
    compared = {frozenset(p) for p in policy.pairs}
    decoded: dict[str | None, set[str]] = {}
    for r, ok in zip(inv.records, sigs.valid):
        if ok and r.group is not None:
            decoded.setdefault(r.group, set()).add(r.split)
    by_id = {finding_id("group-split", [g]): splits for g, splits in decoded.items() if len(splits) > 1}

    def seen(f: Finding) -> bool:
        splits = by_id.get(f.id)
        return splits is not None and all(frozenset(p) in compared for p in combinations(sorted(splits), 2))

    return seen


def noted(extra: Sequence[Finding], tally: Tally, seen: Callable[[Finding], bool]) -> list[Finding]:
    """The findings of ``extra``, each group-split one saying what the pixel search found between its
    files across splits, and how many warnings between its files it stands for."""
    out = []
    for f in extra:
        if f.kind != "group-split":
            out.append(f)
            continue
        notes = []
        if n := len(tally.linked.get(f.id, ())):
            notes.append(f"{n} of its files across splits {'are' if n != 1 else 'is'} also linked by their pixels")
        elif seen(f):
            notes.append("no two of its files across splits look alike (pixel search)")
        if n := tally.folded.get(f.id, 0):
            notes.append(f"{n} near link{'s' * (n != 1)} between its files at warning level are not listed apart")
        out.append(replace(f, message="; ".join([f.message, *notes])) if notes else f)
    return out
