"""`leakcheck init`: write a commented leakcheck.yaml, guessing the splits from the tree."""

from __future__ import annotations

import argparse
from pathlib import Path

from ...errors import EXIT_CLEAN, UsageError
from ...files.names import log_line
from ...policy.load import DEFAULT_POLICY_NAME
from .. import output
from ..options import command


def add_parser(sub: argparse._SubParsersAction) -> None:
    ini = command(sub, "init", "write a commented leakcheck.yaml, guessing splits from the tree")
    ini.add_argument("root", nargs="?", type=Path, default=Path("."), help="dataset folder (default: .)")
    ini.add_argument("-o", "--output", type=Path, help=f"policy path (default: ROOT/{DEFAULT_POLICY_NAME})")
    ini.add_argument("--force", action="store_true", help="overwrite an existing policy")


def run(args: argparse.Namespace) -> int:
    return init(args.root, args.output, force=args.force)


def init(root: Path, out: Path | None, *, force: bool) -> int:
    if not root.is_dir():
        raise UsageError(f"folder {root} does not exist", fix="pass the dataset folder: leakcheck init DATA")
    out = out or root / DEFAULT_POLICY_NAME
    if out.exists() and not force:
        raise UsageError(f"{out} already exists", fix="pass --force to overwrite it")
    from ...init import recognise

    found = recognise.detect(root)  # nothing recognised: exit 2, never placeholder globs
    # Written before anything is printed: a reader that stops early (`| head`) costs no policy.
    output.write(out, recognise.policy_text(found))
    for line in found.found:  # names from the dataset: one log line each
        print(log_line(f"Found: {line}"))
    for line in found.not_set_up:
        print(log_line(f"Not set up: {line}"))
    for line in found.warnings:
        print(log_line(f"Warning: {line}"))
    print(log_line(f"Wrote {out}. Review it, then run: leakcheck check --policy {out}"))
    print("The signature store goes to .leakcheck/ beside it, which ignores itself in git: commit the policy only.")
    return EXIT_CLEAN
