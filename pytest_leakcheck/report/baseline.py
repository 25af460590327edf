"""The baseline: findings a person has seen, so they stop failing the build.

Like detect-secrets' ``.secrets.baseline``: ``leakcheck baseline`` records the
current findings, and each entry may carry a verdict:

- ``duplicate``: a real leak the team accepts for now; reported as ``known``;
- ``distinct``: a false alarm; never reported again.

An entry without a verdict is accepted like ``duplicate`` until someone judges
it.  Entries are keyed by finding id, which is built from content digests, so
renaming or moving a file keeps its entry.  The file is sorted and carries no
timestamps: two runs on the same tree write the same bytes.

An entry holds only for the splits its members were in when it was recorded
or judged (``splits``): a verdict given to a train~val copy says nothing about
the same copy once a manifest edit moves it into test.  Entries written before
``splits`` existed (version 1) hold for no split until ``leakcheck baseline``
stamps them on a trusted checkout; see docs/baseline.md.
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from ..files import lock
from ..files.atomic import write_atomic
from ..validate import Bounds, Ctx, read_yaml
from ..errors import BaselineError, PolicyError, UsageError
from .model import Finding, Report, per_split
from ..files.names import display, excerpt

#: 2 added ``splits`` to entries; version 1 files are still read (their
#: entries hold for no split until re-recorded).
SCHEMA_VERSION = 2
VERDICTS = ("duplicate", "distinct")
#: Shortest id prefix ``judge`` accepts: 16**6 ids make a chance collision rare,
#: and an empty or one-letter prefix can never stand for "the" finding.
MIN_PREFIX = 6
#: Paths an entry of a finding that is not a copy cluster keeps per split, as a hint for people.
HINT_PER_SPLIT = 3
_ID = re.compile(r"^[0-9a-f]{12}$")
_DIGEST = re.compile(r"^[0-9a-f]{64}$")
_ENTRY_KEYS = ("kind", "verdict", "reason", "splits", "paths", "digests")
_HEADER = """\
# leakcheck baseline: findings recorded by `leakcheck baseline` no longer fail the check.
# Entries are keyed by finding id, built from file contents, so renames keep them.
# Judge an entry here or with: leakcheck judge <id> duplicate|distinct --reason "..."
#   duplicate: a real leak accepted for now (reported as known)
#   distinct:  a false alarm (never reported again)
# An entry holds only for its `splits`: a member moved to another split is a new finding.
# `leakcheck baseline --prune` drops entries that match no finding any more.
"""


@dataclass(frozen=True)
class Entry:
    id: str
    kind: str = ""
    #: Sorted content digests of the members when recorded (one per file).
    digests: tuple[str, ...] = ()
    #: Sorted paths when recorded; a hint for people, never used to match.
    paths: tuple[str, ...] = ()
    verdict: str | None = None
    reason: str = ""
    #: The splits the entry holds for (the members' splits when recorded or
    #: judged, in policy order).  None: written before splits were recorded,
    #: so it holds for no split until ``record`` stamps it.
    splits: tuple[str, ...] | None = None

    @property
    def status(self) -> str:
        return "distinct" if self.verdict == "distinct" else "known"

    def holds_for(self, f: Finding) -> bool:
        """Whether the entry's splits include every split ``f`` spans now."""
        return self.splits is not None and set(f.splits) <= set(self.splits)

    def describe(self) -> str:
        """``duplicate ('reason') for train~val``, for messages about an entry.

        Reason and split names come from a file a pull request can edit, so
        they are quoted with control characters escaped.
        """
        verdict = self.verdict or "recorded without a verdict"
        reason = f" ({self.reason!r})" if self.reason else ""
        where = "no recorded splits" if self.splits is None else "~".join(self.splits) or "no split"
        return f"{verdict}{reason} for {where if where.isprintable() else repr(where)}"

    @classmethod
    def of(cls, f: Finding, verdict: str | None = None, reason: str = "",
           splits: tuple[str, ...] | None = None) -> Entry:
        """The entry for ``f``; ``splits`` defaults to the splits ``f`` spans now."""
        return cls(
            id=f.id,
            kind=f.kind,
            digests=tuple(sorted(m.digest for m in f.members if m.digest)),
            # A hint, bounded: a group-split finding lists every file of its group, and a baseline
            # over a few thousand paths would pass the YAML bounds it is read under (1 MiB).
            paths=tuple(sorted(m.path for m in (f.members if f.is_copy else per_split(f.members, HINT_PER_SPLIT)))),
            verdict=verdict,
            reason=reason,
            splits=f.splits if splits is None else splits,
        )


