"""`leakcheck hook`: the pre-commit hook, the staged images checked against the whole dataset."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ...errors import EXIT_CLEAN
from ...policy.locate import policy_path
from ..options import add_policy, command


def add_parser(sub: argparse._SubParsersAction) -> None:
    hook = command(sub, "hook", "pre-commit hook: check the given images against the whole dataset")
    add_policy(hook)
    hook.add_argument("--max-findings", type=int, default=20, help="findings shown in full (0: all)")
    hook.add_argument("files", nargs="*", help="staged files, relative to the current folder")


def run(args: argparse.Namespace) -> int:
    return hook(args.policy, args.files, args.max_findings)


def hook(policy_file: Path | None, files: Sequence[str], max_findings: int) -> int:
    from ...ci.hook import classify
    from ...policy.load import load

    policy = load(policy_path(policy_file))
    staged = classify(policy, files)
    if staged.nothing:  # no staged image or policy input: nothing to hash, nothing to import
        return EXIT_CLEAN
    from ...pipeline.run import check
    from ...render import render

    if staged.inputs:  # a split, group or verdict may have moved anywhere: check as `check` does
        print("leakcheck hook: a file the policy reads is staged; checking the whole dataset", file=sys.stderr)
    report = check(policy=policy, focus=None if staged.inputs else staged.focus)
    if report.findings:
        sys.stdout.write(render(report, "text", max_findings=max_findings))
    return report.exit_code
