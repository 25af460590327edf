"""Group ids for ``leakcheck init``: found wherever they are, proposed only when they are real.

Candidates are an id column of the split table (``subject_id``, ``patient``,
…), any leading run of tokens of the file name (``patient_0001`` of
``patient_0001_slice1.jpg``, ``subject-01`` of ``subject-01_frame001.jpg``)
and any folder level (``P12`` of ``P12/visit3/img.png``).  One is proposed
when it covers the files and a meaningful share of its ids repeat, and never
when the ids are classes (equal to the label or class folder) or shards
(folders that every split has, like ``train/000``, ``test/000``): a class or
a shard is in every split by design, and taking it for a subject would fail
the first check for every class.  Each candidate's evidence, or the reason
it was passed over, goes to the user.

After id columns (proposed when any id repeats: one image per subject and
split is common, and the subject in two splits is the leak itself) and
before any token rule come the names an export tool gives (``source_name:
roboflow``: the photograph every augmented copy shares; ``source_name:
phone``: ``IMG_E2447`` is an edit of ``IMG_2447``).  A token rule never yields
a date, a time or a generic word as an id (``nametokens.py``): ``IMG_20220723``
is a day of phone photos, not a subject.  Ids with no separator before a
shot, frame or view suffix (``apple001`` of ``apple001S(3).JPG``, the video
``30_sequence30`` of a Roboflow frame) come from ``nameids.py``; such an id
replaces the rule found first when it puts more ids in two splits, and a
``source_name`` rule found first stays after it for the files it leaves
(``_prefer``).  A scene before its tiles' coordinates (``bccd00352`` of
``bccd00352_x0288_y0192.png``) comes from ``tiles.py``, before the leading
tokens: it is proposed when every scene is in every split (split by tile, that
is the leak), and no name id may end inside the coordinates.  A proposal says
how many files its groups hold, and warns when one group holds a large share.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from ..files import exportnames, personnames, sidenames
from ..files.escape import yaml_comment
from ..policy.grouprules import names_people
from . import framenames, idsplits, nameids, nametokens, tiles
from .idsplits import COVER, EVERY_SPLIT, MAX_FOLDERS

#: Column names that carry a subject, patient, video or session id.
ID_COLUMNS = re.compile(r"(subject|patient|case|video|session|participant|person|individual|scene|sequence|"
                        r"group|speaker|animal|specimen|sample_id|study|series|visit|clip|track|id$)", re.I)
#: Longest run of leading file-name tokens tried (the deepest folder level is ``idsplits.MAX_FOLDERS``).
MAX_TOKENS = 3
#: Share of files an id must be found for in a column, or before shots numbered in turn (names and folders:
#: ``idsplits.COVER``): a recording's frames beside files named otherwise, which stay ungrouped.
COVER_COLUMN = 0.5
#: Share of files that must share their id with another file.
REPEAT = 0.1
#: Share of the files in one group beyond which init warns: one group-split finding would hold them all.
LARGE_SHARE = 0.2
#: A group this many times the median group, and over OUTSIZED_FILES files, is warned about too.
OUTSIZED = 50
OUTSIZED_FILES = 100


@dataclass(frozen=True)
class Candidate:
    where: str  # "column subject_id", "file names (…)", "folder names (…)"
    regex: str | None  # the rule for names and folders; None for a column
    column: str | None
    ids: dict[str, str]
    #: Why the candidate is no id whatever its counts (its ids are dates, times, generic words).
    refused: str = ""
    #: The rule's YAML item when it is no regex (``source_name: roboflow``).
    rule: str = ""
    #: False when no file is named the way the rule reads (no Roboflow export name, no phone name).
    applies: bool = True
    #: An id before a shot, frame or view suffix (``nameids``): weighed against the rule chosen first.
    suffixed: bool = False
    #: The rule listed after the regex, for the files the regex leaves (``source_name: roboflow``).
    fallback: str = ""
    #: A suffixed id whose shots are numbered in turn (``nameids.dense``): frames of a recording.
    numbered: bool = False
    #: A scene before its tiles' coordinates (``tiles``): in every split when split by tile, the leak.
    tiled: bool = False
    #: A person's word and number leading the name (``files/personnames``): weighed as a column is.
    named: bool = False


@dataclass(frozen=True)
class Proposal:
    """What init writes and says about groups."""

    #: The top-level ``groups:`` block, or the lines that go with a group column.
    yaml: str
    #: A table column to map as ``group`` in the source's own ``columns:``.
    column: str | None
    found: tuple[str, ...]
    note: str
    #: What the user should look at before trusting the rule (one group holding a large share).
    warnings: tuple[str, ...] = ()


def name_regex(tokens: int) -> str:
    """The first ``tokens`` runs of the file name, separated by ``_`` or ``-``, when more follow."""
    more = "(?:[_-][^/#_-]+)" * (tokens - 1)
    return rf"(?:^|[/#])(?P<group>[^/#_-]+{more})[_-][^/#]*$"


def folder_regex(level: int) -> str:
    """The folder ``level`` steps above the file (1: the folder holding it)."""
    return rf"(?:^|/)(?P<group>[^/#]+)(?:/[^/]+){{{level}}}$"


def _by_regex(paths: list[str], pattern: str) -> dict[str, str]:
    search = re.compile(pattern).search
    out = {}
    for p in paths:
        m = search(p)
        if m and m.group("group"):
            out[p] = m.group("group")
    return out


def candidates(splits: dict[str, str], extra: dict[str, dict[str, str]],
               labels: dict[str, str] | None = None) -> list[Candidate]:
    """Every id init weighs, in the order it is tried; ``labels`` (class folders) qualify a track number
    that recurs under several classes (``nameids.qualified``)."""
    paths = list(splits)
    out = []
    columns = Counter(c for values in extra.values() for c in values)
    for column, _ in columns.most_common():  # a subject column first: a subject holds many photographs
        if ID_COLUMNS.search(column) and not re.search(r"label|class|categor|target|split|file|path", column, re.I):
            out.append(Candidate(f"column {column}", None, column,
                                 {p: v[column] for p, v in extra.items() if v.get(column)}))
    roboflow = _roboflow(paths)
    exported = not roboflow.refused.startswith("Roboflow export names for")
    out += [_video(paths), roboflow, _phone(paths)]
    tiled = tiles.candidates(paths)
    out += [_tiles(found) for found in tiled]
    sides = _laterality(paths)
    if _one_token(sides):  # the id a leading token reads too, keyed with the extension and a person's
        out.append(sides)
    for k in range(1, MAX_TOKENS + 1):
        ids = {p: g for p, g in _by_regex(paths, name_regex(k)).items() if any(c.isdigit() for c in g)}
        refused = _refused(ids, nametokens.not_an_id) or nametokens.shared_day(ids) or tiles.cut(ids, tiled)
        if exported:  # the tokens are the upload's name, already read as a Roboflow source above
            ids, refused = {}, ""
        out.append(Candidate(f"file names ({k} leading token{'s' * (k > 1)})", name_regex(k), None, ids, refused))
    for found in nameids.candidates(paths):  # read in the upload's name of an export too: a video holds many
        found = nameids.qualified(found, labels or {})
        refused = (found.refused or _refused(found.ids, partial(nameids.not_an_id, numbers=found.tracks))
                   or nametokens.shared_day(found.ids) or tiles.cut(found.ids, tiled))
        out.append(Candidate(f"file names (the id before {found.suffix})", found.regex, None, found.ids, refused,
                             suffixed=True, numbered=found.dense))
    for level in range(1, MAX_FOLDERS + 1):
        ids = {p: g for p, g in _by_regex(paths, folder_regex(level)).items() if any(c.isdigit() for c in g)}
        refused = _refused(ids, lambda g, _: nametokens.folder_not_an_id(g))
        out.append(Candidate(f"folder names ({level} up)", folder_regex(level), None, ids, refused))
    named = personnames.ids(paths)  # last: any rule found above stays as it was
    out.append(Candidate("file names (a person's word and number: person<n>, patient<n>, subject<n>)",
                         None, None, named, rule="source_name: person", applies=bool(named), named=True))
    if not _one_token(sides):  # ``p12_scan3_left``: a leading token may read the coarser subject first
        out.append(sides)
    return out


def _one_token(c: Candidate) -> bool:
    """Whether every id ``c`` reads is one token, no ``_``, ``-``, ``.`` or space (``951`` of ``951_left.jpg``)."""
    return bool(c.ids) and not any(re.search(r"[ ._-]", g.rsplit(".", 1)[0]) for g in c.ids.values())


def _tiles(found: tiles.Tiles) -> Candidate:
    """The scene before tile coordinates; a bare number is a scene only when letters mark the coordinates
    (``00352_x0288_y0192``: one picture cut up), never before two bare numbers (a counter and more)."""
    refused = found.refused or _refused(found.ids, partial(nameids.not_an_id, numbers=found.form.marked))
    return Candidate(f"tile names (the scene before {found.form.readable})", found.regex, None, found.ids,
                     refused, tiled=True)


def _refused(ids: dict[str, str], why: Callable[[str, str], str | None]) -> str:
    """Said as the reason when an id that is a date, a time or a generic word would group several files.

    One such id on one file is a group of one, harmless; on two it invents a group.
    """
    counts = Counter(ids.values())
    first = {group: path for path, group in reversed(ids.items())}  # one name per id: the tokens around it agree
    for group, path in first.items():
        if counts[group] < 2:
            continue
        reason = why(group, path)
        if reason is not None:
            return f"ids are dates, times or generic words ({group} is {reason})"
    return ""


def _video(paths: list[str]) -> Candidate:
    """Frames named after their video: the video, before the frame's own Roboflow source (a video
    holds many sources, one a frame, and frames a second apart are near copies)."""
    found = {p: v for p in paths if (v := exportnames.video_source(p)) is not None}
    refused = f"video frame names for {len(found)} of {len(paths)} files" if len(found) < COVER * len(paths) else ""
    top = Counter(found.values()).most_common(1)
    if not refused and top and top[0][1] > 0.5 * len(found):
        # A dataset cut mostly from one recording: that group would be most of every split, and
        # the pixel detectors judge its frames; the user may still add the rule by hand.
        refused = f"one video ({top[0][0]}) holds {top[0][1]} of {len(found)} frames"
    return Candidate("video frame names (<video>-mp4-…)", None, None, found, refused, "source_name: video",
                     bool(found))


def _phone(paths: list[str]) -> Candidate:
    """Phone photos as copied off an iPhone: an edit (``IMG_E2447``) is the photograph ``IMG_2447``."""
    found = {p: f for p in paths if (f := exportnames.phone_photo(p)) is not None}
    edited = {g for g, edit in found.values() if edit} & {g for g, edit in found.values() if not edit}
    refused = ""
    if len(found) < COVER * len(paths):
        refused = f"phone names (IMG_####) for {len(found)} of {len(paths)} files"
    elif not edited:
        refused = "no phone edit (IMG_E####) beside its photo"
    return Candidate("phone photo names (IMG_E#### is an edit of IMG_####)", None, None,
                     {p: g for p, (g, _) in found.items()}, refused, "source_name: phone", bool(found))


def _roboflow(paths: list[str]) -> Candidate:
    """Roboflow export names: the source photograph (edits folded), numbers left out."""
    named = [p for p in paths if exportnames.roboflow_name(p)]
    ids = {p: g for p in named if (g := exportnames.roboflow_source(p)) is not None}
    refused = ""
    if len(named) < COVER * len(paths):
        refused = f"Roboflow export names for {len(named)} of {len(paths)} files"
    elif len(ids) < COVER_COLUMN * len(paths):
        refused = (f"Roboflow sources are bare numbers for {len(named) - len(ids)} of {len(named)} files "
                   "(numbered uploads reuse numbers for different pictures)")
    return Candidate("Roboflow source names", None, None, ids, refused, "source_name: roboflow", bool(named))


def _laterality(paths: list[str]) -> Candidate:
    """The person before a side suffix (``951_left.jpg``, ``12_R.png``, ``p7_OD.jpg``), keyed with the
    extension: two sources merged number their patients alike (``files/sidenames.py``).

    A bare number is an id here, as it is nowhere else in init: the side after it says a person's
    picture, and pictures of both sides under one number say the number is that person.  So half the
    files must be named so, and a tenth of them must be one id's two sides.
    """
    found = {p: s for p in paths if (s := sidenames.side_of(p)) is not None}
    ids = {p: f"{i}{ext}" for p, (i, _, ext) in found.items()}
    sides: dict[str, set[str]] = {}
    for p, (_, side, _) in found.items():
        sides.setdefault(ids[p], set()).add(side)
    both = sum(1 for p in ids if len(sides[ids[p]]) > 1)
    refused = (_refused({p: i for p, (i, _, _) in found.items()}, partial(nameids.not_an_id, numbers=True))
               or nametokens.shared_day(ids))
    if len(found) < COVER_COLUMN * len(paths):
        refused = f"side names (<id>_left, _R, _OD) for {len(found)} of {len(paths)} files"
    elif both < REPEAT * len(found):
        refused = f"{both} of {len(found)} side names share their id with the other side"
    return Candidate("file names (the person before _left, _right, _L, _R, _OD or _OS, with the extension)",
                     None, None, ids, refused, "source_name: laterality", bool(found))


def _classes(splits: dict[str, str], labels: dict[str, str]) -> dict[str, str]:
    """Labels that behave as classes: most values present in every split (an ImageFolder class folder)."""
    if not labels:
        return {}
    return labels if idsplits.every_split(labels, splits) >= EVERY_SPLIT else {}



def judge(c: Candidate, splits: dict[str, str], classes: dict[str, str]) -> str | None:
    """Why ``c`` is not a group id, or None when it is one."""
    n = len(splits)
    counts = Counter(c.ids.values())
    if c.refused:
        return c.refused
    if len(c.ids) < (COVER_COLUMN if c.column or c.numbered or c.named else COVER) * n and not c.rule:
        if not c.ids:
            return "no id with a digit"
        return f"found for {len(c.ids)} of {n} files" + idsplits.bare_splits(c.ids, splits)
    if len(counts) < 2:
        return "one id for every file"
    if c.rule:  # an export's source name is the photograph by construction: it need not repeat
        return None
    if c.column is None and not c.tiled and (restarted := idsplits.restarts_per_split(c.ids, splits)):
        return restarted
    repeated = sum(k for k in counts.values() if k > 1)
    if c.column is not None and repeated == 0:
        return f"{len(counts)} ids over {len(c.ids)} files, none repeats"
    if c.column is None and (repeated < REPEAT * len(c.ids) or sum(1 for k in counts.values() if k > 1) < 2):
        return f"{len(counts)} ids over {len(c.ids)} files, too few repeat"
    if counts.most_common(1)[0][1] > 0.5 * len(c.ids):
        return f"one id{'' if _people(c) else f' ({counts.most_common(1)[0][0]})'} holds most files"
    both = [p for p in c.ids if p in classes]
    if both and (sum(c.ids[p] == classes[p] for p in both) >= 0.9 * len(both)
                 or len({(c.ids[p], classes[p]) for p in both}) == len(counts) == len(set(classes.values()))):
        return "the ids are the classes (the label, or the folder below the split: class or shard folders)"
    if c.column is None and not (c.numbered or c.tiled) and idsplits.every_split(c.ids, splits) >= EVERY_SPLIT:
        return "most ids are in every split, as classes and shard folders are (never subjects)"
    if c.numbered and idsplits.class_folder(c.ids, splits):
        return ("each id is the folder holding its files, named otherwise, and those folders are in every "
                "split, as class folders are (never subjects)")
    return None



def _people(c: Candidate) -> bool:
    """Whether ``c`` is a table column of people's names or ids: init then gives counts, never a value
    (the check shows them as pseudonyms, ``policy/grouprules.py``)."""
    return c.column is not None and names_people(c.column) or c.rule in ("source_name: laterality",
                                                                         "source_name: person")



def propose(splits: dict[str, str], labels: dict[str, str], extra: dict[str, dict[str, str]]) -> Proposal:
    """The group rule (or column) to write, with its evidence; or a note saying why there is none."""
    classes = _classes(splits, labels)
    passed: list[str] = []
    found = candidates(splits, extra, labels)
    for c in found:
        if not c.applies:  # no file is named so: nothing to say
            continue
        why = judge(c, splits, classes)
        if why is not None:
            if (c.ids or c.rule) and why != "no id with a digit":
                passed.append(f"{c.where}: {why}")
            continue
        chosen = _rest(c, splits, labels) if c.named else _prefer(c, found, splits, classes)
        return proposal(chosen, splits, tuple(dict.fromkeys(passed)))
    detail = "; ".join(dict.fromkeys(passed[:4]))
    frames = framenames.note(splits)
    # Ids that name whole splits and no file of the others are there, and repeat: "no repeated id" was untrue.
    some_bare = any(c.applies and c.ids and idsplits.bare_splits(c.ids, splits) for c in found)
    head = ("no rule proposed: the ids found name no file of some splits" if some_bare
            else "no repeated id found in id columns, file names or folder names")
    return Proposal("", None, (), f"groups: {head}"
                    + (f" ({detail})" if detail else "")
                    + (f"; {frames}" if frames else
                       "; if several images show one subject, video or patient, add a rule (docs/policy-groups.md)"))



def _prefer(chosen: Candidate, found: list[Candidate], splits: dict[str, str], classes: dict[str, str]) -> Candidate:
    """The id that explains the repetition across splits best: ``chosen``, or an id before a shot suffix
    that puts more ids in two splits.

    A Roboflow source names one upload, and frames cut from a video are uploads of their own: the
    video (``30_sequence30`` of ``30_sequence30_12_jpg.rf.…``) is what crosses splits.  Such an id must
    stand on its own over the files it reads (repeat, not be classes), read at least half the files,
    and then comes first, with ``chosen``'s rule kept for the files it leaves (augmented copies of the
    other uploads still share their source).  A column the user's table names is never second-guessed.
    """
    if chosen.column is not None:
        return chosen
    best, most = chosen, idsplits.spanning(chosen.ids, splits)
    for c in found:
        if not c.suffixed or c is chosen or c.refused or len(c.ids) < COVER_COLUMN * len(splits):
            continue
        if judge(c, {p: splits[p] for p in c.ids}, classes) is not None:
            continue
        if chosen.rule:  # the regex first: a file it reads is in its id's group, the rule groups the rest
            rest = {p: g for p, g in chosen.ids.items() if p not in c.ids}
            c = replace(c, where=f"{c.where}, then {chosen.where}", ids={**c.ids, **rest}, fallback=chosen.rule)
        if judge(c, splits, classes) is None and idsplits.spanning(c.ids, splits) > most:
            best, most = c, idsplits.spanning(c.ids, splits)
    return best


def _rest(chosen: Candidate, splits: dict[str, str], labels: dict[str, str]) -> Candidate:
    """``chosen`` (a person's word in the names) with a rule for the files it leaves, found among them alone.

    A set named two ways (``person1004_bacteria_2935`` beside the normal X-rays' ``IM-0115-0001``) has
    no rule for all of it; weighed on the other files alone, their own id is found (``IM-0115``) and
    listed after the person rule, which reads none of them."""
    rest = {p: s for p, s in splits.items() if p not in chosen.ids}
    if not rest:
        return chosen
    classes = _classes(rest, {p: v for p, v in labels.items() if p in rest})
    for c in candidates(rest, {}, labels):
        if c.named or not c.applies or not (c.regex or c.rule) or judge(c, rest, classes) is not None:
            continue
        return replace(chosen, where=f"{chosen.where}, then {c.where} for the other {len(rest)} files",
                       ids={**chosen.ids, **c.ids}, fallback=c.rule or f"regex: '{c.regex}'")
    # Files with no id at all are each a group of their own, as under any rule (a warning for each of a
    # quarter of the set would bury the findings); init says how many.
    return replace(chosen, where=f"{chosen.where}; the other {len(rest)} files have no such id, each its own group")


#: Candidates passed over before the proposed one that init names, first first.
PASSED_SHOWN = 3


def proposal(c: Candidate, splits: dict[str, str], passed: tuple[str, ...] = ()) -> Proposal:
    """What init writes for ``c``, and says: its evidence, then the candidates ``passed`` over before it
    (a finer id taken because a coarser one was refused is worth a look)."""
    per_id: dict[str, set[str]] = {}
    for p, g in c.ids.items():
        per_id.setdefault(g, set()).add(splits[p])
    counts = Counter(c.ids.values())
    spanning = sorted(g for g, s in per_id.items() if len(s) > 1)
    many = len(spanning) != 1
    people = _people(c)
    evidence = (f"{len(spanning)} id{'s' * many} appear{'s' * (not many)} in more than one split "
                f"({' and '.join(sorted({s for g in spanning for s in per_id[g]}))})"
                + ("" if people else f", e.g. {spanning[0]}")
                if spanning else "no id appears in two splits yet")
    repeat = sum(1 for k in counts.values() if k > 1)
    line = (f"group ids in {c.where}: {len(counts)} ids over {len(c.ids)} files, {repeat} with several files"
            + ("" if people else f", e.g. {', '.join(list(counts)[:3])}") + f"; {evidence}")
    ungrouped = "own-group" if len(c.ids) == len(splits) or c.rule or c.named else "warning"
    head = ("\n# Files that share an id (subject, video, session) must stay in one split;\n"
            f"# proposed by `leakcheck init` from {c.where} ({yaml_comment(evidence)}).\n")
    shown = tuple(f"passed over {why}" for why in passed[:PASSED_SHOWN])
    if people:  # a refused id quoted from a name (``951 is a bare number``) would name a proposed person
        shown = tuple(re.sub(r"\([^()]* is ", "(an id is ", line) for line in shown)
    found, warnings = (line, sizes(counts, people), *shown), large(counts, len(splits), people)
    if c.column is not None:
        return Proposal(head + f"ungrouped: {ungrouped}\ngroup_split: error\n", c.column, found, "", warnings)
    item = c.rule or f"regex: '{c.regex}'"
    item += f"\n  - {c.fallback}" if c.fallback else ""
    yaml = head + f"groups:\n  - {item}\nungrouped: {ungrouped}\ngroup_split: error\n"
    return Proposal(yaml, None, found, "", warnings)


def sizes(counts: Counter[str], people: bool = False) -> str:
    """How many files the proposed groups hold: how many groups of each size, and the largest ones
    (their sizes alone when the ids are ``people``'s)."""
    bins = Counter("1" if k == 1 else "2-5" if k <= 5 else "6-20" if k <= 20 else "21-100" if k <= 100 else ">100"
                   for k in counts.values())
    shape = ", ".join(f"{bins[b]} of {b} file{'s' * (b != '1')}" for b in ("1", "2-5", "6-20", "21-100", ">100")
                      if bins[b])
    top = ", ".join(f"{k}" if people else f"{g} {k}" for g, k in counts.most_common(3))
    return f"files per group: {shape}; largest: {top}"


def large(counts: Counter[str], total: int, people: bool = False) -> tuple[str, ...]:
    """A warning per group holding more than LARGE_SHARE of the files, or OUTSIZED times the median
    group and over OUTSIZED_FILES files (at most three).

    One token count for every name (``IM-0429-0001`` -> ``IM-0429``) made ``NORMAL2-IM`` a group of
    917 chest X-rays of 861 children, 16 % of the set, beside a median group of 2 (probe 3); ``split``
    would then have moved every such file out of test.
    """
    out = []
    middle = statistics.median(counts.values()) if counts else 0
    for group, k in counts.most_common(3):
        named = "a group" if people else f"group {group}"  # a person's name stays out of init's words
        if total and k > LARGE_SHARE * total:
            out.append(f"{named} would hold {k} of {total} files ({k / total:.0%}): if it is not one "
                       "subject, video or session, the rule groups too much; fix it before the first check")
        elif k > OUTSIZED_FILES and k > OUTSIZED * middle:
            out.append(f"{named} would hold {k} files, {k / middle:.0f} times the median group ({middle:g}): "
                       "if it is not one subject, video or session, the rule groups too much; fix it before "
                       "the first check")
    return tuple(out)
