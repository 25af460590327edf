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
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from ..files.escape import yaml_comment

#: Column names that carry a subject, patient, video or session id.
ID_COLUMNS = re.compile(r"(subject|patient|case|video|session|participant|person|individual|scene|sequence|"
                        r"group|speaker|animal|specimen|sample_id|study|series|visit|clip|track|id$)", re.I)
#: Longest run of leading file-name tokens tried, and deepest folder level.
MAX_TOKENS = 3
MAX_FOLDERS = 3
#: Share of files an id must be found for (names and folders; columns may be sparser).
COVER = 0.9
COVER_COLUMN = 0.5
#: Share of files that must share their id with another file.
REPEAT = 0.1
#: Share of ids in every split beyond which folders are classes or shards.
EVERY_SPLIT = 0.5


@dataclass(frozen=True)
class Candidate:
    where: str  # "column subject_id", "file names (…)", "folder names (…)"
    regex: str | None  # the rule for names and folders; None for a column
    column: str | None
    ids: dict[str, str]


@dataclass(frozen=True)
class Proposal:
    """What init writes and says about groups."""

    #: The top-level ``groups:`` block, or the lines that go with a group column.
    yaml: str
    #: A table column to map as ``group`` in the source's own ``columns:``.
    column: str | None
    found: tuple[str, ...]
    note: str


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


def candidates(splits: dict[str, str], extra: dict[str, dict[str, str]]) -> list[Candidate]:
    paths = list(splits)
    out = []
    columns = Counter(c for values in extra.values() for c in values)
    for column, _ in columns.most_common():
        if ID_COLUMNS.search(column) and not re.search(r"label|class|categor|target|split|file|path", column, re.I):
            out.append(Candidate(f"column {column}", None, column,
                                 {p: v[column] for p, v in extra.items() if v.get(column)}))
    for k in range(1, MAX_TOKENS + 1):
        ids = {p: g for p, g in _by_regex(paths, name_regex(k)).items() if any(c.isdigit() for c in g)}
        out.append(Candidate(f"file names ({k} leading token{'s' * (k > 1)})", name_regex(k), None, ids))
    for level in range(1, MAX_FOLDERS + 1):
        ids = {p: g for p, g in _by_regex(paths, folder_regex(level)).items() if any(c.isdigit() for c in g)}
        out.append(Candidate(f"folder names ({level} up)", folder_regex(level), None, ids))
    return out


def _classes(splits: dict[str, str], labels: dict[str, str]) -> dict[str, str]:
    """Labels that behave as classes: most values present in every split (an ImageFolder class folder)."""
    if not labels:
        return {}
    return labels if _every_split(labels, splits) >= EVERY_SPLIT else {}


def _every_split(ids: dict[str, str], splits: dict[str, str]) -> float:
    names = set(splits.values())
    seen: dict[str, set[str]] = {}
    for p, g in ids.items():
        seen.setdefault(g, set()).add(splits[p])
    return sum(s == names for s in seen.values()) / max(1, len(seen)) if len(names) > 1 else 0.0


def judge(c: Candidate, splits: dict[str, str], classes: dict[str, str]) -> str | None:
    """Why ``c`` is not a group id, or None when it is one."""
    n = len(splits)
    counts = Counter(c.ids.values())
    if len(c.ids) < (COVER_COLUMN if c.column else COVER) * n:
        return f"found for {len(c.ids)} of {n} files" if c.ids else "no id with a digit"
    if len(counts) < 2:
        return "one id for every file"
    repeated = sum(k for k in counts.values() if k > 1)
    if repeated < REPEAT * len(c.ids) or sum(1 for k in counts.values() if k > 1) < 2:
        return f"{len(counts)} ids over {len(c.ids)} files, too few repeat"
    if counts.most_common(1)[0][1] > 0.5 * len(c.ids):
        return f"one id ({counts.most_common(1)[0][0]}) holds most files"
    both = [p for p in c.ids if p in classes]
    if both and (sum(c.ids[p] == classes[p] for p in both) >= 0.9 * len(both)
                 or len({(c.ids[p], classes[p]) for p in both}) == len(counts) == len(set(classes.values()))):
        return "the ids are the classes (the label, or the folder below the split: class or shard folders)"
    if c.column is None and _every_split(c.ids, splits) >= EVERY_SPLIT:
        return "most ids are in every split, as classes and shard folders are (never subjects)"
    return None


def propose(splits: dict[str, str], labels: dict[str, str], extra: dict[str, dict[str, str]]) -> Proposal:
    """The group rule (or column) to write, with its evidence; or a note saying why there is none."""
    classes = _classes(splits, labels)
    passed: list[str] = []
    for c in candidates(splits, extra):
        why = judge(c, splits, classes)
        if why is not None:
            if c.ids and why != "no id with a digit":
                passed.append(f"{c.where}: {why}")
            continue
        return _proposal(c, splits)
    detail = "; ".join(dict.fromkeys(passed[:4]))
    return Proposal("", None, (), "groups: no repeated id found in id columns, file names or folder names"
                    + (f" ({detail})" if detail else "")
                    + "; if several images show one subject, video or patient, add a rule (docs/policy-groups.md)")


def _proposal(c: Candidate, splits: dict[str, str]) -> Proposal:
    per_id: dict[str, set[str]] = {}
    for p, g in c.ids.items():
        per_id.setdefault(g, set()).add(splits[p])
    counts = Counter(c.ids.values())
    spanning = sorted(g for g, s in per_id.items() if len(s) > 1)
    many = len(spanning) != 1
    evidence = (f"{len(spanning)} id{'s' * many} appear{'s' * (not many)} in more than one split "
                f"({' and '.join(sorted({s for g in spanning for s in per_id[g]}))}), e.g. {spanning[0]}"
                if spanning else "no id appears in two splits yet")
    repeat = sum(1 for k in counts.values() if k > 1)
    line = (f"group ids in {c.where}: {len(counts)} ids over {len(c.ids)} files, {repeat} with several files, "
            f"e.g. {', '.join(list(counts)[:3])}; {evidence}")
    ungrouped = "own-group" if len(c.ids) == len(splits) else "warning"
    head = ("\n# Files that share an id (subject, video, session) must stay in one split;\n"
            f"# proposed by `leakcheck init` from {c.where} ({yaml_comment(evidence)}).\n")
    if c.column is not None:
        return Proposal(head + f"ungrouped: {ungrouped}\ngroup_split: error\n", c.column, (line,), "")
    yaml = head + f"groups:\n  - regex: '{c.regex}'\nungrouped: {ungrouped}\ngroup_split: error\n"
    return Proposal(yaml, None, (line,), "")
