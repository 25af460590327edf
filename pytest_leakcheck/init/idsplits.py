"""How the ids a rule reads fall across the splits: whole splits, counters that restart, class folders.

Read by ``groupids`` to judge a candidate rule; nothing here knows a rule, only ids and splits.
"""

from __future__ import annotations

import re
from collections import Counter

from ..files.escape import yaml_comment

#: Deepest folder level tried (``groupids`` reads folders to this depth too).
MAX_FOLDERS = 3
#: Share of files an id must be found for (names and folders; ``groupids`` takes columns, and ids before
#: shots numbered in turn, at COVER_COLUMN there: a recording's frames beside files named otherwise).
COVER = 0.9
#: Share of ids in every split beyond which folders are classes or shards.  Not for ids before shots
#: numbered in turn: frames of few recordings split at random put every recording in every split, and
#: that is the leak (a microscopy time-lapse export: 9 of 13 recordings in train and val).
EVERY_SPLIT = 0.5
#: Share of its range, from 0 or 1, a split's numbered ids must fill to be that split's own counter; and
#: how many numbers the shorter counter must hold, so that a few small numbers are no counter by chance.
COUNTER_FILL = 0.9
COUNTER_MIN = 20
#: A split's counter that stops before this share of another's end restarted there: ids of subjects
#: split at random run to about the same end in every split.
COUNTER_END = 0.8


def every_split(ids: dict[str, str], splits: dict[str, str]) -> float:
    """The share of ids with files in every split (0 when there is one split)."""
    names = set(splits.values())
    seen: dict[str, set[str]] = {}
    for p, g in ids.items():
        seen.setdefault(g, set()).add(splits[p])
    return sum(s == names for s in seen.values()) / max(1, len(seen)) if len(names) > 1 else 0.0


def bare_splits(ids: dict[str, str], splits: dict[str, str]) -> str:
    """What to say when the ids name every file of some splits and no file of the others, or "".

    A challenge hands out its test files renamed: BreakHis' ``Train/SOB_B_A-14-22549AB-100-001.png`` names
    its slide, ``Test/SOB_18.png`` nothing (``breakhis`` of benchmarks/field.py).  No rule can put a file
    named so in a group, and the user is told why, and that only pixels can link such files to the slides:
    "found for 422 of 629 files" alone read as ids that are not there.
    """
    files = Counter(splits.values())
    named = Counter(splits[p] for p in ids)
    bare = sorted(s for s in files if not named[s])
    whole = sorted(s for s in files if named[s] >= COVER * files[s])
    if not bare or not whole or len(bare) + len(whole) < len(files):
        return ""
    example = min(p for p, s in splits.items() if s in bare)
    count = sum(files[s] for s in bare)
    return (f": every file of {' and '.join(whole)} and none of {' and '.join(bare)} ({count} files, e.g. "
            f"{yaml_comment(example)}), named without one: no rule can group them, so only their pixels can link "
            "them to files of other splits")


def restarts_per_split(ids: dict[str, str], splits: dict[str, str]) -> str:
    """Why numbered ids are each split's own counter (number 0 of test is not number 0 of train), or "".

    HC18's fetal ultrasound (``hc18`` of benchmarks/field.py) ships ``training_set/010_HC.png``,
    ``010_2HC.png`` (one fetus twice) and ``test_set/000_HC.png`` to ``334_HC.png``, numbered again
    from 000: the leading number read as a subject put all 335 test images in a group with other
    fetuses in train.  Such numbers fill their
    range from 0 or 1 in each split, and the shorter split's run stops early; subjects split at random
    are numbered once, and their numbers run to about the same end in every split.
    """
    forms = Counter(re.sub(r"[0-9]+", "#", g) for g in ids.values())
    form, held = forms.most_common(1)[0] if forms else ("", 0)
    if form.count("#") != 1 or held < COUNTER_FILL * len(ids):
        return ""
    numbers: dict[str, set[int]] = {}
    for p, g in ids.items():
        if re.sub(r"[0-9]+", "#", g) == form:
            numbers.setdefault(splits[p], set()).add(int(re.search(r"[0-9]+", g).group()[-9:]))
    runs = sorted((max(v), s) for s, v in numbers.items()
                  if min(v) <= 1 and len(v) >= max(COUNTER_MIN, COUNTER_FILL * (max(v) - min(v) + 1)))
    if len(runs) < 2 or runs[0][0] > COUNTER_END * runs[-1][0]:
        return ""
    (short_end, short), (long_end, long) = runs[0], runs[-1]
    return (f"the numbers restart in each split ({short} {min(numbers[short])}-{short_end}, {long} "
            f"{min(numbers[long])}-{long_end}): a number names other files in each split, a counter, not a subject")


def class_folder(ids: dict[str, str], splits: dict[str, str]) -> bool:
    """Whether the ids are one folder level in another form, a level in every split like a class folder.

    Numbered shots escape the every-split rule (frames of few recordings split at random are the leak),
    but Omniglot's ``Balinese/character01/0108_07.png`` is drawing 7 of character 0108, and 0108 is
    ``Balinese/character01`` and nothing else: the class, in every split by design.  The folders are
    read from the file upward (the split's own folders above them differ), one level to MAX_FOLDERS.
    """
    for level in range(1, MAX_FOLDERS + 1):
        folders = {p: "/".join(parts[-level - 1:-1]) for p in ids if len(parts := p.split("/")) > level + 1}
        if len(folders) < len(ids):
            return False
        pairs = {(ids[p], f) for p, f in folders.items()}
        if len(pairs) == len(set(ids.values())) == len(set(folders.values())):  # one folder per id, one id per folder
            return every_split(folders, splits) >= EVERY_SPLIT
    return False


def spanning(ids: dict[str, str], splits: dict[str, str]) -> int:
    """How many ids have files in more than one split."""
    seen: dict[str, set[str]] = {}
    for p, g in ids.items():
        seen.setdefault(g, set()).add(splits[p])
    return sum(1 for s in seen.values() if len(s) > 1)
