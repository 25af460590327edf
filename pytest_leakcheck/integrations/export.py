"""One row per image of the dataset: what ``leakcheck export`` writes and GX validates.

A row joins the inventory (path, split, group), the store (content digest,
pixel digest where one was computed, the perceptual hashes in every searched
orientation) and the report (the copy cluster the image belongs to, and every
finding that names it).  After a check everything comes from the store's
snapshot, so building the table decodes nothing.

Every cell is a string and an empty string means "none": CSV has no null, and
one convention for all three formats keeps them interchangeable.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..files.atomic import replacing, write_atomic
from ..orientation import ORIENTATIONS
from ..signals.decode import PIXELS_PARAMS
from ..errors import UsageError
from ..files.escape import csv_writer
from ..files.names import json_text
from ..report.model import COPY_KINDS, Finding, Report, finding_id
from ..policy.load import Policy, load
from ..signals.families import search_orientations

if TYPE_CHECKING:
    from ..dataset.inventory import FileRecord
    from ..signals.families import Signatures

#: Finding kinds that are clusters of copies (one cluster per image at most);
#: every other kind (group-split, unreadable-image, ...) is about files, not copies.

FORMATS = ("csv", "jsonl", "parquet")
_SUFFIXES = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet", ".pq": "parquet"}
_RANK = {"error": 0, "warning": 1}


@dataclass(frozen=True)
class Table:
    """Rows of strings under named columns; ``rows[k][columns.index(name)]``."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    def column(self, name: str) -> list[str]:
        k = self.columns.index(name)
        return [row[k] for row in self.rows]

    def records(self) -> list[dict[str, str]]:
        return [dict(zip(self.columns, row)) for row in self.rows]


def table(
    policy: Policy | str | Path | None = None,
    *,
    report: Report | None = None,
    jobs: int | None = None,
    use_cache: bool = True,
) -> Table:
    """The table for ``policy``, running a check unless ``report`` is given.

    With ``report`` (from ``check()`` or a saved JSON report) and no policy,
    the policy is the one the report names.  Signatures come from the
    policy's store; with ``use_cache=False`` a fresh in-memory store is filled
    by the check, so nothing is decoded twice either way.
    """
    from ..pipeline import signatures
    from ..pipeline.run import RunOptions, open_policy_store, run, take_inventory

    if policy is None:
        if report is None:
            raise TypeError("table() needs a policy or a report")
        policy = report.policy_path
    if not isinstance(policy, Policy):
        policy = load(policy)
    # The store where `check` keeps it, by the same rule (LEAKCHECK_CACHE, containment).
    store = open_policy_store(policy, use_cache)
    opts = RunOptions(jobs=jobs, use_cache=use_cache)
    try:
        if report is None:  # one assembled run: its inventory and signatures are the table's
            done = run(policy, store=store, opts=opts)
            report, inv, sigs = done.report, done.inventory, done.signatures
        else:
            inv = take_inventory(policy)
            # After a check this is the snapshot's arrays: no decode, no per-file query.
            sigs = signatures.compute(inv.records, inv.policy, store, opts, update_snapshot=False)
        policy = inv.policy  # a manifest may have filled in the split names
        digests = [d for d in sigs.digests if d]
        pixels = store.get_signatures(digests, "pixels", PIXELS_PARAMS)
    finally:
        store.close()
    searched = search_orientations(policy.orientations)
    hashes = tuple((k, o) for k, o in enumerate(ORIENTATIONS) if o in searched)
    kind = policy.detectors.phash.kind
    columns = ("path", "split", "group", "digest", "pixel_digest",
               *(f"{kind}_{o}" for _, o in hashes),
               "cluster", "kind", "severity", "status", "findings")
    return Table(columns, _rows(inv.records, sigs, pixels, report, hashes))


