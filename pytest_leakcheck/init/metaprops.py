"""Group rules ``leakcheck init`` proposes from inside the files: the patient of DICOM sets, photo bursts.

File names of medical exports are UIDs that say nothing; the patient is in
the header.  Photos taken in a burst share neither a name token nor a folder;
their capture times say it.  So ``init`` reads what the check would: each
DICOM file's ``PatientID`` (header only), each photo's EXIF capture time and
camera (else a timestamp in its name).  It says how many patients and files
per patient, or how many bursts and of what size, and never an identifier:
init's output is a log too (docs/security.md).
"""

from __future__ import annotations

import dataclasses
import statistics
from collections import Counter
from pathlib import Path

from ..files import frames, members
from ..files.escape import yaml_comment
from ..dataset import metagroups
from .groupids import LARGE_SHARE, Proposal

#: Share of a set's files that must be DICOM (or carry a capture time) for a proposal.
SHARE = 0.5
#: Consecutive shots of one camera this close (seconds) are taken as burst shots when choosing a gap.
BURST_SPACING = 5.0
#: Gaps init may propose: the smallest at least twice the widest spacing inside bursts.
GAPS = (1.0, 2.0, 5.0, 10.0)
#: Share of timed photos that must be in bursts of two or more for the rule to be proposed.
REPEAT = 0.1
#: More shots than this in one burst gets a warning: a camera's burst of one subject is far shorter.
LONG_BURST = 100
PHOTOS = (".jpg", ".jpeg", ".tif", ".tiff", ".png", ".webp", ".heic")


def propose(root: Path, splits: dict[str, str]) -> Proposal | None:
    """The patient rule for a DICOM set, the burst rule for photos in bursts, or None."""
    dicom = [p for p in splits if frames.named(members.shard_of(p))]
    if dicom and len(dicom) >= SHARE * len(splits):
        return _patients(root, {p: splits[p] for p in dicom})
    photos = [p for p in splits if p.lower().endswith(PHOTOS)]
    return _bursts(root, {p: splits[p] for p in photos}) if photos else None


def _patients(root: Path, splits: dict[str, str]) -> Proposal | None:
    from ..signals.dicom import NoPydicom, attributes

    ids: dict[str, str] = {}
    by_file: dict[str, str | None] = {}
    try:
        for p in splits:
            f = members.shard_of(p)
            if f not in by_file:
                head = _head(root / f)
                by_file[f] = attributes(head, ("PatientID",)).get("PatientID") if head else None
            if by_file[f]:
                ids[p] = by_file[f]  # type: ignore[assignment]
    except NoPydicom as exc:
        return Proposal("", None, (), f"groups: {exc}; with it, init proposes the patient rule")
    counts = Counter(ids.values())
    if len(ids) < 0.9 * len(splits) or len(counts) < 2:
        why = "one PatientID for every file" if len(counts) == 1 else f"PatientID in {len(ids)} of {len(splits)} files"
        return Proposal("", None, (), f"groups: no patient rule proposed ({why}); if files share a subject, "
                        "add a rule such as `dicom: StudyInstanceUID` (docs/policy-groups.md)")
    per: dict[str, set[str]] = {}
    for p, g in ids.items():
        per.setdefault(g, set()).add(splits[p])
    spanning = sum(1 for s in per.values() if len(s) > 1)
    sizes = sorted(counts.values())
    line = (f"patients from DICOM PatientID: {len(counts)} patients over {len(ids)} of {len(splits)} DICOM images, "
            f"{sizes[0]} to {sizes[-1]} images each (median {statistics.median(sizes):g}); "
            f"{spanning} patient{'s' * (spanning != 1)} in more than one split")
    return _rule("dicom: PatientID", "DICOM PatientID", line, len(ids) == len(splits),
                 f"{len(counts)} patients, {spanning} in more than one split")


