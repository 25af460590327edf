"""The group rules of a policy (``groups:``, ``ungrouped``, ``split_share``): what they say, parsed.

Each rule validates its own section here, through the shared :class:`Ctx`;
the policy loader calls these parsers and never the other way round.  Which
group each file falls in, and the findings that follow, are ``groups.py``'s.
A new rule source is a name in ``SOURCES``, a branch in :func:`parse_rules`
and a resolver in ``groups.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import userregex
from ..validate import Ctx, inside, remote
from ..files.names import excerpt
from ..files.remote import Url, locate

#: Rule sources, each a key of one item under ``groups:``.
SOURCES = ("regex", "folder_depth", "manifest_column", "csv", "coco")
UNGROUPED = ("error", "warning", "own-group")
SHARE_BY = ("files", "groups")


@dataclass(frozen=True)
class GroupRule:
    """One item under ``groups:``; ``value`` is the regex, depth, column or file path."""

    source: str
    value: str | int
    #: COCO image field (dotted for nested keys) or sidecar CSV group column.
    field: str = ""


@dataclass(frozen=True)
class ShareRules:
    """``split_share:``: allowed share per split, counted in files or in groups."""

    bounds: tuple[tuple[str, float, float], ...] = ()
    by: str = "files"
    severity: str = "error"


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