def _rows(
    records: Sequence[FileRecord],
    sigs: Signatures,
    pixels: dict[bytes, tuple[bool, bytes]],
    report: Report,
    hashes: tuple[tuple[int, str], ...],
) -> tuple[tuple[str, ...], ...]:
    named = _findings_by_path(report.findings)
    group_split = {f.id: f for f in report.findings if f.kind == "group-split"}
    rows = []
    for i, rec in enumerate(records):
        digest = sigs.digests[i]
        ok, pixel = pixels.get(digest, (False, b""))
        mine = list(named.get(rec.path, ()))
        if rec.group is not None:
            # Every file of a group is in its group-split finding (found by id: no walk of its members).
            split_group = group_split.get(finding_id("group-split", [rec.group]))
            if split_group is not None and all(f.id != split_group.id for f in mine):
                mine.append(split_group)
        mine.sort(key=_order)
        copy = mine[0] if mine and mine[0].kind in COPY_KINDS else None
        rows.append((
            rec.path, rec.split, rec.group or "", digest.hex(), pixel.hex() if ok else "",
            # The packed bits as stored, first bit most significant: imagehash's own hex form.
            *(sigs.arrays[f"hash:{o}"][i].tobytes().hex() if sigs.valid[i] else "" for _, o in hashes),
            *((copy.id, copy.kind, copy.severity, copy.status) if copy else ("", "", "", "")),
            " ".join(f.id for f in mine),
        ))
    return tuple(rows)


def _order(f: Finding) -> tuple[int, int, str]:
    """Copy cluster first, then the worst finding."""
    return (0 if f.kind in COPY_KINDS else 1, _RANK.get(f.severity, 2), f.id)


def _findings_by_path(findings: Sequence[Finding]) -> dict[str, list[Finding]]:
    out: dict[str, list[Finding]] = {}
    for f in findings:
        for path in dict.fromkeys(m.path for m in f.members):
            out.setdefault(path, []).append(f)
    return out


# --------------------------------------------------------------------------
# Writers


def format_of(path: Path | None, fmt: str | None) -> str:
    """``fmt`` when given, else the format the file suffix names (CSV without one)."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise UsageError(f"unknown export format {fmt!r}", key="--format", fix="choose csv, jsonl or parquet")
        return fmt
    if path is None:
        return "csv"
    found = _SUFFIXES.get(path.suffix.lower())
    if found is None:
        raise UsageError(f"cannot tell the export format of {path} from its suffix", key="--format",
                         fix="name the file .csv, .jsonl or .parquet, or pass --format csv|jsonl|parquet")
    return found


def to_text(tab: Table, fmt: str) -> str:
    """CSV (header first) or JSON lines (one object per row).

    Cells are data (file names, split and group names): CSV goes through the
    CSV medium's rule (escape.csv_cell: no cell runs as a spreadsheet formula),
    JSON lines through ``names.json_text``; either way a name that is not
    UTF-8 is written as valid Unicode with its odd bytes as ``\\xNN``.
    """
    if fmt == "jsonl":
        return "".join(json.dumps({k: json_text(v) for k, v in zip(tab.columns, row)}, ensure_ascii=False) + "\n"
                       for row in tab.rows)
    if fmt != "csv":
        raise UsageError(f"{fmt} is not a text format", fix="write it to a file with -o PATH")
    buf = io.StringIO()
    writerow = csv_writer(buf)
    writerow(tab.columns)
    for row in tab.rows:
        writerow(row)
    return buf.getvalue()


def write(tab: Table, path: Path, fmt: str | None = None) -> str:
    """Write ``tab`` to ``path`` atomically; returns the format written."""

    fmt = format_of(path, fmt)
    try:
        if fmt == "parquet":
            _write_parquet(tab, path)
        else:
            write_atomic(path, to_text(tab, fmt))
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}", fix="choose a writable path") from None
    return fmt


def _write_parquet(tab: Table, path: Path) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise UsageError("writing Parquet needs pyarrow, which is not installed",
                         fix="pip install 'pytest-leakcheck[parquet]', or export .csv or .jsonl") from None
    columns = {name: pa.array([json_text(row[k]) for row in tab.rows], type=pa.string())
               for k, name in enumerate(tab.columns)}
    with replacing(path) as tmp:
        pq.write_table(pa.table(columns), tmp)
