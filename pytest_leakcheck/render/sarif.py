"""SARIF 2.1.0 for GitHub code scanning: one rule per finding kind.

Each finding is one result located on the member that annotations use,
with the other members as related locations.  ``partialFingerprints``
carries the finding id, which is stable under renames, so code scanning
tracks one alert across commits.
"""

from __future__ import annotations

import json
from urllib.parse import quote

from ..version import __version__
from ..report.model import KINDS, Finding, Report
from ..files.escape import sarif_text
from ..files.names import defuse_json, to_bytes
from ._common import examples, headline, link_text
from .annotations import anchor

#: File names link into the repository (code scanning shows each result at its file; render.links).
LINKS = True

#: Related locations per result; the JSON report lists every member.
MAX_RELATED = 50
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {"error": "error", "warning": "warning"}
# SARIF's baselineState says whether a result is new relative to a baseline.
_BASELINE = {"new": "new", "existing": "unchanged", "known": "unchanged"}
_RULES = {
    "identical-file": "The same file is in two splits (or twice in one).",
    "identical-pixels": "The same decoded pixels are in two splits, saved as different files.",
    "near-duplicate": "A near-duplicate image (re-encoded, resized, cropped, flipped...) crosses splits.",
    "label-conflict": "One image is in a split twice, under two different labels.",
    "unreadable-image": "An image cannot be decoded: corrupt, truncated, empty or a decompression bomb.",
    "ambiguous-file": "A file matches the globs of several splits.",
    "missing-file": "A file the manifest lists is not on disk.",
    "unassigned-file": "An image belongs to no split.",
    "outside-root": "A symbolic link under root points outside it; its files are not checked.",
    "not-examined": "Something that may hold images was not examined: an unreadable folder, a path too long "
                    "to open, or a split in no compared pair.",
}
_HELP = {
    "identical-file": "Keep each cluster in one split: move or delete the copies.",
    "identical-pixels": "Keep each cluster in one split: move or delete the copies.",
    "near-duplicate": "Keep each cluster in one split: move or delete the copies.",
    "label-conflict": "Keep one copy, with the right label, and delete the others.",
    "unreadable-image": "Replace or delete the file.",
    "ambiguous-file": "Narrow the split globs in the policy so the file matches one split.",
    "missing-file": "Add the file, or remove its row from the manifest.",
    "unassigned-file": "Add the file to a split in the policy, or to `ignore`.",
    "outside-root": "Replace the link with the files themselves, or move its target under root.",
    "not-examined": "Make it readable, shorten the path, or add the split to a pair in `pairs.compare`.",
}


def _location(path: str, prefix: str) -> dict:
    # Percent-encoding the name's bytes keeps it exact, whatever they are
    # (quote() of a str would refuse bytes that are not UTF-8).
    return {"physicalLocation": {"artifactLocation": {"uri": quote(to_bytes(prefix + path), safe="/")}}}


def _rule(kind: str) -> dict:
    camel = "".join(part.capitalize() for part in kind.split("-"))
    return {
        "id": kind,
        "name": camel,
        "shortDescription": {"text": _RULES.get(kind, kind)},
        "help": {"text": _HELP.get(kind, "See the leakcheck report.")},
        "defaultConfiguration": {"level": "error"},
    }


def _linked(f: Finding, main: str) -> str:
    """How the member the result sits on joined the cluster."""
    m = next((m for m in f.members if m.path == main and m.link), None)
    return "" if m is None else f"; {main} {link_text(m)}"


def _result(f: Finding, index: int, prefix: str) -> dict:
    main = anchor(f)
    # A group lists every file, training first: its related locations show as many of each split.
    related = [m for m in (f.members if f.is_copy else examples(f, MAX_RELATED + 1)) if m.path != main]
    what = "copy" if f.is_copy else "file"
    return {
        "ruleId": f.kind,
        "ruleIndex": index,
        "level": _LEVEL.get(f.severity, "note"),
        "message": {"text": sarif_text(headline(f) + _linked(f, main))},
        "locations": [_location(main, prefix)],
        "relatedLocations": [
            {"id": n, **_location(m.path, prefix),
             "message": {"text": sarif_text(f"{m.split or 'no split'} {what}" + (f", {link_text(m)}" if m.link else ""))}}
            for n, m in enumerate(related[:MAX_RELATED], start=1)
        ],
        "partialFingerprints": {"leakcheckFindingId/v1": f.id},
        "baselineState": _BASELINE.get(f.status, "new"),
        "properties": {"findingId": f.id, "status": f.status, "splitPair": sarif_text(f.split_pair),
                       "evidence": f.evidence},
    }


def sarif_dict(report: Report, *, prefix: str = "") -> dict:
    seen = {f.kind for f in report.findings}
    kinds = [k for k in KINDS if k in seen] + sorted(seen - set(KINDS))
    index = {k: n for n, k in enumerate(kinds)}
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "leakcheck",
                "version": __version__,
                "informationUri": "https://pypi.org/project/pytest-leakcheck/",
                "rules": [_rule(k) for k in kinds],
            }},
            "results": [_result(f, index[f.kind], prefix) for f in report.findings
                        if f.severity in _LEVEL],
        }],
    }


def render(report: Report, *, prefix: str = "", **_: object) -> str:
    return defuse_json(json.dumps(sarif_dict(report, prefix=prefix), indent=2)) + "\n"
