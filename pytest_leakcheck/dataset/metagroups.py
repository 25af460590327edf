"""Group ids from inside the files: DICOM attributes, EXIF fields and photo bursts, always as pseudonyms.

The values come from the signature stage (``signals/metadata.py`` families,
read once per content and kept in the store), so these rules resolve after
signatures, not with the name rules at inventory time (``groups.resolve``
takes the values when there are any).  A group id is the field's name and
the first 12 hex digits of its keyed pseudonym (``PatientID-3f9a2c1b7d4e``):
the identifier itself never reaches a record, a finding or an output.

A burst is the shots of one camera (EXIF make, model and serial; one unknown
camera for files without them) whose capture times are each at most the
rule's gap after the previous one.  The time is EXIF ``DateTimeOriginal``
with ``SubSecTimeOriginal``, else (``time: any`` or ``name``) a timestamp in
the file name (:func:`name_time`).  A file without a time has no burst.  A file
of no camera timed by its name (a copy whose EXIF was stripped) joins the burst
of the nearest shot of a camera named alike within the gap (:func:`bursts`).
"""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ..policy.grouprules import METADATA, GroupRule

if TYPE_CHECKING:
    from ..policy.load import Policy
    from ..signals.families import Family, Signatures
    from .inventory import FileRecord

#: Hex digits of a pseudonym shown in a group id: 48 bits, no collision in any real dataset.
SHOWN = 12
#: A timestamp in a file name: IMG_20230101_101500_123.jpg, PXL_20230101_101500123.jpg,
#: 2023-01-01 10.15.00.jpg, burst_2023-01-01T10-15-00.250.jpg.
NAME_TIME = re.compile(r"(?<!\d)((?:19|20)\d\d)[-_.]?(\d\d)[-_.]?(\d\d)[-_T ]?(\d\d)[-_.:h]?(\d\d)[-_.:m]?(\d\d)"
                       r"(?:[-_.,]?(\d{1,6}))?(?!\d)")


#: Unix times a bare-number file name may hold: 2000-01-01 to 2100-01-01.
EPOCHS = (946_684_800, 4_102_444_800)


def rules(policy: Policy) -> tuple[GroupRule, ...]:
    return tuple(r for r in policy.groups if r.source in METADATA)


def families(policy: Policy, key: bytes) -> tuple[Family, ...]:
    """The families the policy's metadata rules read (none without such rules)."""
    from ..signals import metadata

    out = []
    for r in rules(policy):
        if r.source == "burst":
            if r.field != "name":
                out.append(metadata.burst_family(key))
        else:
            out.append(metadata.field_family(r.source, str(r.value), key))
    return tuple(dict.fromkeys(out))


def name_time(path: str) -> float | None:
    """Seconds (as if UTC) of the last timestamp in the file name, or None.

    A name that is only a Unix time (``1715940900.jpg``, ``1715940900250.jpg`` in ms) counts
    when it falls between 2000 and 2100.
    """
    name = path.rsplit("/", 1)[-1]
    stem = name.rsplit(".", 1)[0] if "." in name else name
    if stem.isdigit() and len(stem) in (10, 13):
        seconds = int(stem) / (1000 if len(stem) == 13 else 1)
        if EPOCHS[0] <= seconds < EPOCHS[1]:
            return float(seconds)
    found = None
    for m in NAME_TIME.finditer(name):
        y, mo, d, h, mi, s, frac = m.groups()
        try:
            moment = datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), tzinfo=timezone.utc)
        except ValueError:
            continue
        found = moment.timestamp() + (float("0." + frac) if frac else 0.0)
    return found


def name_pattern(path: str) -> str:
    """The file name with every digit as 0: how a camera (or its app) names its shots
    (``20241202_193940.jpg`` and ``20241202_193944.jpg`` alike, ``20241212142640.jpg`` not)."""
    return re.sub(r"\d", "0", path.rsplit("/", 1)[-1].lower())


def site(path: str) -> bytes:
    """What a file's name says before its first digit (``stationa__`` of ``StationA__2009-04-28__17-48-00.JPG``).

    A camera is known by its make, model and serial, and trail cameras and phones write no serial:
    two traps of one model at two sites, shooting in one minute, made one burst and a false group-split
    error (held out: camtrapR's sample images). Their names tell the sites apart; an iPhone's edit
    ``IMG_E2447`` keeps ``IMG_2447``'s, and names that start with a digit say nothing either way.
    """
    name = path.rsplit("/", 1)[-1].lower()
    head = re.match(r"[^0-9]*", name).group(0)  # type: ignore[union-attr]
    if head == name or sum(c.isalpha() for c in head) < 3:  # `a.jpg`, `P1010001.JPG`: no site named
        return b""
    return re.sub(r"_e$", "_", head).encode()


def cameras_at_sites(cameras: Sequence[bytes], paths: Sequence[str]) -> list[bytes]:
    """Each shot's camera told apart by its name's site (:func:`site`); no camera stays none."""
    return [cam + b"\x1f" + site(p) if cam else b"" for cam, p in zip(cameras, paths)]


