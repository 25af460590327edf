"""`leakcheck split`: the command-line side of the split planner (split/plan.py, split/apply.py).

It prints; the planner decides.  ``add_parser`` imports nothing the split itself needs, so
building the parser (`leakcheck --version`, `--help`) stays cheap; ``run`` imports the planner.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import EXIT_CLEAN, UsageError
from ...policy.locate import policy_path
from .. import output
from ..options import add_engine_options, add_policy, command

if TYPE_CHECKING:
    from ...policy.load import Policy


def add_parser(sub: argparse._SubParsersAction) -> None:
    spl = command(sub, "split", "write a manifest in which no group or copy spans splits, or, for "
                                "split folders, print (or --apply) the moves that make it so")
    add_policy(spl)
    spl.add_argument("--test", type=float, default=None,
                     help="share of files for test, e.g. 0.2 (needed to write a new manifest)")
    spl.add_argument("--val", type=float, default=0.0, help="share for val (default: 0: no val)")
    spl.add_argument("--seed", type=int, default=0, help="the same seed gives the same manifest")
    spl.add_argument("-o", "--output", type=Path,
                     help="manifest CSV to write (without it, a policy of split folders gets moves)")
    spl.add_argument("--apply", action="store_true",
                     help="split folders: perform the moves, all or none (git mv in a git work tree)")
    spl.add_argument("--rollback", action="store_true",
                     help="put back the files of a `split --apply` that was killed before it finished")
    spl.add_argument("--stratify", metavar="folder|COLUMN",
                     help="balance labels: the parent folder name, or a column of the manifest")
    spl.add_argument("--keep", type=Path, metavar="MANIFEST",
                     help="repair this manifest, changing as few assignments as possible")
    spl.add_argument("--names", default="train,val,test", help="split names (default: %(default)s)")
    add_engine_options(spl, quiet=False)  # the planner shows no progress


def run(args: argparse.Namespace) -> int:
    """Write a manifest, or print (or, with --apply, perform) folder moves."""
    from ...split import apply as splitapply
    from ...split import moves

    from ...policy.load import load
    from ...split.clusters import refuse_shards

    path = policy_path(args.policy)
    if args.rollback:
        # The journal is checked against the policy's root before anything moves (split/journal.py).
        back = moves.rollback(moves.journal_path(path), load(path, need_manifest=False).root)
        print(f"leakcheck split: put {back} files back where they were")
        return EXIT_CLEAN

    policy = load(path, need_manifest=False)
    refuse_shards(policy)  # before the option checks: no option makes a plan for shards
    folders = splitapply.split_folders(policy) if args.output is None and args.keep is None else None
    if args.output is None and folders is None:
        raise UsageError("-o MANIFEST is needed: the policy's splits are not one folder each",
                         fix="pass -o splits.csv, or use splits like `train: [data/train/**]`")
    if args.apply and folders is None:
        raise UsageError("--apply moves files between split folders; it does not go with -o or --keep")
    if args.test is None and folders is None and args.keep is None and policy.split_sources is not None:
        if policy.manifest is not None:
            raise UsageError("--keep or --test is needed to write a manifest",
                             fix=f"--keep {policy.manifest.name} repairs the policy's manifest; --test 0.2 writes a new split")
        return repair_source(args, policy)
    if args.test is None and folders is None:
        raise UsageError("--test is needed to write a manifest", fix="e.g. --test 0.2")
    if folders is None:
        return manifest(args, policy)
    return repair_folders(policy, folders, args)


def _plan(args: argparse.Namespace, policy: Policy, names: tuple[str, ...], current: dict | None, *,
          targets: bool):
    """The planner's answer, its summary printed (split names, labels and paths: one log line each)."""
    import sys

    from ...files.names import log_text
    from ...split import apply as splitapply
    from ...pipeline.options import RunOptions
    from ...split import plan as planner

    shares = planner.Shares(args.test or 0.2, args.val, args.seed, args.stratify, names)
    plan = planner.plan(policy, shares, keep=args.keep, current=current,
                        opts=RunOptions(jobs=args.jobs, use_cache=not args.no_cache))
    sys.stdout.write(log_text(splitapply.summary(plan, targets=targets)))
    return plan