@dataclass(frozen=True)
class Baseline:
    path: Path | None = None
    entries: tuple[Entry, ...] = ()
    _by_id: dict[str, Entry] = field(init=False, compare=False, repr=False)
    _by_digest: dict[str, list[Entry]] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {e.id: e for e in self.entries})
        by_digest: dict[str, list[Entry]] = {}
        for e in self.entries:
            for d in set(e.digests):
                by_digest.setdefault(d, []).append(e)
        object.__setattr__(self, "_by_digest", by_digest)

    @property
    def unscoped(self) -> tuple[Entry, ...]:
        """Entries without recorded splits (an older leakcheck wrote them)."""
        return tuple(e for e in self.entries if e.splits is None)

    def get(self, entry_id: str) -> Entry | None:
        return self._by_id.get(entry_id)

    def match(self, f: Finding, *, scope: str = "holds") -> Entry | None:
        """The entry that covers ``f``: same id, or a recorded cluster that contains it,
        recorded for splits that include every split ``f`` spans now.

        A cluster that lost a member (a copy deleted or edited) adds no leaked
        content, so it keeps its verdict.  One that gained a copy is new: the
        multiset comparison counts byte-identical copies one by one.  One whose
        members moved into a split the entry was not given for is new too.

        ``scope`` ``"unrecorded"`` asks instead which entry without recorded
        splits would cover ``f`` if splits were ignored (the one ``record``
        stamps); ``"any"`` ignores splits altogether (is the entry stale?).
        """
        def fits(e: Entry) -> bool:
            if scope == "any":
                return True
            return e.splits is None if scope == "unrecorded" else e.holds_for(f)

        entry = self._by_id.get(f.id)
        if entry is not None and fits(entry):
            return entry
        digests = Counter(m.digest for m in f.members)
        if not digests or "" in digests:
            return None
        # A covering entry holds every digest of f, so any one of them finds it.
        some = next(iter(digests))
        covering = [e for e in self._by_digest.get(some, ())
                    if e.kind == f.kind and not digests - Counter(e.digests) and fits(e)]
        return min(covering, key=lambda e: e.id) if covering else None

    def with_entries(self, entries: Iterable[Entry]) -> Baseline:
        return Baseline(self.path, tuple(sorted(entries, key=lambda e: e.id)))

    def resolve(self, prefix: str, findings: Iterable[Finding] = ()) -> Entry | None:
        """The one entry or current finding whose id starts with ``prefix``.

        Recorded entries and the findings of a fresh check are searched
        together, so a prefix unique among one but shared with the other is
        ambiguous rather than silently the recorded one.  A current finding
        its entry does not hold for wins over that entry: a verdict given now
        is about the splits it spans now.  None when nothing matches;
        ambiguous raises.
        """
        prefix = check_prefix(prefix)
        hits: dict[str, Entry] = {e.id: e for e in self.entries if e.id.startswith(prefix)}
        for f in findings:
            if f.id.startswith(prefix) and not (f.id in hits and hits[f.id].holds_for(f)):
                hits[f.id] = Entry.of(f)
        if len(hits) > 1:
            shown = sorted(hits)
            raise UsageError(
                f"finding id {prefix!r} is ambiguous; it starts {len(shown)} ids: "
                + ", ".join(shown[:20]) + (", ..." if len(shown) > 20 else ""),
                fix="give more of the id",
            )
        return next(iter(hits.values()), None)


