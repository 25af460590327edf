"""Frames of clips named after a clip with no digit (``blackswan_00012.jpg``): said, never proposed.

DAVIS names its frames ``<clip>/<frame>.jpg``, and a user who pools the clips
and splits at random by file writes ``blackswan_00012.jpg``.  The id rules of
``groupids`` and ``nameids`` read only ids with a digit, and rightly: a prefix
of letters before a number is how classes are named too (``Abyssinian_12.jpg``),
and every class is in every split, so proposing it would fail every class.
Names alone cannot tell the two apart; the pixels can (the check's shared-scene
notes), but ``init`` reads no pixels.  So when most names are a prefix of letters
and a number that runs in turn under each prefix (frames, numbered from the
start of their clip, zero-padded as extractors write them), ``init`` says what it saw and which rule groups them, and
leaves the choice to the user (the DAVIS probe: 1,376 frames of 20 clips, every
clip in both splits, and nothing was said).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

from . import nameids

#: ``<clip>[_-]<number>``: a clip of letters, hyphens and underscores, then the frame number.
_NAME = re.compile(r"^(?P<clip>[A-Za-z][A-Za-z_-]*?)[_-]?(?P<frame>[0-9]+)$")
#: The rule the note gives: the name before its last number and the separator before it.
RULE = r"(?:^|/)(?P<group>[^/]*[^/0-9_-])[_-]?[0-9]+\.[A-Za-z0-9]+$"
#: Share of the files named so, and fewest clips, for the note to speak.
COVER, MIN_CLIPS = 0.9, 2
#: Clips named in the note.
SHOWN = 3


def note(splits: dict[str, str]) -> str:
    """What init says of names that look like frames of digit-free clips, or ""."""
    clips: dict[str, str] = {}
    frames: dict[str, str] = {}
    for path in splits:
        found = nameids.stem(path)
        m = _NAME.match(found[1]) if found else None
        if m:
            clips[path], frames[path] = m.group("clip").lower(), m.group("frame")
    counts = Counter(clips.values())
    if len(clips) < COVER * len(splits) or len(counts) < MIN_CLIPS or not _numbered(clips, frames):
        return ""
    seen: dict[str, set[str]] = {}
    for path, clip in clips.items():
        seen.setdefault(clip, set()).add(splits[path])
    crossing = sum(1 for s in seen.values() if len(s) > 1)
    shown = ", ".join(c for c, _ in counts.most_common(SHOWN))
    return (f"file names are <letters>_<number> for {len(clips)} of {len(splits)} files, numbered in turn under "
            f"{len(counts)} prefixes ({shown}; {crossing} in more than one split): frames of clips, or classes "
            f"named so? A prefix without a digit is not proposed, as classes are named alike; if each prefix is "
            f"a clip, `groups: [{{regex: '{RULE}'}}]` keeps it in one split")


def _numbered(clips: dict[str, str], frames: dict[str, str]) -> bool:
    """Whether the numbers under most prefixes run in turn from near the start: frames of a clip, each
    clip's numbering its own (``nameids.dense``), not one counter run on over every prefix."""
    if not nameids.dense(clips, frames) or not _padded(frames.values()):
        return False
    starts = [min(int(frames[p][-9:]) for p in paths) for paths in _by_clip(clips).values()]
    return sum(s <= 1 for s in starts) > len(starts) / 2


def _padded(numbers: Iterable[str]) -> bool:
    """Whether most numbers are zero-padded to one width, as a frame extractor writes them (``%05d``):
    classes named by hand are counted without padding (``Abyssinian_12``)."""
    numbers = list(numbers)
    widths = Counter(len(n) for n in numbers)
    width, n = widths.most_common(1)[0] if widths else (0, 0)
    return width >= 3 and n > COVER * len(numbers) and any(x.startswith("0") for x in numbers)


def _by_clip(clips: dict[str, str]) -> dict[str, Sequence[str]]:
    out: dict[str, list[str]] = {}
    for path, clip in clips.items():
        out.setdefault(clip, []).append(path)
    return out


#: A frame's own name: a counter, after at most a word and a separator (``00012``, ``frame_0012``, ``img-7``).
_COUNTER = re.compile(r"^(?P<word>[A-Za-z]{0,12}[_-]?)(?P<n>[0-9]+)$")
#: A hash or a UUID as a whole name (``3f9a2c1b7d4e``, ``0b3e1f0c-9a4d-4e2b-8f1a-2c3d4e5f6a7b``).
_HASH = re.compile(r"^(?:[0-9a-f]{8,64}|[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12})$", re.I)


def counter(stem: str) -> tuple[str, int] | None:
    """``(word, number)`` when the name without its extension is just a counter, else None: the names
    a frame extractor writes inside a clip's folder (the clip is the folder, never in the name)."""
    m = _COUNTER.match(stem)
    return (m.group("word"), int(m.group("n")[-9:])) if m else None


def hashed(stem: str) -> bool:
    """Whether the name without its extension is a hash or a UUID, as some tools name frames: hex
    digits, letters and digits both (``00012345`` is a counter, ``deadbeef`` a word)."""
    return bool(_HASH.match(stem)) and any(c.isdigit() for c in stem) and any(c.isalpha() for c in stem)
