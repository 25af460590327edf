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
#: Share of DICOM images that must carry a PatientID for the patient rule: a clear majority.  The
#: rest are ungrouped, each a warning of the check; 61 of 68 (pydicom's and DICOMSamples' test files)
#: is a patient set with a few anonymised files, and dropping the rule hid 7 patients in two splits.
PATIENT_SHARE = 0.5
#: Consecutive shots of one camera this close (seconds) are taken as burst shots when choosing a gap.
BURST_SPACING = 5.0
#: Gaps init may propose: the smallest at least twice the widest spacing inside bursts.
GAPS = (1.0, 2.0, 5.0, 10.0)
#: Shots a burst may hold without a warning, whatever share of the photos that is.
FEW_SHOTS = 20
#: Timed photos that must all lie on whole minutes before their clock is taken to count minutes only.
MINUTE_CLOCK_FROM = 5
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
    per: dict[str, set[str]] = {}
    for p, g in ids.items():
        per.setdefault(g, set()).add(splits[p])
    spanning = sum(1 for s in per.values() if len(s) > 1)
    across = f"{spanning} patient{'s' * (spanning != 1)} in more than one split"
    if len(ids) < PATIENT_SHARE * len(splits) or len(counts) < 2:
        why = "one PatientID for every file" if len(counts) == 1 else f"PatientID in {len(ids)} of {len(splits)} files"
        note = (f"groups: no patient rule proposed ({why}; {across}); if files share a subject, "
                "add a rule such as `dicom: StudyInstanceUID` (docs/policy-groups.md)")
        # Patients already in two splits are a leak whatever rule is written: said where it is seen.
        warning = (f"{across} by DICOM PatientID, which no proposed rule checks: add `- dicom: PatientID` "
                   "under `groups:` to keep each patient in one split")
        return Proposal("", None, (), note, (warning,) if spanning else ())
    sizes = sorted(counts.values())
    line = (f"patients from DICOM PatientID: {len(counts)} patients over {len(ids)} of {len(splits)} DICOM images, "
            f"{sizes[0]} to {sizes[-1]} images each (median {statistics.median(sizes):g}); {across}")
    if len(ids) < len(splits):
        missing = len(splits) - len(ids)
        line += (f"; {missing} image{'s' * (missing != 1)} without a PatientID {'are' if missing != 1 else 'is'} "
                 "ungrouped (the check warns about each)")
    return _rule("dicom: PatientID", "DICOM PatientID", line, len(ids) == len(splits),
                 f"{len(counts)} patients, {spanning} in more than one split")


def _head(path: Path) -> bytes:
    """The first 64 KiB of a file, where a DICOM header's patient module sits (pixels come last)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(1 << 16)
    except OSError:
        return b""


@dataclasses.dataclass(frozen=True)
class _Times:
    """Each photo's capture time (EXIF, else its name; None without one), where it came from, its camera."""

    paths: tuple[str, ...]
    times: tuple[float | None, ...]
    exif: tuple[bool, ...]
    cameras: tuple[bytes, ...]

    def exif_only(self) -> _Times:
        return dataclasses.replace(self, times=tuple(t if e else None for t, e in zip(self.times, self.exif)))


@dataclasses.dataclass(frozen=True)
class _Chain:
    """A "burst" that is no camera's: more than LONG_BURST shots timed by their names, or evenly spaced."""

    shots: int
    span: float
    #: The median spacing of its shots, in seconds.
    step: float
    named: bool
    even: bool


def _read_times(root: Path, paths: list[str]) -> _Times:
    from ..signals.metadata import capture_time, exif_fields

    times: list[float | None] = []
    exif: list[bool] = []
    cameras: list[bytes] = []
    for p in paths:
        fields = exif_fields(root / p)
        t = capture_time(fields.get("DateTimeOriginal", ""), fields.get("SubsecTimeOriginal", ""))
        exif.append(t is not None)
        times.append(t if t is not None else metagroups.name_time(p))
        camera = "\x1f".join(fields.get(k, "") for k in ("Make", "Model", "BodySerialNumber"))
        cameras.append(camera.encode() if camera.strip("\x1f") else b"")  # b"": no camera, as the check has it
    return _Times(tuple(paths), tuple(times), tuple(exif), tuple(cameras))


def _bursts(root: Path, splits: dict[str, str]) -> Proposal | None:
    """The burst rule; with ``time: exif`` when only names chain files a script wrote; or why there is none."""
    found = _read_times(root, list(splits))
    if sum(t is not None for t in found.times) < SHARE * len(found.paths):
        return None
    numbers = _numbers(found)
    if numbers is None:
        return None
    chains = _not_bursts(found, numbers[1])
    if not chains:
        return _burst_rule(found, numbers, splits, "")
    worst = max(chains, key=lambda c: c.shots)
    spacing = f"{worst.step:g} s apart" if worst.even else f"a median {worst.step:g} s apart"
    # Uneven spacings are a person's: 335 phone photos (IMG_YYYYMMDD_HHMMSS) of toys moved about a mat,
    # 1-6 s apart for 20 minutes (held-out probe 11), were no script's, only no burst.
    what = ("times a script wrote, not a camera's burst" if worst.even else
            "longer than any camera's burst (one session shot without a pause, or times a script wrote)")
    why = (f"one chain of {worst.shots} photos {spacing} over {worst.span:.0f} s, timed by "
           f"{'their file names' if worst.named else 'EXIF'}: {what}")
    if all(c.named for c in chains) and any(found.exif):  # the names lie; the cameras' own times may not
        exif = found.exif_only()
        by_exif = _numbers(exif)
        if by_exif is not None and not _not_bursts(exif, by_exif[1]):
            named = sum(t is not None for t in found.times) - sum(found.exif)
            return _burst_rule(exif, by_exif, splits, f"{why}; the rule reads EXIF times only ({named} photos "
                               "timed by their names alone are left ungrouped)")
    return Proposal("", None, (), f"groups: no burst rule proposed: {why}; if a camera took some in bursts, "
                    "add a `burst` rule for them by hand (docs/policy-groups.md)")