def check_prefix(prefix: str) -> str:
    """``prefix`` lower-cased, if it can name one finding id; a usage error if not."""
    text = prefix.strip().lower()
    if not re.fullmatch(r"[0-9a-f]*", text) or len(text) > 12:
        raise UsageError(f"{prefix!r} is not a finding id (12 hex digits, or a prefix of one)",
                         fix="copy an id from `leakcheck check` or the HTML report")
    if len(text) < MIN_PREFIX:
        raise UsageError(f"finding id prefix {prefix!r} is too short: give at least {MIN_PREFIX} of its 12 "
                         "hex digits", fix="copy the id from `leakcheck check` or the HTML report")
    return text


# --------------------------------------------------------------------------
# Reading and writing


#: A baseline lists every judged finding, so it may be far longer than a policy; still bounded,
#: since a pull request can rewrite it (an alias bomb in it must fail as fast as in the policy).
BASELINE_BOUNDS = Bounds(max_bytes=64 << 20, max_nodes=5_000_000, max_depth=64, max_aliases=100_000)


def load(path: Path | None) -> Baseline:
    """Read and validate a baseline; a missing file is an empty baseline."""
    if path is None or not path.exists():
        return Baseline(path)
    _refuse_conflict_markers(path)
    try:
        data, lines = read_yaml(path, BASELINE_BOUNDS)
    except PolicyError as exc:
        raise BaselineError(
            exc.problem, path=str(path), line=exc.line, key=exc.key,
            fix="fix it by hand; leakcheck never rewrites an invalid baseline",
        ) from None

    fail = Ctx(path, lines, BaselineError).fail

    if data is None:
        return Baseline(path)
    if not isinstance(data, dict):
        raise fail((), "expected a mapping with `version` and `findings`",
                    "run `leakcheck baseline` after moving this file away")
    unknown = [k for k in data if k not in ("version", "findings")]
    if unknown:
        raise fail((str(unknown[0]),), "unknown key", "allowed keys: version, findings")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise fail(("version",), f"invalid or missing version {excerpt(version)}",
                   f"use `version: {SCHEMA_VERSION}`")
    if version > SCHEMA_VERSION:
        raise fail(("version",),
                   f"baseline version {version} is newer than this leakcheck reads ({SCHEMA_VERSION})",
                   "upgrade pytest-leakcheck; the file was left unchanged")
    raw = data.get("findings") or {}
    if not isinstance(raw, dict):
        raise fail(("findings",), "expected a mapping of finding id to entry")
    entries = [_entry(key, value, fail) for key, value in raw.items()]
    return Baseline(path, tuple(sorted(entries, key=lambda e: e.id)))


def _refuse_conflict_markers(path: Path) -> None:
    # The file is committed and edited on branches; a merge conflict is its
    # most likely breakage, and YAML would point past it with a vaguer message.
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read(BASELINE_BOUNDS.max_bytes + 1)  # a longer file fails in read_yaml, unread
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"cannot read baseline: {exc}", path=str(path)) from None
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith(("<<<<<<< ", ">>>>>>> ")) or line == "=======":
            raise BaselineError(
                "unresolved merge conflict", path=str(path), line=n,
                fix="keep the entries of both sides and delete the marker lines; entries are sorted "
                    "by id, so the union is the resolution",
            )


def _entry(key: Any, value: Any, fail: Any) -> Entry:
    at = ("findings", str(key))
    if not isinstance(key, str) or not _ID.match(key):
        raise fail(at, f"finding id {excerpt(key)} is not 12 hex digits",
                   "copy the id from the report, quoted: '0123abcd4567'")
    value = value or {}
    if not isinstance(value, dict):
        raise fail(at, "expected a mapping with kind, verdict, reason, paths, digests")
    for k in value:
        if k not in _ENTRY_KEYS:
            raise fail((*at, str(k)), "unknown key", "allowed keys: " + ", ".join(_ENTRY_KEYS))
    verdict = value.get("verdict")
    if verdict is not None and verdict not in VERDICTS:
        raise fail((*at, "verdict"), f"invalid verdict {excerpt(verdict)}", "use duplicate or distinct")
    reason = value.get("reason") or ""
    kind = value.get("kind") or ""
    if not isinstance(reason, str) or not isinstance(kind, str):
        raise fail((*at, "reason" if not isinstance(reason, str) else "kind"), "expected text")
    lists = {}
    for name in ("paths", "digests"):
        items = value.get(name) or []
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise fail((*at, name), "expected a list of strings")
        lists[name] = tuple(sorted(items))
    bad = [d for d in lists["digests"] if not _DIGEST.match(d)]
    if bad:
        raise fail((*at, "digests"), f"{excerpt(bad[0])} is not a sha256 hex digest",
                   "leave digests as `leakcheck baseline` wrote them")
    return Entry(key, kind, lists["digests"], lists["paths"], verdict, reason, _splits(value, at, fail))


