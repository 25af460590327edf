"""Provenance truth for `benchmarks/field.py`: what a file's name (or a planted list) says.

- Roboflow names an exported file ``<source>_<ext>.rf.<32 hex>.<ext>``: two files of one
  source are one photograph (an augmented version, or the same upload exported twice). An
  upload converted first keeps its own extension too (``11_PNG_jpg.rf.…`` is the upload ``11``).
  Phone edits fold into their original: ``IMG_E2447`` is an edit of ``IMG_2447``.
- A capture time in the name (``20220709_000708``, ``IMG_20211008_091906533_HDR``) dates a
  shot; two shots a few seconds apart are a burst of one subject.
- ``cifar-mirror`` lists its planted copies in ``cifar-mirror.truth.json``.

A pair is then ``same-source`` (a copy by provenance), ``burst`` (shot within the burst
window: probably one subject), or ``unknown`` (provenance is silent; only an eye can judge).
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import re
from pathlib import Path, PurePosixPath

ROBOFLOW = re.compile(r"^(?P<source>.+)_(?:jpe?g|png|bmp|webp|tiff?|heic)\.rf\.(?:[0-9a-f]{32}|[0-9a-z]{20})\.\w+$", re.IGNORECASE)
EDIT = re.compile(r"^(IMG_)E(\d{4})", re.IGNORECASE)
#: Labeled Faces in the Wild numbers each person's pictures: ``Donald_Rumsfeld_0117.jpg`` is one picture,
#: whatever folder or split it was copied to (``lfw-faces``).
LFW = re.compile(r"^[A-Z][A-Za-z'.-]*(?:_[A-Za-z'.-]+)+_\d{4}\.jpg$")
#: The ISIC archive numbers one dermoscopic picture: ``ISIC_0010512.jpg`` in ``Test/actinic keratosis`` and in
#: ``Train/nevus`` is one picture (``isic``); ``ISIC_0025509(1).jpg`` is a browser's second download of it.
ISIC = re.compile(r"^ISIC_\d{7}(?:\(\d+\))?\.jpe?g$", re.IGNORECASE)
DOWNLOADED_AGAIN = re.compile(r"\(\d+\)$")
#: The Kaggle eye-disease set (``eyes``) names an augmented copy ``_<source>_<random>.jpg``: ``_49_2405371`` and
#: ``_49_7277741`` in one class folder are two versions of source 49 (judged by eye); the numbers restart per folder.
AUGMENTED = re.compile(r"^_(\d+)_\d+\.jpg$")
# An upload converted before export keeps its first extension in the source: ``11_PNG_jpg.rf.…``
# is the upload ``11.PNG`` (a number), ``Screen-Shot-…_png_jpg.rf.…`` the screenshot ``Screen-Shot-….png``.
INNER_EXT = re.compile(r"_(?:jpe?g|png|bmp|webp|tiff?|heic)$", re.IGNORECASE)
STAMP = re.compile(r"(?<!\d)(20\d{2})(\d{2})(\d{2})[_-]?(\d{2})(\d{2})(\d{2})(?!\d{1,2}(?:\D|$))")
BURST_SECONDS = 10.0


def source_of(path: str) -> str:
    """The photograph a file is a version of: its Roboflow source name, edits folded; else its stem.

    Case is kept: Roboflow keeps an upload's name as it was, and ``leprosy``'s ``leprosy_-----------_210823_0``
    (test) and ``Leprosy_-----------_210823_0`` (train) are two patients, by eye (their names' Thai letters
    became dashes).  Of the 29 field sets only ``leprosy`` has two sources that differ only in case."""
    name = PurePosixPath(path).name
    if augmented := AUGMENTED.match(name):
        return f"{PurePosixPath(path).parent.name}/_{augmented.group(1)}"
    match = ROBOFLOW.match(name)
    stem = INNER_EXT.sub("", match.group("source")) if match else PurePosixPath(name).stem
    if ISIC.match(name):
        stem = DOWNLOADED_AGAIN.sub("", stem)
    return EDIT.sub(r"\1\2", stem)


def captured(path: str) -> datetime.datetime | None:
    """The capture time in the file name, when it has one that parses."""
    match = STAMP.search(PurePosixPath(path).name)
    if not match:
        return None
    try:
        return datetime.datetime(*(int(g) for g in match.groups()))
    except ValueError:
        return None


@dataclasses.dataclass(frozen=True)
class Truth:
    """Known partners across splits: for each file, the files of another split it leaks with."""
    copies: dict[str, frozenset[str]]  # same source (or planted) in another split
    bursts: dict[str, frozenset[str]]  # shot within BURST_SECONDS in another split, not the same source
    numbers_identify: bool = True  # whether a bare-number source name names one photograph

    def judge(self, a: str, b: str) -> str:
        if b in self.copies.get(a, ()) or (source_of(a) == source_of(b) and _roboflow(a)
                                           and identifies(source_of(a), self.numbers_identify)):
            return "same-source"
        if b in self.bursts.get(a, ()) or _close(a, b):
            return "burst"
        return "unknown"


#: A frame extractor's name: a generic word and a counter (``frame_00005``). Every video of an
#: export numbers its frames from 0, so such a name never identifies a picture (``cones``: the
#: ``frame_00005`` of two videos are two scenes, by eye).
FRAME_COUNTER = re.compile(r"(?:frame|still)[_-]?\d+", re.IGNORECASE)
#: A name a site or a browser gives every file it saves, a counter at most after it: no picture either.
#: ``uav``'s ``youtube-0`` ... ``youtube-105`` number the frame grabs of two different videos alike.
WEB_DEFAULT = re.compile(r"(?:youtube|maxresdefault|hqdefault|mqdefault|sddefault|hq720|download|unnamed)"
                         r"[-_ ]?\d*(?:-jpg-\d+-)?", re.IGNORECASE)


def identifies(source: str, numbers_identify: bool) -> bool:
    """Whether a source name names one photograph: not a frame counter or a download's default name, nor a bare number where
    ``numbers_identify`` is off.  A phone's counter (``IMG_2447``) does: its edit ``IMG_E2447`` is
    that photograph."""
    if source.isdigit():
        return numbers_identify
    return not FRAME_COUNTER.fullmatch(source) and not WEB_DEFAULT.fullmatch(source)


def _roboflow(path: str) -> bool:
    """Whether the file's name names its picture: a Roboflow export, a phone edit, an LFW or ISIC picture."""
    name = PurePosixPath(path).name
    return bool(ROBOFLOW.match(name) or EDIT.match(name) or LFW.match(name) or ISIC.match(name)
                or AUGMENTED.match(name))