def manifest(args: argparse.Namespace, policy: Policy) -> int:
    """Write a new manifest (--test), or repair one (--keep)."""
    from ...files.escape import terminal
    from ...split import apply as splitapply

    plan = _plan(args, policy, tuple(n.strip() for n in args.names.split(",")), None, targets=True)
    output.write(args.output, splitapply.kept_manifest(args.keep, plan) if args.keep
                 else splitapply.manifest_text(plan), errors="surrogateescape")  # names as their bytes
    print(terminal(f"leakcheck split: wrote {args.output}"))
    if splitapply.split_folders(policy) is not None:
        print("leakcheck split: the folders still hold the old splits; point the policy at the manifest "
              "(`splits: {manifest: ...}`), or run without -o to move the files instead")
    return EXIT_CLEAN


def repair_source(args: argparse.Namespace, policy: Policy) -> int:
    """Splits a source assigns (lists, tables, COCO...): a manifest that keeps them, changing only what must
    change. Without it, the way on was ``--test``: a new random split in place of a benchmark's own."""
    from ...files.escape import terminal
    from ...split import apply as splitapply

    current = splitapply.current_splits(policy)  # refuses a split that holds nothing, as `check` does
    plan = _plan(args, policy, _folder_names(_source_names(policy, current)), current, targets=False)
    output.write(args.output, splitapply.manifest_text(plan), errors="surrogateescape")
    moved = plan.moved  # the kept files whose split changed, as the summary counts them
    print(terminal(f"leakcheck split: wrote {args.output}, the policy's splits with {moved} "
                   f"file{'s' * (moved != 1)} moved; point the policy at it: `splits: {{manifest: {args.output.name}}}`"))
    return EXIT_CLEAN


def repair_folders(policy: Policy, folders: dict, args: argparse.Namespace) -> int:
    """Split folders: the folders are the kept assignment; print the moves, or perform them (--apply)."""
    from ...split import apply as splitapply, sidecars

    names = _folder_names(policy.split_names)
    current = splitapply.current_splits(policy)  # refuses a split glob that matches nothing, as `check` does
    plan = _plan(args, policy, names, current, targets=False)
    planned = splitapply.tree_moves(plan, folders, current or {})
    # An image's annotations (YOLO's labels/x.txt, a JSON beside it) move with it (split/sidecars.py).
    return _moves(policy, planned + sidecars.beside(policy.root, planned, current or {}), apply=args.apply)


def _source_names(policy: Policy, current: dict[str, str]) -> tuple[str, ...]:
    """The policy's split names, or those its source assigns (a split column names them only in its
    rows), train first and test last, as the planner orders its three."""
    from ...sources.base import split_word

    names = policy.split_names or tuple(dict.fromkeys(sorted(set(current.values()))))
    order = {"train": 0, "val": 1, "test": 2}
    return tuple(sorted(names, key=lambda n: order.get(split_word(n) or "", 1)))


def _folder_names(names: tuple[str, ...]) -> tuple[str, ...]:
    if len(names) == 3:
        return names
    if len(names) == 2:  # no val folder: a third name no file is ever planned into
        return (names[0], "(none)", names[1])
    raise UsageError(f"split folders can be repaired for 2 or 3 splits, the policy has {len(names)}",
                     fix="write a manifest instead: -o splits.csv")


def _moves(policy: Policy, planned: list, *, apply: bool) -> int:
    from ...files.escape import shell_word, terminal
    from ...split import moves

    if not planned:
        print("leakcheck split: every group and copy cluster is in one split folder already; nothing to move")
        return EXIT_CLEAN
    if not apply:
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