def _numbers(found: _Times) -> tuple[float, tuple[int | None, ...]] | None:
    """The proposed gap and each photo's burst under it, or None: no gap, or too few shots in bursts."""
    gap = _gap(list(found.times), list(found.cameras))
    if gap is None:
        return None
    # As the check groups them: a camera-less copy joins its original's burst (metagroups.bursts).
    numbers = metagroups.bursts(found.times, metagroups.cameras_at_sites(found.cameras, found.paths), gap,
                                [metagroups.name_pattern(p) for p in found.paths], [not e for e in found.exif])
    sizes = Counter(n for n in numbers if n is not None)
    if sum(k for k in sizes.values() if k > 1) < REPEAT * sum(t is not None for t in found.times):
        return None  # a few close shots in a collection are not a burst set
    return gap, tuple(numbers)


#: Share of a chain's spacings within EVEN of its median for it to be evenly spaced (a script's clock).
EVEN_SHARE = 0.9
EVEN = 0.05


def _not_bursts(found: _Times, numbers: tuple[int | None, ...]) -> list[_Chain]:
    """Bursts of more than LONG_BURST shots whose times all come from names, or come at a fixed interval.

    A camera's burst of one subject is 2 to a few dozen shots.  Hundreds chained by times in file names
    are when a script wrote them (510 OCR word crops named `YYYYMMDDHHMMSS.png`, a second apart), and so
    are hundreds at one interval to the 20th (an export stamping EXIF as it goes).
    """
    members: dict[int, list[int]] = {}
    for i, n in enumerate(numbers):
        if n is not None:
            members.setdefault(n, []).append(i)
    out = []
    for idx in members.values():
        if len(idx) <= LONG_BURST:
            continue
        ts = sorted(t for i in idx if (t := found.times[i]) is not None)  # a shot in a burst has a time
        steps = [b - a for a, b in zip(ts, ts[1:])]
        step = statistics.median(steps)
        even = step > 0 and sum(abs(d - step) <= EVEN * step for d in steps) >= EVEN_SHARE * len(steps)
        named = not any(found.exif[i] for i in idx)
        if named or even:
            out.append(_Chain(len(idx), ts[-1] - ts[0], step, named, even))
    return out


def _burst_rule(found: _Times, bursts: tuple[float, tuple[int | None, ...]], splits: dict[str, str],
                exif_only: str) -> Proposal:
    """The rule for ``bursts`` (gap, and each photo's burst; ``time: exif`` when ``exif_only`` says why)."""
    gap, numbers = bursts
    sizes = Counter(n for n in numbers if n is not None)
    shots = [k for k in sizes.values() if k > 1]
    per: dict[int, set[str]] = {}
    for p, n in zip(found.paths, numbers):
        if n is not None:
            per.setdefault(n, set()).add(splits[p])
    spanning = sum(1 for s in per.values() if len(s) > 1)
    from_exif = sum(e and t is not None for e, t in zip(found.exif, found.times))
    timed = sum(t is not None for t in found.times)
    source = (f"EXIF DateTimeOriginal in {from_exif} photos" if from_exif else "")
    named = timed - from_exif
    source += (", " if source and named else "") + (f"timestamps in {named} file names" if named else "")
    line = (f"photo bursts from capture times ({source}): {len(shots)} burst{'s' * (len(shots) != 1)} "
            f"of 2 or more shots "
            f"within {gap:g} s of each other (up to {max(shots)} shots), {spanning} in more than one split")
    rule = f"burst: {{gap: {gap:g}s{', time: exif' * bool(exif_only)}}}"
    evidence = f"{len(shots)} bursts within {gap:g} s, {spanning} in more than one split"
    proposal = _rule(rule, "EXIF capture times" if exif_only else "capture times", line, timed == len(found.paths),
                     evidence)
    return dataclasses.replace(proposal, found=proposal.found + ((exif_only,) if exif_only else ()),
                               warnings=_long_bursts(list(found.times), list(numbers), timed))


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
    if len(ts) <= LONG_BURST and (len(ts) <= LARGE_SHARE * timed or len(ts) < FEW_SHOTS):
        return ()  # a few shots of one pass are a burst however few the photos are
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
    timed = [t for t in times if t is not None]
    if len(timed) >= MINUTE_CLOCK_FROM and all(t % 60 == 0 for t in timed):
        # Every time on a whole minute: a trail camera's clock. Shots of one pass a minute apart differ by
        # 60 s; a gap of 1 s cut one animal's pass into three bursts (held out: camtrapR's samples).
        return 60.0
    return next((g for g in GAPS if g >= 2 * max(close)), GAPS[-1])


def _rule(rule: str, where: str, line: str, covers: bool, evidence: str) -> Proposal:
    head = ("\n# Files of one patient or one burst must stay in one split; group ids are keyed\n"
            f"# pseudonyms, never the identifiers (docs/security.md). Proposed by `leakcheck init`\n"
            f"# from {where} ({yaml_comment(evidence)}).\n")
    yaml = head + f"groups:\n  - {rule}\nungrouped: {'own-group' if covers else 'warning'}\ngroup_split: error\n"
    return Proposal(yaml, None, (line,), "")
