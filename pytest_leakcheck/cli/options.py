"""Options more than one command takes, each declared here once.

`leakcheck check`, `split`, `export` and the review commands run the same engine, so they
take the same `--policy`, `-j`, `--no-cache` and `-q`, worded the same everywhere; a
test (tests/cli/test_options.py) keeps any other module from declaring them again.
Nothing here imports more than argparse: building the parser stays cheap.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from ..policy.load import DEFAULT_POLICY_NAME

#: What `leakcheck --help` says about where the work runs: only `check` sends it to a cluster.
EXECUTOR_NOTE = ("Only `check` decodes on a Dask cluster (--executor, $LEAKCHECK_EXECUTOR); "
                 "the other commands use local worker processes.")


def positive_int(text: str) -> int:
    """An argparse ``type=`` for counts such as ``--jobs``: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def command(sub: argparse._SubParsersAction, name: str, text: str) -> argparse.ArgumentParser:
    """A subcommand whose --help opens with the same line `leakcheck --help` lists it by."""
    return sub.add_parser(name, help=text, description=text)


def add_policy(p: argparse.ArgumentParser) -> None:
    p.add_argument("--policy", type=Path, help=f"policy file (default: nearest {DEFAULT_POLICY_NAME})")


def add_jobs(p: argparse.ArgumentParser) -> None:
    p.add_argument("-j", "--jobs", type=positive_int, default=None, help="worker processes (default: all cores)")


def add_no_cache(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-cache", action="store_true", help="ignore and do not write the signature store")


def add_quiet(p: argparse.ArgumentParser) -> None:
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress bars on a terminal (the one-line timing summary stays)")


def add_executor(p: argparse.ArgumentParser) -> None:
    """Only `check` takes it (EXECUTOR_NOTE); the flag and the environment are the workflow owner's,
    never the policy's (docs/security.md)."""
    p.add_argument("--executor", metavar="tcp://HOST:8786",
                   help="decode on this Dask scheduler's workers (default: $LEAKCHECK_EXECUTOR, else local); "
                        "a policy cannot choose this")


def add_engine_options(p: argparse.ArgumentParser, *, quiet: bool = True) -> None:
    """How a command that runs the check runs it: ``-j``, ``--no-cache`` and (unless it shows no
    progress) ``-q``.  `check` adds the same options one by one, in the order of its --help."""
    add_jobs(p)
    add_no_cache(p)
    if quiet:
        add_quiet(p)


def add_render_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--blob-url", metavar="URL",
                   help="markdown thumbnails: https://github.com/OWNER/REPO/blob/SHA")
    p.add_argument("--path-prefix", metavar="DIR/",
                   help="prepended to paths in sarif/annotations/markdown "
                        "(default: the policy root relative to the git repository)")


@dataclass(frozen=True)
class Engine:
    """The engine options as plain values, for handlers that take no Namespace."""

    jobs: int | None = None
    use_cache: bool = True
    quiet: bool = False


def engine(args: argparse.Namespace) -> Engine:
    return Engine(jobs=args.jobs, use_cache=not args.no_cache, quiet=getattr(args, "quiet", False))


@dataclass(frozen=True)
class Rendering:
    """How `check` and `render` write a report: the format and where, and the link options."""

    format: str = "text"
    output: Path | None = None
    max_findings: int = 50
    blob_url: str | None = None
    path_prefix: str | None = None


def rendering(args: argparse.Namespace) -> Rendering:
    return Rendering(format=args.format, output=args.output, max_findings=args.max_findings,
                     blob_url=args.blob_url, path_prefix=args.path_prefix)
