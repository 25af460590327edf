"""Video clips kept one folder each (``<split>/<clip>/00000.jpg``): the clip folder as the group.

Video datasets ship one folder per clip (DAVIS: ``JPEGImages/480p/blackswan/00000.jpg``), and a user who
splits the frames at random keeps the clip's folder name under each split: ``train/blackswan/00012.jpg``
and ``test/blackswan/00013.jpg`` are frames 1/24 s apart.  ``groupids`` reads folder ids with a digit
only, and rightly refuses names that are in every split (classes are); a clip split at random is in
every split too.  Names alone cannot tell a clip from a class: ImageFolder classes of numbered photos
(``train/healthy/1.jpg``) look the same.  So here the names only find the candidates:

- folders whose files are frames: just a counter (``00000``, ``frame_0012``) or a hash or UUID
  (``framenames.counter``, ``framenames.hashed``), for :data:`FRAME_SHARE` of the folder's files;
- a clip is a folder name, pooled over the splits, holding :data:`MIN_FRAMES` frames or more, and
  :data:`MIN_CLIPS` such names at least, none holding most of the frames (``images/`` of a YOLO
  layout is one name), together :data:`COVER` of the files;
- at least one name in two splits: there is a leak to keep out (clips split by clip need no rule);

and ``clippixels`` decides whether neighbouring frames of a folder look alike, as a clip's do and a
class folder's different photos do not.  Only then is the rule proposed, with the pixel evidence.
The rule reads the folder holding a frame-named file (:data:`RULE`), at any depth, so files named
otherwise keep no group from it.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..sources.base import split_word
from . import clippixels, framenames, groupids
from .clippixels import Folder

#: The folder holding a frame: a counter after at most a word (``framenames.counter``), a hash or a UUID
#: (``framenames.hashed``).  RE2 reads it as Python's ``re`` does (``tests/init/test_clip_folders.py``).
RULE = (r"(?:^|/)(?P<group>[^/#]+)/(?:[A-Za-z]{0,12}[_-]?[0-9]+|[0-9A-Fa-f]{8,64}|"
        r"[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12})\.[A-Za-z0-9]{1,5}$")
#: Share of a folder's files that must be frame names, of one kind (one word before the counter, or hashes).
FRAME_SHARE = 0.9
#: Frames a clip needs over its folders: fewer are shots, not a clip (and too few neighbours to judge).
MIN_FRAMES = 8
#: Clip names needed: one or two numbered folders are as often classes.
MIN_CLIPS = 3
#: Share of the files the clips must hold together, and of the clips' frames the largest may hold at most.
COVER = 0.9
MOST = 0.5
#: Clip names shown in a note.
SHOWN = 3


@dataclass(frozen=True)
class ClipFolders:
    """What the names say: the clips (by folder name) and the ids the rule reads, or why there are none."""

    clips: dict[str, tuple[Folder, ...]] | None
    why: str = ""
    #: Each file's group as :data:`RULE` reads it (what the check will make).
    ids: dict[str, str] = field(default_factory=dict)
    #: False when a clip's frames are named by hashes: no order, so no neighbours by name.
    ordered: bool = True
    #: Clip names in more than one split.
    spanning: int = 0


def find(splits: dict[str, str]) -> ClipFolders:
    """The clip folders of ``splits`` (path -> split) by their names alone, or why there are none."""
    folders = _frame_folders(splits)
    clips: dict[str, list[Folder]] = {}
    for folder in folders:
        name = folder.path.rsplit("/", 1)[-1]
        if not split_word(name):  # ``train/00012.jpg``: the split's own folder, not a clip
            clips.setdefault(name, []).append(folder)
    sizes = {name: sum(len(f.frames) for f in fs) for name, fs in clips.items()}
    kept = {name: tuple(fs) for name, fs in clips.items() if sizes[name] >= MIN_FRAMES}
    frames = sum(sizes[name] for name in kept)
    if len(kept) < MIN_CLIPS:
        return ClipFolders(None, f"clip folder names with {MIN_FRAMES} frames or more: {len(kept)} "
                                 f"({MIN_CLIPS} needed)")
    top = max(kept, key=lambda name: sizes[name])
    if sizes[top] > MOST * frames:
        return ClipFolders(None, f"one clip folder name ({top}) holds {sizes[top]} of {frames} frames")
    if frames < COVER * len(splits):
        return ClipFolders(None, f"clip folders hold {frames} of {len(splits)} files")
    spanning = sum(1 for fs in kept.values() if len({splits[p] for f in fs for p in f.frames}) > 1)
    if not spanning:
        return ClipFolders(None, "no clip folder name is in two splits")
    search = re.compile(RULE).search
    ids = {p: m.group("group") for p in splits if (m := search(p))}
    ordered = all(f.numbers for fs in kept.values() for f in fs)
    return ClipFolders(kept, "", ids, ordered, spanning)


def _frame_folders(splits: dict[str, str]) -> list[Folder]:
    """Folders whose files are frame names of one kind, for FRAME_SHARE of them."""
    by_folder: dict[str, list[str]] = {}
    for path in splits:
        if "#" not in path and "/" in path:  # members of shards and files at the root are no clip frames
            by_folder.setdefault(path.rsplit("/", 1)[0], []).append(path)
    out = []
    for folder, paths in sorted(by_folder.items()):
        stems = {p: p.rsplit("/", 1)[-1].rsplit(".", 1)[0] for p in paths}
        counted = {p: c for p, s in stems.items() if (c := framenames.counter(s)) is not None}
        words = Counter(word.lower() for word, _ in counted.values())
        word, n = words.most_common(1)[0] if words else ("", 0)
        if n >= FRAME_SHARE * len(paths):
            frames = sorted((c[1], p) for p, c in counted.items() if c[0].lower() == word)
            out.append(Folder(folder, tuple(p for _, p in frames), tuple(k for k, _ in frames)))
            continue
        hashed = sorted(p for p, s in stems.items() if framenames.hashed(s))
        if len(hashed) >= FRAME_SHARE * len(paths):
            out.append(Folder(folder, tuple(hashed), ()))
    return out


def propose(root: Path, splits: dict[str, str]) -> groupids.Proposal | None:
    """The clip-folder rule when names and pixels both say clips; a note when only the pixels refuse; else None."""
    found = find(splits)
    clips = found.clips
    if clips is None:
        return None
    verdict = clippixels.judge(root, clips, found.ordered)
    names = sorted(clips, key=lambda name: -sum(len(f.frames) for f in clips[name]))
    shown = ", ".join(names[:SHOWN])
    if not verdict.clips:
        return groupids.Proposal("", None, (), (
            f"clip folders: {len(names)} folder names hold numbered files, {found.spanning} of them in more than one "
            f"split ({shown}): not proposed as video clips, as {verdict.why}"))
    candidate = groupids.Candidate("clip folders (the folder holding numbered frames)", RULE, None, found.ids)
    proposal = groupids.proposal(candidate, splits)
    return replace(proposal, found=(*proposal.found, verdict.said))
