"""Whether a shared scene's links across splits join frames named as one recording.

Frames of a video, filmed a twenty-fifth of a second apart, are near copies of
their neighbours and look like every other frame of their clip, so the pixel
detectors fold a clip split at random into one ``shared-scene`` note whose
text says no link is a copy.  On the probe's PETS 2001 camera (1,500 frames of
six clips, split at random by frame) that note was all a check said, and it
passed: every test frame had its neighbours in train.  The names often say what
the pixels cannot: ``cam1_clip1_000004.jpg`` in test and ``cam1_clip1_000005.jpg``
in train are one recording.  When most links across splits join files whose
names differ only in their last number, the note says so and points to a group
rule, the one thing that keeps a recording in one split.  Clips of one fixed
camera kept apart (``clip6/000000.jpg`` in test, ``clip1/000000.jpg`` in train)
are named as two recordings and get no such line.

A Roboflow export renames each frame ``<source>_<ext>.rf.<hash>.<ext>``: the source is read
(``opencv_frame_112`` of ``opencv_frame_112_png.rf.1795….jpg``), or no export of a video would
ever be named as one.  And one webcam session exported whole (``opencv_frame_0`` to ``_205``:
held-out probe of stop 55, ``aitkherimed1228/Yolov10_project`` at 9b895c0) is one recording holding
the dataset, which a group rule cannot split; there the names still say that the note's strongest
links across splits join neighbouring frames (``opencv_frame_112`` in test, ``_111`` in train,
pHash 0), near copies of one moment, which :func:`neighbours` reports.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..detectors.homogeneity import CAMERA_NAMES
from ..files.exportnames import roboflow_stem
from ..search.kernels import Match

#: Share of the links across splits that must join files of one recording for the note to say so.
MIN_SHARE = 0.5
#: Recordings named in the note at most.
SHOWN = 3
#: The rule the note suggests for frames named ``<recording><number>.<ext>``: the name before its
#: last number (RE2 and Python's ``re`` read it alike; docs/policy-groups.md).
RULE = r"(?:^|/)(?P<group>[^/]*[^/0-9])[0-9]+\.[A-Za-z0-9]+$"
#: Words of names and folders that every recording shares: a camera's counter, a frame, a data folder.
GENERIC = CAMERA_NAMES | {"images", "imgs", "img", "data", "dataset", "frames", "photos", "pictures", "jpegimages",
                          "rgb", "color", "p"}
_FRAME = re.compile(r"^(.*?)([0-9]+)$")


def recording(path: str) -> str | None:
    """The recording a frame's name says it is of: the name with its last number left out
    (``camel_#`` of ``train/camel_00035.jpg``), after the nearest folder that names something when
    the name alone names nothing but a camera or a frame (``MOT17-02/#`` of ``MOT17-02/img1/000001.jpg``,
    ``clip3/#`` of ``train/clip3/00035.jpg``); None without a frame number or such a word
    (``IMG_0001``: a counter every recording shares)."""
    *folders, name = path.split("/")
    found = _FRAME.match(_stem(name))
    if found is None:
        return None
    key = found.group(1)
    if _names_nothing(key):
        # A split's own folder differs between splits, so it never joins two of them; a folder
        # every split has (``images``, ``img1``, ``480p``) says nothing and is passed over.  A folder
        # of letters only is read as ``init`` reads it: a class (``train/cat/``, ``test/cat/``), whose
        # files are no one recording, so it names none here either.
        named = [f for f in reversed(folders) if not _names_nothing(f)]
        if not named or not any(c.isdigit() for c in named[0]):
            return None
        key = f"{named[0]}/{key}"
    return f"{key}#"


def _names_nothing(text: str) -> bool:
    """Whether every word of ``text`` is a camera's, a frame's or a data folder's (or it has none)."""
    return all(w.lower() in GENERIC for w in re.findall(r"[A-Za-z]+", text))


#: Share of all files one recording may hold: a name every file shares (one folder of a dataset
#: split by a manifest, ``chess/0001.jpg``) is the dataset, not a recording.
MAX_RECORDING = 0.5


def sizes(paths: Sequence[str]) -> Counter[str]:
    """How many files each recording holds, over every file of the dataset."""
    return Counter(k for p in paths if (k := recording(p)) is not None)


@dataclass(frozen=True)
class Joined:
    """Links of a note across splits that join files named as one recording: how many, of how many."""

    links: int
    crossing: int
    #: The recordings joined most often, at most :data:`SHOWN`.
    names: tuple[str, ...]

    def clause(self) -> str:
        """What the note adds: the recordings, why it matters, and the rule that keeps each in one split."""
        rule = "" if any("/" in k for k in self.names) else f", e.g. `groups: [{{regex: '{RULE}'}}]`"
        return (f"; {self.links} of the {self.crossing} links across splits join files named as one recording "
                f"({', '.join(self.names)}): frames of one video or shots of one subject in two splits are a "
                f"leak these detectors cannot prove, and a group rule keeps each in one split "
                f"(docs/policy-groups.md){rule}")


def joined(links: Sequence[Match], path_of: Callable[[int], str], split_of: Callable[[int], str],
           held: Counter[str]) -> Joined | None:
    """Whether most of a note's links across splits join files named as one recording (of the dataset's
    ``held`` files per recording, at most :data:`MAX_RECORDING`), or None."""
    crossing = [m for m in links if split_of(m.i) != split_of(m.j)]
    most = MAX_RECORDING * sum(held.values())
    keys: dict[int, str | None] = {}  # a scene's links are many times its files: each name read once

    def key_of(row: int) -> str | None:
        if row not in keys:
            keys[row] = recording(path_of(row))
        return keys[row]

    same: Counter[str] = Counter()
    for m in crossing:
        key = key_of(m.i)
        if key is not None and key == key_of(m.j) and held[key] <= most:
            same[key] += 1
    total = sum(same.values())
    if not crossing or total < MIN_SHARE * len(crossing):
        return None
    return Joined(total, len(crossing), tuple(k for k, _ in same.most_common(SHOWN)))


#: Frame numbers at most this far apart are neighbours: a fraction of a second of video, a burst.
NEIGHBOURS = 5


@dataclass(frozen=True)
class Neighbours:
    """A note's strongest links across splits that join neighbouring frames of one recording."""

    links: int
    of: int
    #: The strongest such link's two files.
    example: tuple[str, str]

    def clause(self) -> str:
        a, b = (p.rsplit("/", 1)[-1] for p in self.example)
        return (f"; {self.links} of its {self.of} strongest links across splits join neighbouring frames of one "
                f"recording (numbers at most {NEIGHBOURS} apart, e.g. {a} ~ {b}): near copies of one moment on "
                "both sides of the split, which these detectors cannot tell from the scene's other shots; keep "
                "each run of frames in one split (docs/policy-groups.md)")


def neighbours(strongest: Sequence[Match], path_of: Callable[[int], str]) -> Neighbours | None:
    """Whether most of a note's ``strongest`` links across splits (strongest first) join frames of one
    recording numbered at most :data:`NEIGHBOURS` apart, whatever the recording's size, or None."""
    near = []
    for m in strongest:
        a, b = path_of(m.i), path_of(m.j)
        key = recording(a)
        if key is not None and key == recording(b) and abs(_number(a) - _number(b)) <= NEIGHBOURS:
            near.append((a, b))
    if not strongest or len(near) < MIN_SHARE * len(strongest):
        return None
    return Neighbours(len(near), len(strongest), near[0])


def _number(path: str) -> int:
    """The frame number of a path :func:`recording` reads (its name's last number)."""
    found = _FRAME.match(_stem(path.rsplit("/", 1)[-1]))
    return int(found.group(2)) if found else -1


def _stem(name: str) -> str:
    """A file name without its extension, or a Roboflow export name's upload (``opencv_frame_112``)."""
    return roboflow_stem(name) or name.rpartition(".")[0] or name
