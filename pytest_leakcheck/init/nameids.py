"""Ids inside file names with no separator before the shot: ``apple001`` of ``apple001S(3).JPG``.

``groupids`` reads leading runs of ``_``/``-`` separated tokens, which finds
``patient_0001`` of ``patient_0001_slice1.jpg`` but not a portion photographed
as ``apple001S(3).JPG`` (S: side view, (3): third shot), nor the video of a
Roboflow frame ``30_sequence30_12_jpg.rf.<hash>.jpg`` (the upload's name is one
source per frame, the video is ``30_sequence30``).  Here a name (the upload's
name, for a Roboflow export) is cut at every boundary between letters, digits
and punctuation.  An id is everything before the end of a number, when what
follows is a short suffix: at most one word and one number (``S(3)``, ``_12``,
``_slice1``, ``_left``).  Names whose suffixes have one shape (letters and
numbers generalised: ``S(3)`` and ``T(12)`` are both ``[A-Za-z]+\\([0-9]+\\)``)
make one candidate, written as the regex the policy would hold.

Two readings keep the candidates honest:

- the suffix is a shot, a frame or a view only when it *restarts* in each id:
  ``S(1)`` of ``apple001`` comes back in ``apple002``.  A running number after a
  word (``green_leafhopper_35_dataset_0339``) never comes back: the id before it
  is a batch of different pictures, not a subject;
- an id that is only a number, or only a camera's word and a counter
  (``IMG_0001``, ``DSC01234``, ``frame12``), names no subject (``nametokens``
  refuses dates, times and generic words; ``groupids`` applies it).  One
  exception: a number before a separator and a frame number that restarts
  under each id and runs in turn (GTSRB's ``00038_00011``: track 38, frame 11)
  is a track or a sequence (:attr:`NameIds.tracks`).  Such numbers recur under
  several class folders for different tracks, so there the id is read with its
  folder (:func:`qualified`: ``00001/00038``).

The regexes hold character classes, escaped literals and greedy quantifiers
only: RE2 (``policy/userregex.py``) reads them as Python's ``re`` does, so the
ids counted here are the ids the check makes.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from dataclasses import dataclass, replace

from ..files.exportnames import RF_ID
from . import nametokens

#: Letters, digits, or one other character: the pieces a name is cut into.
_PIECES = re.compile(r"[A-Za-z]+|[0-9]+|[^A-Za-z0-9]")
#: Words and numbers a suffix may have (``S(3)``: one word, one number).
MAX_SUFFIX_RUNS = 2
#: Longest suffix, in characters: a shot or a view is short, the rest of a long name is not.
MAX_SUFFIX_CHARS = 16
#: Share of a candidate's files whose suffix also follows another id (the suffix restarts per id).
RESTART = 0.5
#: Characters a suffix may hold besides letters and digits.  The regex goes into the policy inside
#: single quotes: a quote, a backslash or a line break from a file name must not end it (docs/security.md).
SAFE = frozenset(" _-.,()[]{}+=~!@$%&;")
#: Share of the files a suffix shape must cover to be tried at all (``groupids`` wants half at least).
MIN_SHARE = 0.5

#: A Roboflow export name after the upload's name (``_jpg.rf.<hash>.jpg``), in RE2 and ``re`` alike.
#: An upload converted before export keeps its own extension too (``11_PNG_jpg.rf.…``): up to two.
ROBOFLOW_TAIL = (r"(?i:_(?:jpe?g|jfif|png|bmp|gif|tiff?|webp|heic|heif|avif|dcm)){0,2}"
                 r"(?i:\.rf\." + RF_ID + r"\.[a-z0-9]{2,5})$")
#: Any other name: its extension.
PLAIN_TAIL = r"\.[A-Za-z0-9]{1,5}$"
_ROBOFLOW = re.compile(r"(?:^|[/#])([^/#]+?)" + ROBOFLOW_TAIL)
_PLAIN = re.compile(r"(?:^|[/#])([^/#]+)" + PLAIN_TAIL)


@dataclass(frozen=True)
class NameIds:
    """One suffix shape: the rule that reads the id before it, and what it reads."""

    regex: str
    #: A readable form of the suffix, for the user (``S(3)``-like: ``<letters>(<number>)``).
    suffix: str
    ids: dict[str, str]
    #: Why the suffix is no shot, frame or view (it does not restart per id), or "".
    refused: str = ""
    #: Whether each id's suffix numbers fill most of their range (:func:`dense`): shots, frames or
    #: slices of one subject, numbered in turn; not a class's sparse running numbers.
    dense: bool = False
    #: Whether a bare number may be an id here (:func:`tracks`): frames numbered in turn after it.
    tracks: bool = False


def stem(path: str) -> tuple[str, str] | None:
    """``(tail regex, name)``: the upload's name of a Roboflow export, else the base name without extension."""
    m = _ROBOFLOW.search(path)
    if m:
        return ROBOFLOW_TAIL, m.group(1)
    m = _PLAIN.search(path)
    return (PLAIN_TAIL, m.group(1)) if m else None


