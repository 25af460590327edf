"""The `leakcheck split` command: the CLI side of the split planner (split.py, splitapply.py).

It prints; the planner decides.  Kept apart from cli.py so each stays small.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from ..split import apply as splitapply
from ..split import moves
from ..split import plan as split
from ..errors import EXIT_CLEAN, UsageError
from ..files.escape import shell_word, terminal
from ..files.names import log_text
from ..policy.load import Policy, load


def run(args: argparse.Namespace, policy_path: Path, write: Callable[..., None]) -> int:
    """`leakcheck split`: write a manifest, or print (or, with --apply, perform) folder moves."""
    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {args.jobs}")
    if args.rollback:
        # The journal is checked against the policy's root before anything moves (split/journal.py).
        back = moves.rollback(moves.journal_path(policy_path), load(policy_path, need_manifest=False).root)
        print(f"leakcheck split: put {back} files back where they were")
        return EXIT_CLEAN
    policy = load(policy_path, need_manifest=False)
    folders = splitapply.split_folders(policy) if args.output is None and args.keep is None else None
    if args.output is None and folders is None:
        raise UsageError("-o MANIFEST is needed: the policy's splits are not one folder each",
                         fix="pass -o splits.csv, or use splits like `train: [data/train/**]`")
    if args.apply and folders is None:
        raise UsageError("--apply moves files between split folders; it does not go with -o or --keep")
    if args.test is None and folders is None:
        raise UsageError("--test is needed to write a manifest", fix="e.g. --test 0.2")
    names = tuple(n.strip() for n in args.names.split(","))
    current = None
    if folders is not None:  # repair the tree: the folders are the kept assignment
        names = _folder_names(policy.split_names)
        current = splitapply.current_splits(policy)  # refuses a split glob that matches nothing, as `check` does
    plan = split.plan(policy, test=args.test or 0.2, val=args.val, seed=args.seed, stratify=args.stratify,
                      keep=args.keep, names=names, jobs=args.jobs, use_cache=not args.no_cache, current=current)
    # Split names, labels and paths come from the policy and the dataset: one log line each.
    sys.stdout.write(log_text(splitapply.summary(plan, targets=folders is None)))
    if folders is not None:
        return _moves(args, policy, splitapply.tree_moves(plan, folders, current or {}))
    write(args.output, splitapply.kept_manifest(args.keep, plan) if args.keep else splitapply.manifest_text(plan),
           errors="surrogateescape")  # names as their bytes
    print(terminal(f"leakcheck split: wrote {args.output}"))
    if splitapply.split_folders(policy) is not None:
        print("leakcheck split: the folders still hold the old splits; point the policy at the manifest "
              "(`splits: {manifest: ...}`), or run without -o to move the files instead")
    return EXIT_CLEAN


def _folder_names(names: tuple[str, ...]) -> tuple[str, ...]:
    if len(names) == 3:
        return names
    if len(names) == 2:  # no val folder: a third name no file is ever planned into
        return (names[0], "(none)", names[1])
    raise UsageError(f"split folders can be repaired for 2 or 3 splits, the policy has {len(names)}",
                     fix="write a manifest instead: -o splits.csv")


def _moves(args: argparse.Namespace, policy: Policy, planned: list) -> int:
    if not planned:
        print("leakcheck split: every group and copy cluster is in one split folder already; nothing to move")
        return EXIT_CLEAN
    if not args.apply:
        tracked = moves.tracked(policy.root)
        for m in planned:
            verb = "git mv" if m.src in tracked else "mv"
            # One shell word per name, pasteable as it is, and never a raw newline,
            # escape sequence or workflow command on the terminal (escape.shell_word).
            print(f"{verb} {shell_word(m.src)} {shell_word(m.dst)}")
        print(terminal(f"leakcheck split: {len(planned)} moves (in {policy.root}); run with --apply to perform them"))
        return EXIT_CLEAN
    # All or none: validated whole first, journaled, rolled back on any failure (split/moves.py).
    done = moves.apply(policy.root, planned, moves.journal_path(policy.path), moves.tracked(policy.root))
    git = sum(m.git for m in done)
    print(terminal(f"leakcheck split: moved {len(done)} files ({git} with git mv) in {policy.root}"))
    return EXIT_CLEAN
