"""The group rules of a policy (``groups:``, ``ungrouped``, ``split_share``): what they say, parsed.

Each rule validates its own section here, through the shared :class:`Ctx`;
the policy loader calls these parsers and never the other way round.  Which
group each file falls in, and the findings that follow, are ``groups.py``'s.
A new rule source is a name in ``SOURCES``, a branch in :func:`parse_rules`
and a resolver in ``groups.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import userregex
from ..validate import Ctx, inside, remote
from ..files import exportnames
from ..files.names import excerpt
from ..files.remote import Url, locate

#: Rule sources, each a key of one item under ``groups:``.
SOURCES = ("regex", "folder_depth", "manifest_column", "csv", "coco", "source_name", "dicom", "exif", "burst")
#: Sources read from inside the files (metadata.py): their group ids are keyed pseudonyms.
METADATA = ("dicom", "exif", "burst")
#: Where a burst rule reads capture times: EXIF first, else the file name; or only one of them.
BURST_TIMES = ("any", "exif", "name")
#: Longest gap a burst rule may state, in seconds: beyond a day it is not a burst.
MAX_GAP = 86_400.0
UNGROUPED = ("error", "warning", "own-group")
#: Sources whose group ids are a table's values (the split manifest, a sidecar CSV, a COCO field).
TABLES = ("manifest_column", "csv", "coco")
#: A table column that names people: a person's name or id, a patient, a participant.  Its values
#: become keyed pseudonyms as DICOM ids do (``person-3f9a2c1b7d4e``, ``dataset/groups.py``), and init
#: gives counts, never a value: a name in such a column is in no file name, so no output held it
#: before the rule read it (an LFW set re-split by a table of names, field.md, probe 4 of stop 57).
PEOPLE = re.compile(r"(?:^|[^a-z])(?:patient|person|people|subject|participant|individual|identity|"
                    r"celebrity|speaker|face|user|customer|employee|student|driver|owner|name)", re.I)
NOT_PEOPLE = re.compile(r"file|path|video|clip|scene|sequence|session|series|track|camera|device|site", re.I)
SHARE_BY = ("files", "groups")


@dataclass(frozen=True)
class GroupRule:
    """One item under ``groups:``; ``value`` is the regex, depth, column or file path."""

    source: str
    #: The regex, depth, column, file path, DICOM keyword or EXIF field; a burst's gap in seconds.
    value: str | int | float
    #: COCO image field (dotted for nested keys), sidecar CSV group column, or where a burst's times come from.
    field: str = ""


@dataclass(frozen=True)
class ShareRules:
    """``split_share:``: allowed share per split, counted in files or in groups."""

    bounds: tuple[tuple[str, float, float], ...] = ()
    by: str = "files"
    severity: str = "error"


def names_people(column: str) -> bool:
    """Whether a table column named ``column`` holds people's names or ids: not a file's name or path,
    nor the name of a recording or place (``video_name``, ``scene_name``, ``camera_name``)."""
    return bool(PEOPLE.search(column)) and not NOT_PEOPLE.search(column)


#: The ``source_name:`` whose ids are people (``files/sidenames.py``), and how its pseudonyms are prefixed.
PEOPLE_NAMES = {"laterality": "patient", "person": "person"}


def reads_people(rule: GroupRule) -> bool:
    """Whether ``rule`` takes its group ids from a table column that names people, or from the person a
    file name names (``source_name: laterality`` or ``person``)."""
    if rule.source == "source_name":
        return rule.value in PEOPLE_NAMES
    if rule.source not in TABLES:
        return False
    return names_people(str(rule.value if rule.source == "manifest_column" else rule.field))


def people_column(rule: GroupRule) -> str:
    """The column a people rule reads, as its pseudonyms are prefixed (``person``, ``PatientName``;
    ``patient`` for ``source_name: laterality``)."""
    if rule.source == "source_name":
        return PEOPLE_NAMES[str(rule.value)]
    return str(rule.value if rule.source == "manifest_column" else rule.field)


# --------------------------------------------------------------------------
# Policy sections (called from policy.load)


def parse_rules(
    ctx: Ctx, raw: Any, root: Path | Url, manifest: Path | Url | None
) -> tuple[GroupRule, ...]:
    """Validate ``groups:``; regexes compile and name a group, files exist."""
    at = ("groups",)
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ctx.fail(at, "expected a list of rules", "write e.g. `groups: [{folder_depth: 2}]`")
    rules = []
    for i, item in enumerate(raw):
        where = (*at, str(i))
        item = ctx.mapping(item, where, (*SOURCES, "field", "column"))
        if len([k for k in SOURCES if k in item]) == 1 and any(k in item for k in METADATA):
            rules.append(metadata_rule(ctx, item, where))
            continue
        sources = [k for k in SOURCES if k in item]
        if len(sources) != 1:
            raise ctx.fail(
                where,
                "each rule needs exactly one of: " + ", ".join(SOURCES),
                "write one rule per list item",
            )
        source = sources[0]
        value = item[source]
        spot = (*where, source)
        extra = {"coco": "field", "csv": "column"}.get(source)
        for key in ("field", "column"):
            if key in item and key != extra:
                raise ctx.fail((*where, key), f"`{key}` does not apply to a `{source}` rule")
        if source == "regex":
            rules.append(GroupRule(source, _regex(ctx, value, spot)))
        elif source == "folder_depth":
            rules.append(GroupRule(source, ctx.number(value, spot, int, 1, 1000)))
        elif source == "source_name":  # the photograph an export tool names (files/exportnames.py)
            rules.append(GroupRule(source, ctx.choice(value, spot, exportnames.TOOLS)))
        elif source == "manifest_column":
            if not isinstance(value, str) or not value:
                raise ctx.fail(spot, "expected a column name")
            if manifest is None:
                raise ctx.fail(
                    spot,
                    "`manifest_column` needs a manifest",
                    "set `splits: {manifest: FILE.csv}`, or use another rule",
                )
            rules.append(GroupRule(source, value))
        else:
            if not isinstance(value, str) or not value:
                raise ctx.fail(spot, "expected a file path")
            path = locate(root, value)  # under a URL root, an object in the bucket
            if isinstance(path, Path):
                path = inside(ctx, spot, value, path, (ctx.path.parent, root), f"`{source}` file")
            elif path is not None:
                path = remote(ctx, spot, value, path)
            if path is None or not path.is_file():
                kind = "CSV" if source == "csv" else "COCO JSON"
                raise ctx.fail(
                    spot,
                    f"{kind} file {excerpt(value)} not found ({path})",
                    "fix the path; it is relative to `root`",
                )
            field = item.get(extra, "group" if source == "csv" else None)
            if not isinstance(field, str) or not field:
                raise ctx.fail(
                    (*where, extra),
                    f"a `{source}` rule needs `{extra}: NAME`",
                    "e.g. `field: video_id`" if source == "coco" else "e.g. `column: group`",
                )
            rules.append(GroupRule(source, str(path), field=field))
    return tuple(rules)


def metadata_rule(ctx: Ctx, item: dict[str, Any], where: tuple[str, ...]) -> GroupRule:
    """``dicom: KEYWORD``, ``exif: FIELD`` or ``burst: {gap: 2s, time: any}``."""
    source = next(k for k in METADATA if k in item)
    value, spot = item[source], (*where, source)
    for key in ("field", "column"):
        if key in item:
            raise ctx.fail((*where, key), f"`{key}` does not apply to a `{source}` rule")
    if source == "burst":
        spec = ctx.mapping(value, spot, ("gap", "time"))
        if "gap" not in spec:
            raise ctx.fail(spot, "a burst rule needs `gap`", "e.g. `burst: {gap: 2s}`: shots of one camera "
                           "at most 2 seconds apart are one burst")
        gap = _seconds(ctx, spec["gap"], (*spot, "gap"))
        return GroupRule(source, gap, field=ctx.choice(spec.get("time", "any"), (*spot, "time"), BURST_TIMES))
    if not isinstance(value, str) or not value.isidentifier():
        raise ctx.fail(spot, f"expected a {'DICOM keyword' if source == 'dicom' else 'EXIF field name'}",
                       "e.g. `dicom: PatientID`" if source == "dicom" else "e.g. `exif: BodySerialNumber`")
    from ..signals import metadata  # the reader knows the names; pydicom only for a dicom rule

    try:
        known = metadata.known_field(source, value)
    except ImportError as exc:  # a dicom rule without the dicom extra
        raise ctx.fail(spot, str(exc), "install the extra, or drop the rule") from None
    if not known:
        raise ctx.fail(spot, f"unknown {'DICOM keyword' if source == 'dicom' else 'EXIF field'} {excerpt(value)}",
                       "DICOM keywords as in the standard's data dictionary, e.g. PatientID, StudyInstanceUID"
                       if source == "dicom" else "EXIF names as Pillow's ExifTags.TAGS spells them, e.g. Model")
    return GroupRule(source, value)


def _seconds(ctx: Ctx, value: Any, at: tuple[str, ...]) -> float:
    """A gap: a number of seconds, or text such as ``2s``, ``500ms``, ``1.5 s``, ``2min``."""
    units = {"ms": 0.001, "s": 1.0, "sec": 1.0, "min": 60.0, "m": 60.0}
    seconds = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip().lower()
        for unit in sorted(units, key=len, reverse=True):
            number = text[:-len(unit)].strip() if text.endswith(unit) else None
            if number is not None:
                try:
                    seconds = float(number) * units[unit]
                except ValueError:
                    pass
                break
    if seconds is None or not 0 < seconds <= MAX_GAP:
        raise ctx.fail(at, f"expected a gap above 0 and at most {MAX_GAP:.0f} seconds, like `2s` or `500ms`")
    return seconds


def _regex(ctx: Ctx, value: Any, at: tuple[str, ...]) -> str:
    if not isinstance(value, str) or not value:
        raise ctx.fail(at, "expected a regular expression")
    try:
        pattern = userregex.compile(value)  # RE2: linear time whatever the pattern (userregex.py)
    except ValueError as exc:
        raise ctx.fail(
            at,
            f"malformed regular expression {excerpt(value)}: {excerpt(str(exc))}",
            "check brackets and escapes and quote the regex in single quotes; regexes run with RE2, "
            "which has no backreferences and no lookaround (e.g. (?=...)): match the part you need instead",
        ) from None
    if "group" not in userregex.group_names(pattern):
        raise ctx.fail(
            at,
            f"regular expression {excerpt(value)} has no named group `group`",
            r"wrap the group part as (?P<group>...), e.g. '(?P<group>part\d+)_shot\d+'",
        )
    return value


def parse_share(
    ctx: Ctx, raw: Any, split_names: tuple[str, ...], severities: tuple[str, ...]
) -> ShareRules | None:
    """Validate ``split_share:``; ``by`` and ``severity`` are reserved names beside the splits."""
    at = ("split_share",)
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ctx.fail(at, "expected a mapping like `test: {min: 0.15, max: 0.25}`")
    by = ctx.choice(raw.get("by", "files"), (*at, "by"), SHARE_BY)
    severity = ctx.choice(raw.get("severity", "error"), (*at, "severity"), severities)
    bounds = []
    for name, spec in raw.items():
        if name in ("by", "severity"):
            continue
        where = (*at, str(name))
        if split_names and name not in split_names:
            raise ctx.fail(
                where, f"unknown split {name!r}", "splits are: " + ", ".join(split_names)
            )
        spec = ctx.mapping(spec, where, ("min", "max"))
        lo = ctx.number(spec.get("min", 0.0), (*where, "min"), float, 0.0, 1.0)
        hi = ctx.number(spec.get("max", 1.0), (*where, "max"), float, 0.0, 1.0)
        if lo > hi:
            raise ctx.fail(where, f"min {lo} is above max {hi}", "swap them")
        bounds.append((str(name), lo, hi))
    return ShareRules(tuple(bounds), by, severity)