def bursts(times: Sequence[float | None], cameras: Sequence[bytes], gap: float,
           patterns: Sequence[str] = (), named: Sequence[bool] = ()) -> list[int | None]:
    """Burst number of each shot (None without a time): per camera, in time order, a gap above ``gap`` cuts.

    With ``patterns`` (:func:`name_pattern`) and ``named`` (the time came from the name), a shot of
    no camera (``b""``) whose time comes from its name joins the burst of the nearest shot of a
    camera named alike within ``gap`` (:func:`_adopted`): a copy whose EXIF was stripped otherwise
    never joins its original's burst.
    """
    joins = _adopted(times, cameras, gap, patterns, named) if patterns and named else {}
    order = sorted((i for i, t in enumerate(times) if t is not None and i not in joins),
                   key=lambda i: (cameras[i], times[i]))
    out: list[int | None] = [None] * len(times)
    burst, last, camera = -1, -math.inf, None
    for i in order:
        t = times[i]
        assert t is not None
        if cameras[i] != camera or t - last > gap:
            burst += 1
        out[i], last, camera = burst, t, cameras[i]
    for i, j in joins.items():
        out[i] = out[j]
    return out


def _adopted(times: Sequence[float | None], cameras: Sequence[bytes], gap: float,
             patterns: Sequence[str], named: Sequence[bool]) -> dict[int, int]:
    """For each shot of no camera timed by its name, the nearest shot of a camera named alike within
    ``gap``, if any.

    It joins that one shot's burst and takes no part in cutting bursts: a file between two bursts of
    one camera, or two cameras shooting at once, must not chain them.  Two candidates at the same
    distance: the earlier shot, then the smaller camera tag, so the answer never depends on order.
    """
    by_pattern: dict[str, list[tuple[float, bytes, int]]] = {}
    for j, (t, cam) in enumerate(zip(times, cameras)):
        if t is not None and cam:
            by_pattern.setdefault(patterns[j], []).append((t, cam, j))
    for shots in by_pattern.values():
        shots.sort()
    out: dict[int, int] = {}
    for i, (t, cam) in enumerate(zip(times, cameras)):
        shots = by_pattern.get(patterns[i]) if t is not None and not cam and named[i] else None
        if not shots:
            continue
        k = bisect.bisect_left(shots, (t - gap,))
        near = [(abs(s - t), s, c, j) for s, c, j in shots[k:bisect.bisect_right(shots, (t + gap, b"\xff" * 64))]]
        if near:
            out[i] = min(near)[3]
    return out


@dataclass
class Values:
    """What the signature stage read for the metadata rules, by path, with the key that names bursts."""

    rows: dict[str, int]
    arrays: dict[str, Any]
    key: bytes
    #: Rows decoded fine.  An attribute is read from the header of an unreadable file too
    #: (``Family.header``: zeros where absent); a burst needs a decode (its arrays hold zeros).
    valid: Any
    _bursts: dict[GroupRule, list[str | None]] = field(default_factory=dict)

    def groups(self, rule: GroupRule, paths: Sequence[str]) -> list[str | None]:
        if rule.source == "burst":
            ids = self._bursts.get(rule)
            if ids is None:
                ids = self._bursts[rule] = self._burst_ids(rule)
            return [ids[self.rows[p]] if p in self.rows else None for p in paths]
        arr = self.arrays.get(f"meta:{rule.source}:{rule.value}")
        out: list[str | None] = []
        for p in paths:
            i = self.rows.get(p)
            value = None if arr is None or i is None else arr[i]
            out.append(f"{rule.value}-{value.tobytes().hex()[:SHOWN]}" if value is not None and value.any() else None)
        return out

    def _burst_ids(self, rule: GroupRule) -> list[str | None]:
        from ..signals.metadata import pseudonym

        paths = sorted(self.rows, key=self.rows.__getitem__)
        exif_times = self.arrays.get("meta:burst:time")
        cams = self.arrays.get("meta:burst:camera")
        times: list[float | None] = []
        cameras: list[bytes] = []
        tags: list[bytes] = []  # as stored: a burst's id is named by its tag, zeros for no camera
        named: list[bool] = []
        for p in paths:
            i = self.rows[p]
            t = None if exif_times is None or rule.field == "name" or not self.valid[i] else float(exif_times[i, 0])
            t = None if t is None or math.isnan(t) else t
            named.append(t is None and rule.field != "exif")
            if named[-1]:
                t = name_time(p)
            times.append(t)
            tags.append(b"" if cams is None or not self.valid[i] else cams[i].tobytes())
            cameras.append(tags[-1] if tags[-1].strip(b"\0") else b"")  # zeros: no make, model or serial
        numbers = bursts(times, cameras_at_sites(cameras, paths), float(rule.value), [name_pattern(p) for p in paths],
                         named)
        # A burst is named by its camera's first shot: a camera-less copy that joined it leaves its id as it was.
        first: dict[int, tuple[bool, float, bytes, bytes]] = {}
        for n, cam, t, tag, p in zip(numbers, cameras, times, tags, paths):
            if n is not None and (n not in first or (not cam, t) < first[n][:2]):
                first[n] = (not cam, t, tag, site(p))  # type: ignore[assignment]
        # Bursts of one camera model at two sites may start in one second: the site names them apart.
        # Only then, so that every other burst keeps the id a baseline may hold.
        alike = Counter((c, t) for _, t, c, _ in first.values())
        names = {n: "burst-" + pseudonym(self.key, f"burst:{c.hex()}:{t!r}" + (
                     f":{where.hex()}" if alike[c, t] > 1 else "")).hex()[:SHOWN]
                 for n, (_, t, c, where) in first.items()}
        return [None if n is None else names[n] for n in numbers]


def values(records: Sequence[FileRecord], sigs: Signatures, key: bytes) -> Values:
    """The metadata arrays of ``sigs`` by the records' paths (rows without a decode have zeros or NaN)."""
    arrays = {name: arr for name, arr in sigs.arrays.items() if name.startswith("meta:")}
    return Values({r.path: i for i, r in enumerate(records)}, arrays, key, sigs.valid)
