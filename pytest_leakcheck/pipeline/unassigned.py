"""Findings of files in no split: one a file, one a folder when it holds many, one a subtree when
none of its files is in a split and its folders hold many between them."""

from __future__ import annotations

import posixpath
from collections import Counter

from ..dataset.inventory import FileIssue, Inventory
from ..report.model import Finding, Member, finding_id
from ..sources.base import split_folder

#: Files of one folder in no split from which they are one finding: a stray copy of the data
#: beside it (a held-out YOLO repository kept its 530-image ``train/`` beside the re-split
#: ``dataset_split/``) was 530 warnings, one a file; and how many of them that finding lists.
FOLD_UNASSIGNED, UNASSIGNED_SHOWN = 10, 5
#: How a folder joins the splits; under ``lists:`` a glob is refused (one source names every split), and a
#: folder is ``{images: FOLDER}`` there (NEU-DET's ``test/images/`` beside ``train.txt``, held-out probe 12).
HOW_TO_ADD = "(a glob, or `SPLIT: {images: FOLDER}` under `lists:`, or the list or file that names its images)"


def unassigned_findings(issues: list[FileIssue], severity: str, inv: Inventory) -> list[Finding]:
    """A finding per file in no split; a folder holding more than FOLD_UNASSIGNED of them is one
    finding, which lists a few (its message counts them all: none goes unnamed); so is a top folder
    none of whose files is in a split, when its folders hold more than that between them.

    ``covidct`` of benchmarks/field.py holds a user's training plots beside the data, five a folder
    in 17 folders of ``DenseNet169/plots/``: 85 warnings, one a plot, for one folder to leave out."""
    by_tree, rest = _by_tree(issues, inv)
    out = [_tree_finding(top, items, severity, len(inv.records)) for top, items in by_tree.items()]
    by_folder: dict[str, list[FileIssue]] = {}
    for issue in rest:
        by_folder.setdefault(posixpath.dirname(issue.path), []).append(issue)
    # Images per folder, in a split and not: counted once, for the folded findings' messages.
    in_split: Counter[str] = Counter()
    anywhere: Counter[str] = Counter()
    if any(len(items) > FOLD_UNASSIGNED for items in by_folder.values()):
        in_split.update(posixpath.dirname(r.path) for r in inv.records)
        anywhere.update(posixpath.dirname(i.path) for i in inv.issues if i.kind != "missing")
        anywhere.update(in_split)
    for folder, items in by_folder.items():
        groups = [items] if len(items) > FOLD_UNASSIGNED else [[i] for i in items]
        for group in groups:
            message = (group[0].detail if len(group) == 1
                       else _folded_message(group, in_split[folder], anywhere[folder], len(inv.records)))
            out.append(_finding(group, severity, message))
    return out


def _by_tree(issues: list[FileIssue], inv: Inventory) -> tuple[dict[str, list[FileIssue]], list[FileIssue]]:
    """The files in no split under a top folder that holds no file in a split, in more than one folder
    and more than FOLD_UNASSIGNED of them (one finding each), and the others (one a folder or a file)."""
    held = {posixpath.dirname(r.path).split("/", 1)[0] for r in inv.records}
    trees: dict[str, list[FileIssue]] = {}
    rest: list[FileIssue] = []
    for issue in issues:
        top = issue.path.split("/", 1)[0] if "/" in issue.path else ""
        if top and top not in held:
            trees.setdefault(top, []).append(issue)
        else:
            rest.append(issue)
    out = {}
    for top, items in trees.items():
        if len(items) > FOLD_UNASSIGNED and len({posixpath.dirname(i.path) for i in items}) > 1:
            out[top] = items
        else:
            rest += items
    return out, rest


def _tree_finding(top: str, items: list[FileIssue], severity: str, assigned: int) -> Finding:
    n, folders = len(items), len({posixpath.dirname(i.path) for i in items})
    head = (f"all {n} files under {top}/ ({folders} folders) are in no split ({items[0].detail}), and none of "
            f"its files is in one; the first {min(n, UNASSIGNED_SHOWN)} are listed")
    if split_folder(items[0].path) is not None:
        advice = (f"Its folders are named like a split: add them to `splits:` {HOW_TO_ADD}; `ignore:` would "
                  "leave a split unchecked")
    elif n > assigned:
        advice = (f"It holds more images than all the splits together ({assigned}): likely data the split source "
                  f"misses; add it to `splits:` {HOW_TO_ADD}")
    else:
        advice = f"Not data (a model's plots, a copy)? Add `{top}/**` to `ignore:`, or put it in a split"
    return _finding(items, severity, f"{head}. {advice}")


def _finding(group: list[FileIssue], severity: str, message: str) -> Finding:
    return Finding(
        id=finding_id("unassigned-file", [i.path for i in group]),
        kind="unassigned-file",
        severity=severity,
        members=tuple(Member(i.path, "") for i in group[:UNASSIGNED_SHOWN]),
        message=message,
    )


def _folded_message(group: list[FileIssue], in_split: int, total: int, assigned: int) -> str:
    """What one folder's files in no split are, and the advice that fits the folder.

    "All N files" only when they are all (brush's JPEGImages/ held 6,160 images, half of them
    listed), and ``ignore:`` only for a folder with no image in a split, not named like one, and
    holding fewer images than all the splits (``assigned``): advised for a split's folder (cavity's
    valid/) or the training data (cones' obj/, 809 images beside a test split of 35), it would
    take the data out of the check.
    """
    n, shown = len(group), len(group[:UNASSIGNED_SHOWN])
    count = f"all {n} files" if n >= total else f"{n} of the {total} files"
    head = f"{count} of this folder are in no split ({group[0].detail}); the first {shown} are listed"
    if in_split:
        return (f"{head}. {in_split} of its files are in a split: name the others in the split source "
                "(the list, table or globs that name those), or skip them alone with `ignore:`")
    if split_folder(group[0].path) is not None:
        return (f"{head}. The folder is named like a split: add it to `splits:` {HOW_TO_ADD}; `ignore:` "
                "would leave a split unchecked")
    if n > assigned:
        return (f"{head}. It holds more images than all the splits together ({assigned}): likely data the "
                f"split source misses; add it to `splits:` {HOW_TO_ADD}")
    return f"{head}. A copy of the data left beside it? Add the folder to `ignore:`, or to a split"