def _close(a: str, b: str) -> bool:
    ta, tb = captured(a), captured(b)
    return ta is not None and tb is not None and abs((ta - tb).total_seconds()) <= BURST_SECONDS


def build(files: dict[str, str], planted: Path | None = None, numbers_identify: bool = True) -> Truth:
    """``files``: path -> split. Partners across splits by source name, capture time and planted list.

    ``numbers_identify=False``: a source name that is a bare number (``25`` of ``25_jpg.rf.…``)
    names no photograph: exports merged from several uploads each numbered from 1 hold
    different images under one number (seen by eye in ``xray-wrist``)."""
    copies: dict[str, set[str]] = {}
    bursts: dict[str, set[str]] = {}
    by_source: dict[str, list[str]] = {}
    for path in files:
        if _roboflow(path) and identifies(source_of(path), numbers_identify):
            by_source.setdefault(source_of(path), []).append(path)
    for members in by_source.values():
        _pair_across(members, files, copies)
    if planted is not None and planted.is_file():
        for a, b in json.loads(planted.read_text())["mirrored_copies"]:
            if a in files and b in files:
                copies.setdefault(a, set()).add(b)
                copies.setdefault(b, set()).add(a)
    stamped = sorted((t, p) for p in files if (t := captured(p)) is not None)
    for i, (ta, a) in enumerate(stamped):
        for tb, b in stamped[i + 1:]:
            if (tb - ta).total_seconds() > BURST_SECONDS:
                break
            if files[a] != files[b] and b not in copies.get(a, ()):
                bursts.setdefault(a, set()).add(b)
                bursts.setdefault(b, set()).add(a)
    return Truth({k: frozenset(v) for k, v in copies.items()}, {k: frozenset(v) for k, v in bursts.items()},
                 numbers_identify)


def _pair_across(members: list[str], files: dict[str, str], into: dict[str, set[str]]) -> None:
    for a in members:
        for b in members:
            if files[a] != files[b]:
                into.setdefault(a, set()).add(b)
