"""JSON for machines: the whole report, read back by `leakcheck render` and the Action."""

from __future__ import annotations

import json

from ..model import Report, report_dict


def render(report: Report, **_: object) -> str:
    return json.dumps(report_dict(report), indent=2, sort_keys=False) + "\n"