def _splits(value: dict, at: tuple[str, ...], fail: Any) -> tuple[str, ...] | None:
    # Missing means "written before splits were recorded" (None), which holds
    # for no split; an empty list is a finding in no split (an unassigned file).
    if "splits" not in value:
        return None
    items = value["splits"]
    if items is None:
        items = []
    if not isinstance(items, list) or not all(isinstance(i, str) and i for i in items):
        raise fail((*at, "splits"), "expected a list of split names",
                   "leave splits as `leakcheck baseline` wrote them, e.g. [train, val]")
    return tuple(dict.fromkeys(items))


def dumps(baseline: Baseline) -> str:
    """The file's text: sorted, no timestamps, so equal baselines give equal bytes."""
    findings: dict[str, dict[str, Any]] = {}
    for e in sorted(baseline.entries, key=lambda e: e.id):
        item: dict[str, Any] = {"kind": e.kind}
        if e.verdict:
            item["verdict"] = e.verdict
        if e.reason:
            item["reason"] = e.reason
        if e.splits is not None:
            item["splits"] = list(e.splits)
        # Paths are hints for people, never matched, and the file is reviewed in
        # pull requests: shown escaped, so no control or bidi character hides in it.
        item["paths"] = sorted(display(p) for p in e.paths)
        item["digests"] = sorted(e.digests)
        findings[e.id] = item
    body = yaml.safe_dump({"version": SCHEMA_VERSION, "findings": findings}, sort_keys=False,
                          default_flow_style=False, allow_unicode=True, width=1 << 16)
    return _HEADER + body


@contextlib.contextmanager
def locked(path: Path | None) -> Iterator[None]:
    """Hold the baseline's folder locked, so concurrent `judge` and `baseline` runs take turns
    (``files/lock.py``); each reads the baseline again inside the lock."""
    with contextlib.ExitStack() as stack:
        if path is not None:
            try:
                stack.enter_context(lock.locked(Path(path).parent))
            except OSError as exc:
                raise BaselineError(f"cannot lock the baseline's folder: {exc.strerror or exc}",
                                    path=str(Path(path).parent), fix="make the folder readable and writable") from None
        yield


def save(baseline: Baseline) -> None:
    if baseline.path is None:
        raise UsageError("the policy sets no baseline file", fix="add `baseline: .leakcheck-baseline.yaml`")
    write_atomic(baseline.path, dumps(baseline))


# --------------------------------------------------------------------------
# Applying to a report


def apply(report: Report, baseline: Baseline, *, complete: bool = True) -> Report:
    """Mark findings ``known``, drop the ``distinct`` ones, and list stale entries.

    ``complete`` is False for a focused check: it sees only some findings, so
    an entry it does not meet is not stale.  An entry that would cover a
    finding but for its splits accepts nothing, and is not stale either.
    """
    if not baseline.entries:
        return report
    kept: list[Finding] = []
    used: set[str] = set()
    distinct = 0
    for f in report.findings:
        entry = baseline.match(f)
        if entry is None:
            # Not accepted, yet not stale: its content is still here, in
            # other splits or waiting for its splits to be recorded.
            other = baseline.match(f, scope="any")
            if other is not None:
                used.add(other.id)
            kept.append(f)
            continue
        used.add(entry.id)
        if entry.status == "distinct":
            distinct += 1
        else:
            kept.append(replace(f, status="known"))
    stale = tuple(e.id for e in baseline.entries if e.id not in used) if complete else ()
    warnings = list(report.warnings)
    if baseline.unscoped:
        warnings.append(_unscoped_warning(baseline))
    if stale:
        shown = ", ".join(stale[:5]) + (", ..." if len(stale) > 5 else "")
        entries = "entry matches" if len(stale) == 1 else "entries match"
        warnings.append(f"baseline {baseline.path}: {len(stale)} stale {entries} no finding ({shown}); "
                        "`leakcheck baseline --prune` drops them")
    stats = dict(report.stats)
    stats["known"] = sum(f.status == "known" for f in kept)
    stats["distinct"] = distinct
    return replace(report, findings=tuple(kept), stats=stats, warnings=tuple(warnings), stale=stale)


