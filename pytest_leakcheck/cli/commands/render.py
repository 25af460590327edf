"""`leakcheck render`: a saved JSON report in another format."""

from __future__ import annotations

import argparse
from pathlib import Path

from ...errors import EXIT_CLEAN
from ...render import formats
from .. import output
from ..options import Rendering, add_render_options, command, rendering


def add_parser(sub: argparse._SubParsersAction) -> None:
    ren = command(sub, "render", "render a saved JSON report in another format")
    ren.add_argument("report", type=Path, help="a report written by `check --format json`")
    ren.add_argument("--format", choices=formats(), default="text", help="report format (default: text)")
    ren.add_argument("-o", "--output", type=Path, help="write here instead of stdout")
    ren.add_argument("--max-findings", type=int, default=50, help="findings shown in full (0: all)")
    add_render_options(ren)


def run(args: argparse.Namespace) -> int:
    return render(args.report, rendering(args))


def render(report_file: Path, how: Rendering) -> int:
    from ...errors import PolicyError
    from ...policy.load import load
    from ...render import links
    from ...report.model import load_report

    report, root = load_report(report_file), None
    if how.path_prefix is None and links(how.format):
        try:
            root = load(report.policy_path).root
        except PolicyError:
            root = None  # rendering elsewhere than the check ran: paths stay root-relative
    output.emit(report, how, root)
    return EXIT_CLEAN
