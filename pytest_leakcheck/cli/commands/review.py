"""The review commands: `leakcheck baseline`, `judge` and `report` (the HTML page to judge from).

Each runs a full check first, the same way, then records or renders what it found.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import EXIT_CLEAN, UsageError
from ...files.names import log_line
from ...policy.locate import policy_path
from .. import output
from ..options import Engine, add_engine_options, add_policy, command, engine

if TYPE_CHECKING:
    from ...policy.load import Policy
    from ...report.model import Report


def add_parser(sub: argparse._SubParsersAction) -> None:
    bas = command(sub, "baseline", "record the current findings so they stop failing the check")
    _add_engine(bas)
    bas.add_argument("--prune", action="store_true", help="drop entries that match no finding any more")

    jud = command(sub, "judge", "record a verdict for one finding in the baseline")
    jud.add_argument("finding_id", help="the id shown in every report (a unique prefix of 6+ digits is enough)")
    jud.add_argument("verdict", choices=("duplicate", "distinct"),
                     help="duplicate: a real leak accepted for now; distinct: a false alarm")
    jud.add_argument("--reason", required=True, help="why, for the next reviewer")
    jud.add_argument("--replace", action="store_true",
                     help="replace a verdict the finding already has (it is printed)")
    _add_engine(jud)

    rep = command(sub, "report", "write a self-contained HTML report to review findings; "
                                 "exits like `check` (1 when error-level findings fail)")
    rep.add_argument("--html", type=Path, required=True, metavar="PATH", help="where to write the report")
    _add_engine(rep)


def _add_engine(p: argparse.ArgumentParser) -> None:
    add_policy(p)
    add_engine_options(p)


def run(args: argparse.Namespace) -> int:
    run_with = engine(args)
    if args.command == "baseline":
        return baseline(args.policy, run_with, prune=args.prune)
    if args.command == "judge":
        return judge(args.policy, run_with, args.finding_id, args.verdict, args.reason, replace=args.replace)
    return report(args.policy, run_with, args.html)


def _load(given: Path | None) -> Policy:
    from ...policy.load import load

    return load(policy_path(given))


def _run(policy: Policy, run_with: Engine) -> Report:
    from ...pipeline.run import check

    timer = output.progress(run_with.quiet)
    found = check(policy=policy, jobs=run_with.jobs, use_cache=run_with.use_cache, progress=timer)
    output.timing(found, timer)
    return found


def baseline(policy_file: Path | None, run_with: Engine, *, prune: bool) -> int:
    from ...report import baseline as baselines

    policy = _load(policy_file)
    # Locked for the whole run: a judge meanwhile would make the statuses recorded stale.
    with baselines.locked(policy.baseline):
        judged = baselines.load(policy.baseline)
        update = baselines.record(_run(policy, run_with), judged, prune=prune)
        baselines.save(update.baseline)
    line = f"Wrote {policy.baseline}: {len(update.baseline.entries)} entries, {update.added} added"
    if update.pruned:
        line += f", {update.pruned} stale pruned"
    if update.stale:
        line += f", {update.stale} stale kept (--prune drops them)"
    if update.stamped:
        line += f", {update.stamped} given their splits"
    print(log_line(line))  # the baseline path comes from the policy
    for old in update.dropped:  # never silently: the finding moved to other splits
        print(log_line(f"{old.id}: spans other splits now; dropped its verdict {old.describe()}; judge it again"))
    return EXIT_CLEAN


def judge(policy_file: Path | None, run_with: Engine, finding_id: str, verdict: str, reason: str, *,
          replace: bool) -> int:
    from ...report import baseline as baselines

    baselines.check_prefix(finding_id)  # a bad id fails before the check runs
    policy = _load(policy_file)
    findings = _run(policy, run_with).findings  # the check reads the baseline first: a broken one fails fast
    with baselines.locked(policy.baseline):  # read again and written under the lock: no verdict is lost
        judged = baselines.load(policy.baseline)
        # A prefix must be unique among entries and current findings; a verdict holds for the splits of now.
        entry = judged.resolve(finding_id, findings)
        if entry is None:
            raise UsageError(f"finding id {finding_id!r} is in neither the baseline nor the current findings",
                             fix="copy an id from `leakcheck check` or the HTML report")
        done = baselines.judge(judged, entry, verdict, reason, replace_verdict=replace)
        baselines.save(done.baseline)
    if done.replaced is not None:
        print(log_line(f"{entry.id}: replaced {done.replaced.describe()}"))
    print(log_line(f"{entry.id}: {done.entry.describe()}, recorded in {policy.baseline}"))
    return EXIT_CLEAN


def report(policy_file: Path | None, run_with: Engine, html: Path) -> int:
    from ...detectors import thresholds
    from ...files.atomic import write_atomic
    from ...render import render

    policy = _load(policy_file)
    found = _run(policy, run_with)
    write_atomic(html, render(found, "html", root=policy.root, max_pixels=policy.files.max_pixels,
                              thresholds=thresholds(policy)))
    print(f"leakcheck: {len(found.findings)} findings; review them in {html}", file=sys.stderr)
    return found.exit_code