def _unscoped_warning(baseline: Baseline) -> str:
    ids = [e.id for e in baseline.unscoped]
    shown = ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
    return (f"baseline {baseline.path}: {len(ids)} entries record no splits ({shown}), so they accept "
            "no finding; run `leakcheck baseline` on a checkout you trust to record their splits "
            "(verdicts are kept)")


@dataclass(frozen=True)
class Update:
    """What :func:`record` changed, for the CLI to tell the user."""

    baseline: Baseline
    added: int
    pruned: int
    stale: int
    #: Entries without splits that were given the splits of what they cover.
    stamped: int = 0
    #: Entries whose verdict was dropped: their finding now spans other splits.
    dropped: tuple[Entry, ...] = ()


def record(report: Report, baseline: Baseline, *, prune: bool = False) -> Update:
    """The baseline after adding every new finding; verdicts are kept.

    ``report`` must be a complete check with ``baseline`` already applied.
    Paths of known findings are refreshed, so the hints follow renames.
    An entry without splits that covers a finding gets that finding's splits
    and keeps its verdict.  A finding whose entry holds for other splits is
    recorded afresh, without the verdict, which ``dropped`` lists.
    """
    by_id = {e.id: e for e in baseline.entries}
    stale = set(report.stale)
    if prune:
        for key in stale:
            del by_id[key]
    added = 0
    stamped: set[str] = set()
    dropped: list[Entry] = []
    for f in report.findings:
        if f.status == "new":
            waiting = baseline.match(f, scope="unrecorded") if baseline.unscoped else None
            if waiting is not None:
                now = by_id.get(waiting.id, waiting)
                by_id[waiting.id] = replace(now, splits=tuple(dict.fromkeys((*(now.splits or ()), *f.splits))))
                stamped.add(waiting.id)
                continue
            old = baseline.get(f.id)  # before --prune: a dropped verdict is always told
            if old is not None and (old.verdict or old.reason):
                dropped.append(old)
            by_id[f.id] = Entry.of(f)
            added += 1
        elif f.id in by_id:
            old = by_id[f.id]
            by_id[f.id] = Entry.of(f, old.verdict, old.reason, old.splits)
    return Update(baseline.with_entries(by_id.values()), added, len(stale) if prune else 0,
                  0 if prune else len(stale), len(stamped), tuple(dropped))


@dataclass(frozen=True)
class Judged:
    """What :func:`judge` changed, for the CLI to tell the user."""

    baseline: Baseline
    entry: Entry
    #: The entry it replaced, when that one carried a verdict or a reason.
    replaced: Entry | None = None


def judge(baseline: Baseline, entry: Entry, verdict: str, reason: str, *, replace_verdict: bool = False) -> Judged:
    """The baseline with ``entry`` (new or recorded) carrying ``verdict``.

    An entry that already carries a verdict is replaced only when asked
    (``replace_verdict``); the result names what it replaced.  Judging again
    with the same verdict, reason and splits changes nothing.
    """
    if verdict not in VERDICTS:
        raise UsageError(f"invalid verdict {verdict!r}", fix="use duplicate or distinct")
    old = baseline.get(entry.id)
    new = replace(entry, verdict=verdict, reason=reason)
    replaced = None
    if old is not None and (old.verdict, old.reason, old.splits) != (verdict, reason, new.splits):
        if old.verdict and not replace_verdict:
            raise UsageError(f"finding {entry.id} is already judged {old.describe()}",
                             fix="pass --replace to replace that verdict, or leave it")
        if old.verdict or old.reason:
            replaced = old
    by_id = {e.id: e for e in baseline.entries}
    by_id[entry.id] = new
    return Judged(baseline.with_entries(by_id.values()), new, replaced)
