"""The person a left or right picture is named after: ``951`` of ``951_left.jpg``, one patient's eye.

Fundus photographs (and hands, knees, ears) are named after the patient and the side: ODIR's
``<patient>_left.jpg`` and ``_right.jpg``, ``<id>_L.png``, ``<id>_OD.jpg`` (oculus dexter).  A
left and a right fundus are no copies of each other, so no pixel signal joins them, yet one
patient's two eyes in train and test are a patient-level leak.  The id before a side token that
ends the name is a person, read here when:

- the side is a whole token: a separator (``_``, ``-``, ``.``, space) before it, the extension right
  after it, any case (``left``, ``right``, ``L``, ``R``, ``OD``, ``OS``); ``OSL.jpg`` or ``12R.jpg``
  says nothing;
- the id holds a digit: ``eye_left.jpg`` names no one.

Datasets number their patients, and two merged into one number them alike: the Kaggle
eye-disease set holds ODIR's ``951_left.jpg`` and EyePACS' ``951_left.jpeg``, two people
(``eyes`` of benchmarks/field.py: 19 numbers are under both).  A regex group is one span of the
name and cannot join the id and the extension, so the id is read here, keyed with its extension
in lower case (``951.jpg``, ``951.jpeg``).  The check shows it as a keyed pseudonym, as it shows
a patient column (``dataset/groups.py``).

Used by the ``source_name: laterality`` group rule and by ``leakcheck init``.  Plain ``re`` on a
fixed pattern with no nested quantifier: linear in the name.
"""

from __future__ import annotations

import re

_SIDE = re.compile(r"(?:^|/)(?P<id>[^/#]+?)[ ._-](?P<side>left|right|l|r|od|os)"
                   r"(?P<ext>\.[A-Za-z0-9]{1,5})$", re.IGNORECASE)
#: The side each token names (OD is the right eye, OS the left).
SIDES = {"left": "left", "l": "left", "os": "left", "right": "right", "r": "right", "od": "right"}


def side_of(path: str) -> tuple[str, str, str] | None:
    """``(id, side, extension)`` of a name that ends in a side token, else None."""
    m = _SIDE.search(path)
    if m is None or not any(c.isdigit() for c in m.group("id")):
        return None
    return m.group("id"), SIDES[m.group("side").lower()], m.group("ext").lower()


def person(path: str) -> str | None:
    """The person ``path`` is a picture of: its id keyed with its extension, or None."""
    found = side_of(path)
    return None if found is None else found[0] + found[2]
