"""JSON for machines: the whole report, read back by `leakcheck render` and the Action."""

from __future__ import annotations

import json

from ..report.model import Report, report_dict, unicode_only
from ..files.names import defuse_json


def render(report: Report, **_: object) -> str:
    return defuse_json(json.dumps(unicode_only(report_dict(report)), indent=2, sort_keys=False)) + "\n"
