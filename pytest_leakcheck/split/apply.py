"""What a split plan does to the world: a manifest, a repaired manifest, or moves in a folder tree.

``plan.py`` decides; this module writes text, and never deletes or
overwrites anything.  Three outputs:

- :func:`manifest_text`: a fresh manifest, sorted by path.
- :func:`kept_manifest`: the ``--keep`` manifest with only the rows that must
  change changed: same columns, same order, same bytes for every other row
  (files that are gone are dropped, new files are appended).
- :func:`tree_moves`: for a policy whose splits are folders (``train/**``,
  ``data/test/**``), the moves that put each file in its planned split's
  folder, keeping its path below the split folder (an ImageFolder class
  folder stays).  ``moves.py`` performs them, all or none, journaled.

Nothing here prints; the CLI shows the moves and the summary.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from ..dataset import inventory
from ..pipeline import preflight
from ..sources import clean_path
from ..errors import UsageError
from ..files import members
from ..files.names import csv_writerow
from ..policy.load import Policy
from .moves import Move
from .plan import Plan


# --------------------------------------------------------------------------
# Manifests


def manifest_text(p: Plan) -> str:
    """The manifest CSV: path, split, group (if any), then carried-over columns; sorted by path."""
    buf = io.StringIO()
    writerow = csv_writerow(buf)  # quotes a name holding a lone CR, which csv.writer leaves bare
    has_group = any(g is not None for g in p.group)
    writerow(["path", "split", *(["group"] if has_group else []), *p.columns])
    for i in np.argsort(np.array(p.paths, dtype=object), kind="stable").tolist():
        path = p.paths[i]
        row = [path, p.names[int(p.split[i])]]
        if has_group:
            row.append(p.group[i] or "")
        extra = p.extra.get(path, {})
        writerow(row + [extra.get(c, "") for c in p.columns])
    return buf.getvalue()


def summary(p: Plan, *, targets: bool = True) -> str:
    """A few lines a person reads after the run.

    ``targets=False`` when the plan only repairs split folders: the files stay
    in their folders except for the moves printed after this, so shares are
    shown as they will be and no target (which the repair does not apply) is.
    """
    lines = []
    for s in p.stats:
        if not targets and not s.files:
            continue  # the placeholder third split of a two-folder tree
        line = f"  {s.name:<8} {s.files:>9} files  {s.share:6.1%}"
        if targets:
            line += f"  (target {s.target:.1%})"
        if p.stratified_by:
            line += f"  label distance {s.label_distance:.3f}"
        lines.append(line)
    head = (
        f"leakcheck split: {len(p.paths)} files in {p.components} components "
        f"(largest {p.largest}); {p.clusters} copy clusters merged with groups"
    )
    if p.warned:
        head += f"; {p.warned} warned links kept in one split"
    if p.ungrouped and any(g is not None for g in p.group):
        head += f"; {p.ungrouped} files matched no group rule"
    tail = []
    if p.unreadable:
        # Held-out probe 9 (docs/field.md, `ctdwt`): 100 TIFFs no reader opened were placed in silence,
        # 28 of them in the other split from their own DICOM.
        tail.append(f"{p.unreadable} file{'s' * (p.unreadable != 1)} could not be read: placed without "
                    "any copy of theirs (`leakcheck check` names each and why)")
    if p.stratified_by:
        tail.append(
            f"label distance: total variation between a split's {p.stratified_by} labels "
            "and the whole dataset's (0 is a perfect match)"
        )
    if p.moved or p.dropped:
        tail.append(
            f"changed the split of {p.moved} kept files; "
            f"dropped {p.dropped} rows whose file is gone"
        )
    return "\n".join([head, *lines, *tail]) + "\n"


def kept_manifest(path: Path, p: Plan) -> str:
    """``path`` (the ``--keep`` manifest) with only the rows whose split must change rewritten."""
    text = path.read_bytes().decode("utf-8-sig")  # bytes: keep the file's own line endings
    planned = {q: p.names[int(k)] for q, k in zip(p.paths, p.split)}
    group_of = dict(zip(p.paths, p.group))
    lines = text.splitlines(keepends=True)
    newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    header = next(csv.reader([lines[0]])) if lines else ["path", "split"]
    records = list(csv.reader(io.StringIO(text)))
    if len(records) != sum(1 for line in lines if line.strip()):  # quoted line breaks: rewrite all rows
        lines = [_row(r, newline) for r in records]
    col_path, col_split = header.index("path"), header.index("split")
    out, seen = [lines[0]] if lines else [_row(header, newline)], set()
    for line in lines[1:]:
        if not line.strip():
            out.append(line)
            continue
        row = next(csv.reader([line]))
        rel = clean_path(row[col_path]) if len(row) > col_path else ""
        if rel not in planned:
            continue  # the file is gone: its row goes (split.summary counts it)
        seen.add(rel)
        if len(row) > col_split and row[col_split].strip() != planned[rel]:
            row[col_split] = planned[rel]
            line = _row(row, newline)
        out.append(line)
    if out and not out[-1].endswith(("\n", "\r")):
        out[-1] += newline
    for rel in sorted(set(planned) - seen):  # new files go at the end, in path order
        row = ["" for _ in header]
        row[col_path], row[col_split] = rel, planned[rel]
        if "group" in header:
            row[header.index("group")] = group_of.get(rel) or ""
        out.append(_row(row, newline))
    return "".join(out)


def _row(values: list[str], newline: str) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator=newline).writerow(values)
    return buf.getvalue()


# --------------------------------------------------------------------------
# Folder trees


def split_folders(policy: Policy) -> dict[str, str] | None:
    """Split name -> its folder when every split is exactly one ``FOLDER/**`` glob; else None."""
    if policy.split_sources is not None or not policy.splits:
        return None
    out = {}
    for name, globs in policy.splits:
        glob = globs[0].strip() if len(globs) == 1 else ""
        if not glob.endswith("/**") or any(c in glob[:-3] for c in "*?["):
            return None
        # `./train/**`, `/train/**` and `train//**` name the folder `train`, as they do for the check.
        parts = [p for p in glob[:-3].split("/") if p not in ("", ".")]
        if not parts or ".." in parts:
            return None
        out[name] = "/".join(parts)
    return out


def current_splits(policy: Policy) -> dict[str, str]:
    """The split each image is in now, by the policy's globs.

    A split whose glob matches nothing is refused here as the check refuses
    it (``pipeline/preflight.py``): a typo must not plan moves from a tree it never saw.
    """
    inv = inventory.scan(policy)
    preflight.require_sight(inv)
    return {r.path: r.split for r in inv.records}


def tree_moves(p: Plan, folders: dict[str, str], current: dict[str, str]) -> list[Move]:
    """The moves that put each file of a split folder into its planned split's folder.

    A move is of a file on disk: the frames of a multi-frame DICOM file (and the
    members of a tar or Parquet shard) are listed one by one, but only their file
    (``members.shard_of``) can move, once.  The planner keeps such members in one
    split (``clusters.shard_units``); members planned apart refuse the plan.
    """
    planned: dict[str, tuple[str, str]] = {}
    for path, k in zip(p.paths, p.split.tolist()):
        now, then = current.get(path), p.names[int(k)]
        if now is None:
            continue  # a file in no split folder stays where it is
        on_disk = members.shard_of(path)
        if planned.setdefault(on_disk, (now, then)) != (now, then):
            raise UsageError(f"the plan puts the images inside {on_disk} in two splits, and a file moves only "
                             "whole; nothing was moved", fix="write a manifest instead: -o splits.csv")
    moves = []
    for on_disk, (now, then) in planned.items():
        if now == then:
            continue
        if then not in folders:
            raise UsageError(f"the plan puts {on_disk} in split {then!r}, which has no folder",
                             fix=f"add `{then}: [FOLDER/**]` to the policy's splits, or pass --val 0")
        moves.append(Move(on_disk, folders[then] + on_disk[len(folders[now]):]))
    return moves