def _head(path: Path) -> bytes:
    """The first 64 KiB of a file, where a DICOM header's patient module sits (pixels come last)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(1 << 16)
    except OSError:
        return b""


def _bursts(root: Path, splits: dict[str, str]) -> Proposal | None:
    from ..signals.metadata import capture_time, exif_fields

    times: list[float | None] = []
    cameras: list[bytes] = []
    named: list[bool] = []
    from_exif = 0
    paths = list(splits)
    for p in paths:
        fields = exif_fields(root / p)
        t = capture_time(fields.get("DateTimeOriginal", ""), fields.get("SubsecTimeOriginal", ""))
        from_exif += t is not None
        named.append(t is None)
        times.append(t if t is not None else metagroups.name_time(p))
        camera = "\x1f".join(fields.get(k, "") for k in ("Make", "Model", "BodySerialNumber"))
        cameras.append(camera.encode() if camera.strip("\x1f") else b"")  # b"": no camera, as the check has it
    timed = [t for t in times if t is not None]
    if len(timed) < SHARE * len(paths):
        return None
    gap = _gap(times, cameras)
    if gap is None:
        return None
    # As the check groups them: a camera-less copy joins its original's burst (metagroups.bursts).
    numbers = metagroups.bursts(times, cameras, gap, [metagroups.name_pattern(p) for p in paths], named)
    sizes = Counter(n for n in numbers if n is not None)
    shots = [k for k in sizes.values() if k > 1]
    if sum(shots) < REPEAT * len(timed):  # a few close shots in a collection are not a burst set
        return None
    per: dict[int, set[str]] = {}
    for p, n in zip(paths, numbers):
        if n is not None:
            per.setdefault(n, set()).add(splits[p])
    spanning = sum(1 for s in per.values() if len(s) > 1)
    source = (f"EXIF DateTimeOriginal in {from_exif} photos" if from_exif else "")
    named = len(timed) - from_exif
    source += (", " if source and named else "") + (f"timestamps in {named} file names" if named else "")
    line = (f"photo bursts from capture times ({source}): {len(shots)} burst{'s' * (len(shots) != 1)} "
            f"of 2 or more shots "
            f"within {gap:g} s of each other (up to {max(shots)} shots), {spanning} in more than one split")
    proposal = _rule(f"burst: {{gap: {gap:g}s}}", "capture times", line, len(timed) == len(paths),
                     f"{len(shots)} bursts within {gap:g} s, {spanning} in more than one split")
    return dataclasses.replace(proposal, warnings=_long_bursts(times, numbers, len(timed)))


def _long_bursts(times: list[float | None], numbers: list[int | None], timed: int) -> tuple[str, ...]:
    """A warning when the largest burst chains more shots than a camera takes of one subject.

    Times that are when a script wrote the files (an augmentation run, a copy), not when a
    camera took them, chain everything: one "burst" of 341 files 250 ms apart held several
    industrial parts (the probe's `brush` set, docs/field.md).
    """
    spans: dict[int, list[float]] = {}
    for t, n in zip(times, numbers):
        if n is not None and t is not None:
            spans.setdefault(n, []).append(t)
    if not spans:
        return ()
    ts = max(spans.values(), key=len)
    if len(ts) <= LONG_BURST and len(ts) <= LARGE_SHARE * timed:
        return ()
    return (f"one burst chains {len(ts)} of {timed} timed photos over {max(ts) - min(ts):.0f} s: "
            "if these times are when files were written (a script, a copy) and not when a camera took "
            "them, the rule groups unrelated photos; look at a few before the first check",)


def _gap(times: list[float | None], cameras: list[bytes]) -> float | None:
    """The proposed gap: twice the widest spacing of consecutive shots closer than BURST_SPACING, rounded up."""
    by: dict[bytes, list[float]] = {}
    for t, c in zip(times, cameras):
        if t is not None:
            by.setdefault(c, []).append(t)
    close = [b - a for ts in by.values() for a, b in zip(sorted(ts), sorted(ts)[1:]) if b - a <= BURST_SPACING]
    if not close:
        return None
    return next((g for g in GAPS if g >= 2 * max(close)), GAPS[-1])


def _rule(rule: str, where: str, line: str, covers: bool, evidence: str) -> Proposal:
    head = ("\n# Files of one patient or one burst must stay in one split; group ids are keyed\n"
            f"# pseudonyms, never the identifiers (docs/security.md). Proposed by `leakcheck init`\n"
            f"# from {where} ({yaml_comment(evidence)}).\n")
    yaml = head + f"groups:\n  - {rule}\nungrouped: {'own-group' if covers else 'warning'}\ngroup_split: error\n"
    return Proposal(yaml, None, (line,), "")