def _suffix_shapes(name: str) -> list[tuple[str, ...]]:
    """The shape of each short suffix that follows the end of a number in ``name``, longest id first."""
    if _hashed(name):  # a hash or UUID is no id with a suffix: its letters and digits are noise
        return []
    pieces = _PIECES.findall(name)
    shape = [_kind(p) for p in pieces]
    out = []
    for i in range(len(shape) - 2, -1, -1):
        if shape[i] != "D":
            continue
        rest = shape[i + 1:]
        runs = sum(1 for p in rest if p in ("L", "D"))
        if runs > MAX_SUFFIX_RUNS or sum(map(len, pieces[i + 1:])) > MAX_SUFFIX_CHARS:
            break  # a longer suffix only grows from here
        if runs and all(p in ("L", "D") or p in SAFE for p in rest):
            out.append(tuple(rest))
    return out


def _hashed(name: str) -> bool:
    """Whether ``name`` holds a hash or a UUID's part: 8 or more hex digits, letters and digits switching thrice."""
    for word in re.findall(r"[0-9A-Za-z]{8,}", name):
        if all(c in string.hexdigits for c in word) and len(re.findall(r"[0-9]+|[A-Fa-f]+", word)) > 3:
            return True
    return False


def _kind(piece: str) -> str:
    """``L`` for letters, ``D`` for digits (ASCII, as the regex reads them), else the character itself."""
    return "L" if piece[0] in string.ascii_letters else "D" if piece[0] in string.digits else piece


def _regex(tail: str, shape: tuple[str, ...], capture: bool = False) -> str:
    """The rule for ids before a suffix of ``shape``; with ``capture``, the suffix is group 2 (counted here only)."""
    parts = {"L": "[A-Za-z]+", "D": "[0-9]+"}
    suffix = "".join(parts.get(p, re.escape(p)) for p in shape)
    return rf"(?:^|[/#])(?P<group>[^/#]*[0-9]){'(' * capture}{suffix}{')' * capture}{tail}"


def _readable(shape: tuple[str, ...]) -> str:
    return "".join({"L": "<letters>", "D": "<number>"}.get(p, p) for p in shape)


def candidates(paths: list[str]) -> list[NameIds]:
    """Each suffix shape that follows an id in at least MIN_SHARE of the names, most names first."""
    shapes: Counter[tuple[str, tuple[str, ...]]] = Counter()
    for p in paths:
        found = stem(p)
        if found is not None:
            shapes.update({(found[0], s) for s in _suffix_shapes(found[1])})
    out = []
    for (tail, shape), n in shapes.most_common():
        if n < MIN_SHARE * len(paths):
            break
        search = re.compile(_regex(tail, shape, capture=True)).search
        ids, suffixes = {}, {}
        for p in paths:
            m = search(p)
            if m:
                ids[p], suffixes[p] = m.group("group"), m.group(2)
        refused, numbered = _restarts(ids, suffixes), dense(ids, suffixes)
        out.append(NameIds(_regex(tail, shape), _readable(shape), ids, refused, numbered,
                           tracks(tail, shape, numbered and not refused)))
    return out


#: Separators before a frame number that make a bare number a track: ``00038_00011``, ``12-004``.
TRACK_SEPARATORS = frozenset("_-")


