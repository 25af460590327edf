"""What the tokens of a file name mean, so ``init`` never takes a date, a time or a camera's word for an id.

A name's leading tokens make a good group id when they name a subject
(``patient_0001`` of ``patient_0001_slice1.jpg``), and an invented one when
they name a moment or the device: ``Screenshot-2023-10-25`` groups every
screenshot of a day, ``IMG_20220723`` every phone photo of a day, ``frame001``
one frame of every video.  Each token is read in the context of the whole
name: a date is ``20220723`` or ``2023``-``10``-``25`` (a real calendar day), a
time is the clock that follows a date (``011845``, ``000708``, ``100148032``);
a generic word is one a camera, a phone or a tool writes (``IMG``, ``DSC``,
``Screenshot``, ``frame``), with or without a counter (``DSC01234``).  Words that
can name a subject's unit (``video12``, ``clip3``, ``burst4``, ``doc7``) are not
generic: they are ids.
"""

from __future__ import annotations

import re

#: Words cameras, phones, screen tools and frame extractors put in names: never a subject.
GENERIC = frozenset("""
img image images imgs pic pics picture photo photos foto dsc dscn dscf dsci pxl mvimg mov frame frames snapshot
snap screenshot screen shot capture cap scan scanned untitled copy edit edited whatsapp signal telegram camera cam
webcam pano portrait hdr raw thumb thumbnail output out export exported crop cropped resized file page gopr gp dji
mvi imag wp
""".split())

#: Words that introduce a counter: a prefix ending on one cuts the id before its number (``IM`` of
#: ``NORMAL2-IM-0384-0001``; ``IM-0384`` itself is a child's id in that chest X-ray set, so ``im`` is
#: not generic).
COUNTED = GENERIC | {"im"}

_DATE8 = re.compile(r"^(19[89]\d|20[0-4]\d)(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])$")
_TIME = re.compile(r"^([01]\d|2[0-3])([0-5]\d)([0-5]\d)(\d{0,3})$")
_YEAR = re.compile(r"^(19[89]\d|20[0-4]\d)$")
_MONTH = re.compile(r"^(0?[1-9]|1[0-2])$")
_DAY = re.compile(r"^(0?[1-9]|[12]\d|3[01])$")
_CLOCK = re.compile(r"^([01]?\d|2[0-3])$|^[0-5]\d$")
#: A date and its clock joined by ``T`` (ISO 8601 without separators): ``20220709T000708``.
_STAMP = re.compile(r"^(\d{8})t(\d{6,9})$")
SEPARATORS = re.compile(r"[_\-\s.]+")


def tokens(name: str) -> list[str]:
    """The tokens of a file's base name, its extension left off: ``IMG_20220723_1.jpg`` -> IMG, 20220723, 1."""
    base = re.split(r"[/#]", name)[-1]
    stem = base.rsplit(".", 1)[0] if "." in base else base
    return [t for t in SEPARATORS.split(stem) if t]


def kinds(parts: list[str]) -> list[str]:
    """Each token's kind: ``date``, ``time``, ``generic`` or ``id`` (anything else)."""
    out = ["id"] * len(parts)
    low = [p.lower() for p in parts]
    i = 0
    dated = False
    while i < len(low):
        t = low[i]
        stamp = _STAMP.match(t)
        if _DATE8.match(t) or (stamp and _DATE8.match(stamp.group(1))):
            out[i], dated = "date", True
        elif (_YEAR.match(t) and i + 2 < len(low) and _MONTH.match(low[i + 1]) and _DAY.match(low[i + 2])):
            out[i:i + 3], dated = ["date"] * 3, True
            i += 3
            continue
        elif dated and _TIME.match(t):
            out[i] = "time"
        elif dated and _CLOCK.match(t) and out[i - 1] in ("date", "time"):
            out[i] = "time"  # 01-18-45 after a date
        elif re.sub(r"\d+", "", t) in GENERIC:
            out[i] = "generic"
        i += 1
    return out


def not_an_id(group: str, name: str) -> str | None:
    """Why the leading tokens ``group`` of file ``name`` are no subject id, or None when they may be one.

    Refused: any date or time among them (a prefix cut at a moment groups by
    day or by hour), nothing but generic words, or a prefix ending on the word
    that introduces the name's counter.
    """
    parts, whole = tokens(group + ".x"), tokens(name)
    k = len(parts)
    mine = kinds(whole)[:k] if k else []
    if not mine:
        return None
    if "date" in mine:
        return "a date"
    if "time" in mine:
        return "a time"
    if all(m == "generic" for m in mine):
        return "a generic word"
    if parts[-1].lower() in COUNTED and k < len(whole):
        # ``NORMAL2-IM`` of ``NORMAL2-IM-0384-0001``: a camera's word introduces the counter that
        # follows it, so a prefix ending on it cuts every subject of a class into one group.
        return "cut at a generic word"
    return None


def folder_not_an_id(folder: str) -> str | None:
    """Why a folder name is no subject id (a day, a time, a camera word), or None."""
    mine = kinds(tokens(folder + ".x"))
    if "date" in mine or "time" in mine:
        return "a date"
    if mine and all(m == "generic" for m in mine):
        return "a generic word"
    return None


#: A day in six digits, as cameras and people write it: 21 Aug 2023 as ``210823`` (day first) or ``230821``.
_DMY6 = re.compile(r"^(0[1-9]|[12]\d|3[01])(0[1-9]|1[0-2])(\d\d)$")
_YMD6 = re.compile(r"^(\d\d)(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])$")
#: Share of the ids that must hold one six-digit day for it to be read as a day, not as part of an id.
SHARED_DAY = 0.5


def shared_day(ids: dict[str, str]) -> str:
    """Why ids read from names are no subject ids when most of them hold one six-digit number that is a
    calendar day (``Leprosy_210823``, ``Non_Leprosy_210823``): different ids share no subject, so the
    number they share is the day the photos were taken or uploaded, and each id is a class (or a word)
    and a day.  A held-out skin-photo export named ``<class>_<DDMMYY>_<shot>`` gave a group of 459 of
    its 1,598 files, three groups over 250, and group-split errors between different patients.  A
    lone six-digit number is left alone: most such ids are no dates."""
    distinct = set(ids.values())
    if len(distinct) < 2:
        return ""
    holding: dict[str, int] = {}
    for group in distinct:
        for run in set(re.findall(r"(?<!\d)\d{6}(?!\d)", group)):
            if _DMY6.match(run) or _YMD6.match(run):
                holding[run] = holding.get(run, 0) + 1
    day, count = max(holding.items(), key=lambda kv: (kv[1], kv[0]), default=("", 0))
    if count < 2 or count < SHARED_DAY * len(distinct):
        return ""
    return f"ids are dates, times or generic words ({count} of {len(distinct)} ids hold the day {day})"
