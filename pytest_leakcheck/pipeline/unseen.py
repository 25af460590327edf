"""A check that compares little says so, and fails when the data shows splits the policy leaves out.

``preflight.py`` refuses a check over nothing.  A check over one split, or over
a small part of the images, still passed green: a first policy that found one
COCO file of a Roboflow export (train alone; valid/ and test/ in no split), or
the test/ folder of a darknet export (train.txt and valid.txt not read), gave
``0 errors``, exit 0, on data with real leaks (probe 2: cavity, cones).

A policy of one split that exists to find copies within it is legitimate, so
the rule is: when fewer than two splits hold images, or most images are in no
split, the report has a ``not-examined`` finding saying what is not compared;
it is an error when the data itself shows splits the policy leaves out (a
folder named like a split whose images are in no split, or split lists on
disk the policy does not read), else a warning.  Either is silenced the way
the data says: add what is left out to ``splits:``, or to ``ignore:``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from .. import sources
from ..dataset.inventory import Inventory, matches
from ..report.model import Finding, finding_id
from ..sources import splitlists
from ..sources.base import split_folder

#: Folders and lists a message names, the most images first; the rest are counted.
SHOWN = 3


def blind_spots(inv: Inventory) -> list[Finding]:
    """The ``not-examined`` finding of a check that compares little (module docstring), or none."""
    per_split = Counter(r.split for r in inv.records)
    holding = [s for s in inv.splits if per_split[s]]
    unassigned = [i.path for i in inv.issues if i.kind == "unassigned"]
    total = len(inv.records) + len(unassigned)
    if len(holding) >= 2 and len(unassigned) * 2 <= total:
        return []
    parts = []
    if len(holding) < 2:
        held = f"only split {holding[0]} holds images ({per_split[holding[0]]})" if holding else "no split holds images"
        parts.append(f"{held}: no copy across splits is searched, only copies within it")
    if len(unassigned) * 2 > total:
        folders = Counter(p.rsplit("/", 1)[0] if "/" in p else "." for p in unassigned)
        where = ", ".join(f"{f}/ {n}" for f, n in folders.most_common(SHOWN))
        parts.append(f"{len(unassigned)} of {total} images are in no split ({where}) and are compared with nothing")
    left = _left_out(inv, unassigned)
    if left:
        parts.append("the data has splits this policy leaves out: " + "; ".join(left))
        fix = "add them to `splits:` (`leakcheck init --force` proposes a policy), or to `ignore:` if they are not data"
    else:
        fix = "if the data has other splits, add them to `splits:`"
    return [Finding(
        id=finding_id("not-examined", ["coverage"]),
        kind="not-examined",
        severity="error" if left else "warning",
        members=(),
        message="; ".join(parts) + f": {fix}",
    )]


def _left_out(inv: Inventory, unassigned: list[str]) -> list[str]:
    """Split folders whose images are all in no split, and split lists on disk the policy neither
    reads nor ignores: the data's own word that it has splits the policy does not."""
    assigned_folders = {f for r in inv.records if (f := split_folder(r.path)) is not None}
    folders = Counter(f for p in unassigned if (f := split_folder(p)) is not None and f not in assigned_folders)
    out = []
    if folders:
        named = ", ".join(f"{f}/ ({n} image{'s' * (n != 1)})" for f, n in folders.most_common(SHOWN))
        more = len(folders) - SHOWN
        out.append(f"folder{'s' * (len(folders) != 1)} named like a split {named}"
                   + (f" and {more} more" if more > 0 else "") + ", in no split")
    lists = _unread_lists(inv)
    if lists:
        out.append(f"split lists {', '.join(lists[:SHOWN])}" + (f" and {len(lists) - SHOWN} more" if len(lists) > SHOWN
                                                                   else "") + " not read")
    return out


def _unread_lists(inv: Inventory) -> list[str]:
    """Split lists under a local root (``splitlists.on_disk``) that the policy does not read or ignore."""
    policy = inv.policy
    if not isinstance(policy.root, Path):
        return []
    root = policy.root.resolve()
    read = {Path(p).resolve() for p in sources.inputs(policy.split_sources, policy.root)}
    out = []
    for path in splitlists.on_disk(policy.root):
        rel = path.resolve().relative_to(root).as_posix() if path.resolve().is_relative_to(root) else None
        if rel is None or path.resolve() in read or (policy.ignore and matches(rel, policy.ignore)):
            continue
        out.append(rel)
    return out
