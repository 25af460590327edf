"""Whether folders of numbered files are video clips: neighbouring frames look alike, other folders do not.

``clipfolders`` finds folders whose files are numbered frames, in more than one split.  ImageFolder
classes of numbered photos have the same shape, and a class is in every split by design: proposing
it as a group would fail every class.  What tells them apart is cheap to read: frames 1/24 s apart
look alike, different photos do not.  So a sample is read (at most :data:`MAX_CLIPS` clips,
:data:`PAIRS` pairs each: 64 small decodes whatever the set's size), each frame as the 16 px grey
thumbnail the ``thumbnail`` detector compares (zero mean, unit norm: blind to brightness), and

- a clip's neighbouring frames (the nearest numbers in one folder) must have a cosine of
  :data:`NEAR` or more for half its pairs, in :data:`ALIKE` of the clips sampled;
- frames of different clips must not look alike (median below :data:`CROSS`): one fixed camera's
  class folders have alike neighbours too, and nothing in the pixels then says clip.

Frames named by hashes have no order: each sampled frame is judged by the most alike of the
clip's other sampled frames.  The figures: ``benchmarks/clip_folders.py`` (DAVIS 2016, 8 clips
split at random: every clip alike, frames of different clips -0.07; the nail field set renumbered
in class folders: none alike).
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Cosine of 16 px thumbnails above which two frames look alike: DAVIS 2016's neighbouring frames,
#: 93 % of 780 pairs; the nail photos renumbered in class folders, 3 % of 394 (benchmarks/clip_folders.py).
NEAR = 0.8
#: Median cosine of frames of different clips beyond which the folders all look alike (one fixed camera).
CROSS = 0.5
#: Share of the clips sampled whose neighbours must look alike.
ALIKE = 0.75
#: Clips read, and neighbouring pairs (or, for hashed names, twice as many frames) per clip.
MAX_CLIPS = 8
PAIRS = 4
SIDE = 16
#: Decompression bound of a sampled frame (the policy's default ``files.max_pixels``: no policy yet).
MAX_PIXELS = 178_956_970


@dataclass(frozen=True)
class Folder:
    """One folder of frames (``clipfolders``): its frames in frame order (name order for hashes), their numbers."""

    path: str
    frames: tuple[str, ...]
    #: Empty for frames named by hashes: they have no order.
    numbers: tuple[int, ...]


@dataclass(frozen=True)
class Verdict:
    """What the pixels say: clips or not, how many sampled clips look like clips, and in words."""

    clips: bool
    alike: int
    sampled: int
    #: Why they are not clips (when ``clips`` is False).
    why: str = ""
    #: The evidence line ``init`` prints with the rule (when ``clips`` is True).
    said: str = ""


def thumbnail(path: Path) -> Any:
    """The frame's zero-mean, unit-norm SIDE x SIDE grey thumbnail (1, SIDE²), or None when unreadable."""
    import numpy as np
    from PIL import Image

    from ..search.kernels import normalised_thumbs
    from ..signals.decode import decode

    try:
        grey = decode(path.read_bytes(), MAX_PIXELS).grey
    except Exception:  # noqa: BLE001 - an unreadable frame is left out; the check reports it
        return None
    return normalised_thumbs(np.asarray(grey.resize((SIDE, SIDE), Image.Resampling.BOX), np.uint8).reshape(1, -1))


def judge(root: Path, clips: dict[str, tuple[Folder, ...]], ordered: bool = True) -> Verdict:
    """Read a sample of ``clips`` (name -> its folders; ``ordered`` when every one is numbered) and say
    whether they are video clips."""
    scores: dict[str, list[float]] = {}
    firsts = []
    for name in _spread(sorted(clips), MAX_CLIPS):
        scores[name], first = _clip_scores(root, clips[name], ordered)
        firsts += [first] if first is not None else []
    judged = {n: s for n, s in scores.items() if s}
    alike = sum(statistics.median(s) >= NEAR for s in judged.values())
    median = statistics.median([x for s in judged.values() for x in s]) if judged else 0.0
    cross = [float((a * b).sum()) for i, a in enumerate(firsts) for b in firsts[i + 1:]]
    across = statistics.median(cross) if cross else 0.0
    if not judged or alike < ALIKE * len(judged):
        return Verdict(False, alike, len(judged), (
            f"neighbouring files look alike in {alike} of {len(judged)} folder names sampled (median thumbnail "
            f"cosine {median:.2f}; {NEAR} or more wanted): different photos, as class folders hold"))
    if across >= CROSS:
        return Verdict(False, alike, len(judged), (
            f"frames of different folders look as alike as neighbours (median thumbnail cosine {across:.2f}): "
            "one camera's view in every folder, which the pixels cannot split into clips"))
    return Verdict(True, alike, len(judged), said=(
        f"clip folders: neighbouring frames look alike in {alike} of {len(judged)} clips sampled (median 16 px "
        f"thumbnail cosine {median:.2f}; frames of different clips {across:.2f}): frames of one video each"))


def _spread(items: list[str], k: int) -> list[str]:
    """``k`` of ``items`` spread evenly over them (all when fewer)."""
    if len(items) <= k:
        return items
    return [items[i * len(items) // k] for i in range(k)]


def _neighbours(folders: tuple[Folder, ...]) -> list[tuple[str, str]]:
    """PAIRS pairs of neighbouring frames of one clip: consecutive in a folder, the nearest numbers first."""
    pairs = [(f.numbers[i + 1] - f.numbers[i], f.frames[i], f.frames[i + 1])
             for f in folders for i in range(len(f.frames) - 1)]
    pairs.sort(key=lambda p: p[0])
    nearest = pairs[:max(PAIRS, len(pairs) // 2)]  # the closer half, spread over the clip
    return [(a, b) for _, a, b in (nearest[i * len(nearest) // PAIRS] for i in range(min(PAIRS, len(nearest))))]


def _clip_scores(root: Path, folders: tuple[Folder, ...], ordered: bool) -> tuple[list[float], Any]:
    """The cosines that judge one clip, and one of its thumbnails (to compare clips with each other)."""
    thumbs: dict[str, Any] = {}

    def read(path: str) -> Any:
        if path not in thumbs:
            thumbs[path] = thumbnail(root / path)
        return thumbs[path]

    scores = _pair_scores(_neighbours(folders), read) if ordered else _nearest_scores(folders, read)
    return scores, next((t for t in thumbs.values() if t is not None), None)


def _pair_scores(pairs: list[tuple[str, str]], read: Callable[[str], Any]) -> list[float]:
    out = []
    for a, b in pairs:
        ta, tb = read(a), read(b)
        if ta is not None and tb is not None:
            out.append(float((ta * tb).sum()))
    return out


def _nearest_scores(folders: tuple[Folder, ...], read: Callable[[str], Any]) -> list[float]:
    """For frames with no order: each sampled frame's cosine with the most alike other sampled frame."""
    frames = sorted(p for f in folders for p in f.frames)
    sample = random.Random(len(frames)).sample(frames, min(2 * PAIRS, len(frames)))
    thumbs = [t for t in (read(p) for p in sample) if t is not None]
    return [max(float((a * b).sum()) for j, b in enumerate(thumbs) if j != i)
            for i, a in enumerate(thumbs)] if len(thumbs) > 1 else []
