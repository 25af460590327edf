"""`leakcheck check`: check the dataset and report; exit 1 on error-level findings."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

from ...errors import UsageError
from ...policy.locate import policy_path
from ...render import formats
from .. import output
from ..options import (Engine, Rendering, add_executor, add_jobs, add_no_cache, add_policy, add_quiet,
                       add_render_options, command, engine, rendering)


def add_parser(sub: argparse._SubParsersAction) -> None:
    chk = command(sub, "check", "check the dataset; exit 1 on error-level findings")
    add_policy(chk)
    chk.add_argument("--format", choices=formats(), default="text", help="report format (default: text)")
    chk.add_argument("-o", "--output", type=Path, help="write the report here instead of stdout")
    add_jobs(chk)
    chk.add_argument("--max-findings", type=int, default=50, help="findings shown in full in text (0: all)")
    add_no_cache(chk)
    add_executor(chk)
    chk.add_argument("--changed-since", metavar="REF",
                     help="pull request mode: findings that involve files changed since REF are new")
    chk.add_argument("--base-report", type=Path, metavar="JSON",
                     help="with --changed-since: a JSON report of a full check at REF; then only "
                          "changed files are searched")
    chk.add_argument("--fail-on", choices=("new", "all"),
                     help="which error-level findings fail (default: new with --changed-since, else all)")
    add_quiet(chk)
    add_render_options(chk)


@dataclass(frozen=True)
class Since:
    """Pull request mode: the base commit, a report of a full check there, and what fails."""

    ref: str | None = None
    base_report: Path | None = None
    fail_on: str | None = None


def run(args: argparse.Namespace) -> int:
    since = Since(ref=args.changed_since, base_report=args.base_report, fail_on=args.fail_on)
    return check(args.policy, engine(args), args.executor, since, rendering(args))


def executor_address(flag: str | None) -> str | None:
    """--executor, else $LEAKCHECK_EXECUTOR, checked; None runs locally.  Only `check` reads them."""
    from ...signals.executors import ENV, check_address

    address = flag or os.environ.get(ENV, "").strip()
    if not address:
        return None
    return check_address(address, where="--executor" if flag else ENV)


def check(policy_file: Path | None, run_with: Engine, executor: str | None, since: Since, how: Rendering) -> int:
    from ...ci import pullrequest
    from ...pipeline.run import check as run_check
    from ...policy.load import load

    if since.base_report and not since.ref:
        raise UsageError("--base-report needs --changed-since REF", fix="name the commit the report was made at")
    policy = load(policy_path(policy_file))
    timer = output.progress(run_with.quiet)
    options: dict = {"jobs": run_with.jobs, "use_cache": run_with.use_cache, "progress": timer}
    address = executor_address(executor)
    if address:
        options["executor"] = address
    if since.ref:
        base = None
        if since.base_report:
            from ...report.model import load_report

            base = load_report(since.base_report)
        try:
            report = pullrequest.check_since(policy, since.ref, base_report=base, **options)
        except UsageError as exc:  # the library speaks of a base commit; the user typed a flag
            raise UsageError(f"--changed-since: {exc.problem}", path=exc.path, key=exc.key, fix=exc.fix) from None
    else:
        report = run_check(policy=policy, **options)
    output.emit(report, how, policy.root, policy)
    output.timing(report, timer)
    return pullrequest.exit_code(report, since.fail_on or ("new" if since.ref else "all"))
