"""A check that sees nothing must fail, never pass.

A typo in a split glob, a manifest with only its header, an ``ignore`` that
skips everything, a pair list that names nothing, a split folder linked out
of the root: each once gave a clean report, because no image means no leak.
So once the inventory is known, and before any image is read, :func:`require_sight`
turns every such policy into a :class:`PolicyError` (exit 2) that names the
policy file, the key and the fix.  It is the one place this rule lives: the
CLI, the plugin, the hook and the Action all reach it through ``core.check``.
"""

from __future__ import annotations

from collections import Counter

from .. import detectors
from ..errors import MissingExtra, PolicyError
from ..files import frames, members
from ..dataset.inventory import Inventory
from ..policy.load import Policy


def require_sight(inv: Inventory) -> None:
    """Raise :class:`PolicyError` when the check would compare nothing or a split has no image."""
    policy = inv.policy
    if not detectors.enabled(policy) and not policy.groups:
        raise _error(policy, ("detectors",), "every detector is off and there are no group rules: nothing is checked",
                     "turn a detector back on, e.g. `detectors: {phash: {severity: error}}`")
    if not policy.split_names:
        raise _error(policy, _source_key(policy), "lists no image, so there is no split to check",
                     "add rows `path,split` (or entries) for the images, or point the key at the right file")
    if not policy.pairs and policy.within_split == "off":
        raise _error(policy, ("pairs",), "compares nothing: no pair of splits, and `within_split: off`",
                     "define at least two splits, or set `pairs.within_split: warning`")
    per_split = Counter(r.split for r in inv.records)
    # A split whose files are all listed in another split too is no missing split: its files are
    # `ambiguous-file` findings, errors by default (a Pascal VOC set whose val.txt is a copy of train.txt).
    shared = {s for i in inv.issues if i.kind == "ambiguous" for s in i.splits}
    empty = [s for s in policy.split_names if not per_split[s] and s not in shared]
    if not empty:
        return
    if inv.ignored and not inv.records:
        raise _error(policy, ("ignore",), f"excludes every image ({inv.ignored} files and folders skipped), "
                     "so no split has an image", "narrow the `ignore` globs")
    names = ", ".join(f"`{s}`" for s in empty)
    key = _split_key(policy, empty[0])
    which = f"split {names} has" if len(empty) == 1 else f"splits {names} have"
    raise _error(policy, key, f"{which} no images: {_why(inv, empty[0])}",
                 "fix the globs or rows of that split, or remove the split from the policy")


def require_readers(inv: Inventory) -> None:
    """Raise :class:`MissingExtra` (exit 2) when the dataset holds DICOM files and pydicom is missing.

    Each file would otherwise be an ``unreadable`` finding: a verdict on the data
    for what is a missing install.  pydicom is imported only when a DICOM file is listed.
    """
    files = {members.shard_of(r.path) for r in inv.records}
    found = sorted(p for p in files if frames.named(p))
    if not found:
        return
    from ..signals.dicom import NoPydicom, pydicom

    try:
        pydicom()
    except NoPydicom as exc:
        raise MissingExtra(f"{exc}; {len(found)} DICOM files are listed, e.g. {found[0]}",
                           fix="install the extra, or leave DICOM files out with `ignore: ['**/*.dcm']`") from None


def _why(inv: Inventory, split: str) -> str:
    links = [i.path for i in inv.issues if i.kind == "outside_root" and split in i.splits]
    if links:
        return f"`{links[0]}` is a symbolic link out of root, which is not followed"
    # Files of a format `files.extensions` leaves out (GTSRB's .ppm once) are found, only not read:
    # say so, or the user hunts a glob typo that is not there.
    unread = [i for i in inv.issues if i.kind == "not_examined" and split in i.splits]
    if unread:
        return f"`{unread[0].path}`: {unread[0].detail}"
    if inv.policy.split_sources is not None:
        return "none of the files listed for it is on disk under root"
    return "its globs match no image file under root"


def _source_key(policy: Policy) -> tuple[str, ...]:
    if policy.split_sources is not None:
        return ("splits", policy.split_sources.kind)
    return ("splits",)


def _split_key(policy: Policy, split: str) -> tuple[str, ...]:
    if policy.split_sources is not None and policy.split_sources.kind in ("coco", "lists"):  # one file per split
        return ("splits", policy.split_sources.kind, split)
    if policy.split_sources is not None:
        return _source_key(policy)
    return ("splits", split)


def _error(policy: Policy, key: tuple[str, ...], problem: str, fix: str) -> PolicyError:
    return PolicyError(problem, path=policy.display(key), key=".".join(key), fix=fix)
