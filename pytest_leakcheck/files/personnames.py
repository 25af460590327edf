"""Subject ids a file name spells out: ``person1004_bacteria`` of ``person1004_bacteria_2935.jpeg``.

``groupids``' token rules need an id in nine files of ten, and ``nameids`` an id before a shot number
that restarts under every id.  Kaggle's pneumonia chest X-rays meet neither: ``person1004_bacteria_2935``
ends on the set's running image counter (2935 comes back under no other person), and the normal
X-rays of the same set are named otherwise (``IM-0115-0001``), so the person names alone leave a
quarter of the files (``xray-pneu`` of benchmarks/field.py: a user's re-split by file put hundreds of
person numbers in two splits, and `init` proposed no group).

A name that begins with a word that can only mean a person (``person``, ``patient``, ``subject``,
``participant``) and its number says its subject as plainly as an id column does, so it is weighed as a
column is (half the files suffice, ``groupids.COVER_COLUMN``), and a rule for the files it leaves is
looked for among those files alone (``init/groupids``).  The rule is ``source_name: person``, so the
check names each group by a keyed pseudonym, as it does a patient column's (``policy/grouprules``).
The id keeps the words between the number and the counter, so two series that number their people alike
stay apart: in that set bacterial and viral pneumonia each count persons from 1, with image counters of
their own, and most numbers are under both, on X-rays that look like other children (docs/field.md,
"Held-out probe 13"). Joining them would make group-split errors between different children; keeping
them apart misses at most a leak.
"""

from __future__ import annotations

import re

#: Leading words that name a person and nothing else.  ``case``, ``id`` or ``sample`` may name a batch,
#: a shot or a class, and stay with the token rules.
WORDS = ("person", "patient", "subject", "participant")
#: The subject's word and number first, words without digits after it, then the counter and the extension.
REGEX = (r"(?:^|[/#])(?P<group>(?i:" + "|".join(WORDS) + r")[_-]?[0-9]+(?:[_-][A-Za-z]+)*)"
         r"[_-][0-9]+\.[A-Za-z0-9]{1,5}$")
_SEARCH = re.compile(REGEX).search


def person(path: str) -> str | None:
    """The subject ``path`` names (a person's word, its number, the words after it), or None."""
    m = _SEARCH(path)
    return m.group("group") if m else None


def ids(paths: list[str]) -> dict[str, str]:
    """The subject id of each path named so."""
    return {p: g for p in paths if (g := person(p)) is not None}
