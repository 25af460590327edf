"""``leakcheck`` on the command line: the parser, dispatch to cli/commands/, exit codes.

Exit codes: 0 clean, 1 error-level findings, 2 usage, policy or store error,
3 internal error, 130 / 143 interrupted (Ctrl-C / SIGTERM).  Errors print as
``Error: ...`` on stderr, never as a traceback (unless --debug).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import traceback
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from ..errors import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    EXIT_USAGE,
    LeakcheckError,
    Terminated,
)
from ..signals import heap
from ..version import __version__
from .commands import check, export, fingerprint, hook, init, render, review, split
from .options import EXECUTOR_NOTE

#: Set to 1 to see the traceback of an internal error (as --debug does).
DEBUG_ENV = "LEAKCHECK_DEBUG"

#: Each command's module, in the order `leakcheck --help` lists them.  A module may serve
#: several commands (review: baseline, judge, report); its ``run`` reads ``args.command``.
COMMANDS: dict[str, ModuleType] = {
    "check": check,
    "render": render,
    "fingerprint": fingerprint,
    "split": split,
    "export": export,
    "baseline": review,
    "judge": review,
    "report": review,
    "hook": hook,
    "init": init,
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"Error: {message}\n")


def parser() -> argparse.ArgumentParser:
    top = _Parser(prog="leakcheck", description="Find train/test leakage in image datasets.",
                  epilog="Exit codes: 0 clean, 1 error-level findings outside the baseline, "
                         f"2 usage, policy or store error, 3 internal error. {EXECUTOR_NOTE}")
    top.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = top.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for module in dict.fromkeys(COMMANDS.values()):  # each module once, in the table's order
        module.add_parser(sub)
    top.add_argument("--debug", action="store_true", help=f"traceback of an internal error ({DEBUG_ENV}=1)")
    for cmd in sub.choices.values():  # `leakcheck check --debug` too; SUPPRESS keeps a top-level --debug
        cmd.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                         help=f"show the traceback of an internal error ({DEBUG_ENV}=1)")
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    heap.keep_freed_memory()  # the command's process is ours (signals/heap.py)
    previous = _on_sigterm()
    try:
        return COMMANDS[args.command].run(args)
    except LeakcheckError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # `leakcheck init . | head -2`: the reader left, which is no bug of ours
        _silence_stdout()
        print("Error: output cut short: the program reading it closed the pipe", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("Error: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated:
        print("Error: terminated (SIGTERM)", file=sys.stderr)
        return EXIT_TERMINATED
    except Exception as exc:  # a bug: one line and exit 3, never 1 ("leaks found")
        return _internal_error(args, exc)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _silence_stdout() -> None:
    """Point stdout at the null device, so the interpreter's last flush does not fail on the closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real stdout (an embedding caller): nothing to flush
        pass


def _internal_error(args: argparse.Namespace, exc: Exception) -> int:
    if args.debug or os.environ.get(DEBUG_ENV, "") not in ("", "0"):
        traceback.print_exc()
    what = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]  # one line, whatever the message
    print(f"Error: internal error in `leakcheck {args.command}`: {what!r}; "
          f"run with --debug or {DEBUG_ENV}=1 for the traceback", file=sys.stderr)
    return EXIT_INTERNAL


def _on_sigterm() -> Any:
    """Turn SIGTERM (a cancelled CI job) into :class:`Terminated`, which unwinds
    like Ctrl-C: worker pools stopped, store transactions rolled back.  Returns
    the handler to restore, or None off the main thread (no handler there)."""

    def terminated(signum: int, frame: object) -> None:
        raise Terminated()

    try:
        return signal.signal(signal.SIGTERM, terminated)
    except ValueError:  # signals can only be handled on the main thread
        return None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