def tracks(tail: str, shape: tuple[str, ...], numbered: bool) -> bool:
    """Whether bare numbers before a suffix of ``shape`` may be ids: a track or sequence number.

    Only when the frame numbers after them restart under each id and run in turn (``numbered``), after
    a separator alone.  ``001(2).jpg`` is the second file a browser or a file manager saved as
    ``001.jpg``: a counter whose numbers clashed, different pictures.  A Roboflow upload's bare
    number is never one: projects that merge numbered uploads reuse the numbers (``9_2_png.rf.…``).
    """
    return numbered and tail == PLAIN_TAIL and len(shape) == 2 and shape[0] in TRACK_SEPARATORS and shape[1] == "D"


def qualified(found: NameIds, labels: dict[str, str]) -> NameIds:
    """``found`` with each id read with its class folder, where one bare number is an id under several.

    GTSRB numbers tracks per class: track ``00038`` of class ``00001`` and of class ``00003`` are two
    signs, and one group of both would join them.  The folder that holds a file is its class (the
    label, which is the same folder name in every split), so ``00001/00038`` is one track in every
    split; ``found`` is kept when no number recurs, or the classes are not the folders holding the files.
    """
    if not found.tracks or not labels:
        return found
    under: dict[str, set[str]] = {}
    for p, g in found.ids.items():
        if g.isdigit() and p in labels:
            under.setdefault(g, set()).add(labels[p])
    held = sum(1 for p in found.ids if p in labels and _folder(p) == labels[p])
    if not any(len(s) > 1 for s in under.values()) or held < 0.9 * len(found.ids):
        return found
    regex = found.regex.replace("(?P<group>", "(?P<group>[^/#]+/", 1)
    ids = {p: f"{_folder(p)}/{g}" for p, g in found.ids.items()}
    return replace(found, regex=regex, ids=ids)


def _folder(path: str) -> str:
    """The folder holding ``path``, by name ("" at the root)."""
    parts = path.split("/")
    return parts[-2] if len(parts) > 1 else ""


#: Share of its numbers' range an id's suffixes must fill, for most ids, to be numbered in turn.
DENSE = 0.5


def dense(ids: dict[str, str], suffixes: dict[str, str]) -> bool:
    """Whether, for most ids of two files or more, the last number of their suffixes fills at least
    :data:`DENSE` of the range it spans.

    Frames of a recording (``_1`` to ``_200``), shots of a portion (``S(1)`` to ``S(9)``) or slices of
    a scan are numbered in turn, and a split at random keeps their union whole.  The running numbers
    of a class (ImageNet's ``n01440764_10026``: 1,300 of about 50,000) are sparse."""
    numbers: dict[str, set[int]] = {}
    for p, suffix in suffixes.items():
        found = re.findall(r"[0-9]+", suffix)
        if found:
            numbers.setdefault(ids[p], set()).add(int(found[-1][-9:]))
    filled = [len(v) / (max(v) - min(v) + 1) for v in numbers.values() if len(v) > 1]
    return bool(filled) and sum(f >= DENSE for f in filled) > len(filled) / 2


def _restarts(ids: dict[str, str], suffixes: dict[str, str]) -> str:
    """Why the suffixes are no shots of an id (they do not come back under other ids), or ""."""
    under: dict[str, set[str]] = {}
    for p, suffix in suffixes.items():
        under.setdefault(suffix.lower(), set()).add(ids[p])
    again = sum(1 for p, suffix in suffixes.items() if len(under[suffix.lower()]) > 1)
    if again < RESTART * len(suffixes):
        return (f"the part after the id is a running number, not a shot, frame or view "
                f"({again} of {len(suffixes)} files share it with another id)")
    return ""


def not_an_id(group: str, name: str, numbers: bool = False) -> str | None:
    """Why ``group`` (cut from file ``name``) names no subject, or None.

    Beside ``nametokens``' dates, times and generic words: a bare number (a
    counter: numbered uploads reuse numbers), unless ``numbers`` (a track with
    its frames numbered in turn: :func:`tracks`), and a camera's word with a counter.
    """
    group = group.rsplit("/", 1)[-1]  # an id read with its class folder (``qualified``) is judged by its number
    base = re.split(r"[/#]", name)[-1]
    if base.startswith(group):  # a separator where the id ends: `20230711(2)` is the day 20230711
        base = f"{group}_{base[len(group):]}"
    why = nametokens.not_an_id(group, base)
    words = re.findall(r"[A-Za-z]+", group)
    if why is None and not words:
        return None if numbers else "a bare number"
    if why is None and all(w.lower() in nametokens.GENERIC for w in words):
        return "a generic word and a number"
    return why
