"""Read a JSON report (``--format json``) back into a :class:`Report`.

The Action renders its summary, annotations and SARIF from the one report
it checked, and a pull request takes existing findings from the report of
a full check on its base commit.
"""

from __future__ import annotations

import json
from pathlib import Path

from .errors import UsageError
from .findings import Finding, Member, Pair, Report
from .names import from_bytes
from .report import JSON_SCHEMA_VERSION


def _path(d: dict, name: str) -> str:
    """The exact path: from ``{name}_bytes`` (hex) when the name is not UTF-8, see report._path_fields."""
    raw = d.get(f"{name}_bytes")
    return from_bytes(bytes.fromhex(raw)) if isinstance(raw, str) else d[name]


def finding_from_dict(d: dict) -> Finding:
    return Finding(
        id=str(d["id"]),
        kind=str(d["kind"]),
        severity=str(d["severity"]),
        members=tuple(Member(_path(m, "path"), m.get("split", ""), m.get("digest", "")) for m in d["members"]),
        evidence=dict(d.get("evidence") or {}),
        orientation=d.get("orientation", "identity"),
        pairs=tuple(
            Pair(_path(p, "a"), _path(p, "b"), p["detector"], p["value"], p.get("orientation", "identity"),
                 dict(p.get("signals") or {}))
            for p in d.get("pairs") or ()
        ),
        message=d.get("message", ""),
        strength=float(d.get("strength", 1.0)),
        status=d.get("status", "new"),
    )


def load_report(path: str | Path) -> Report:
    """The report saved at ``path``; a clear error if it is not one of ours."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError("report file not found", path=str(path),
                         fix="write one with `leakcheck check --format json -o PATH`") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"cannot read report: {exc}", path=str(path)) from None
    if not isinstance(data, dict) or data.get("schema") != "pytest-leakcheck/report":
        raise UsageError("not a leakcheck JSON report", path=str(path),
                         fix="write one with `leakcheck check --format json -o PATH`")
    if data.get("version") != JSON_SCHEMA_VERSION:
        raise UsageError(f"report version {data.get('version')!r} is not {JSON_SCHEMA_VERSION}",
                         path=str(path), fix="re-run the check with this version of leakcheck")
    try:
        found = tuple(finding_from_dict(f) for f in data.get("findings", ()))
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"malformed finding in report: {exc}", path=str(path)) from None
    return Report(
        policy_path=str(data.get("policy", "")),
        findings=found,
        stats=dict(data.get("stats") or {}),
        warnings=tuple(data.get("warnings") or ()),
    )
