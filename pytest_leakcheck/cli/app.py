"""``leakcheck`` on the command line.

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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..version import __version__
from .splitargs import add_parser as split_options
from ..errors import (
    EXIT_CLEAN,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    EXIT_USAGE,
    LeakcheckError,
    Terminated,
    UsageError,
)
from ..files.names import log_line
from ..policy.load import DEFAULT_POLICY_NAME
from ..render import formats

#: Set to 1 to see the traceback of an internal error (as --debug does).
DEBUG_ENV = "LEAKCHECK_DEBUG"

if TYPE_CHECKING:
    from ..report.model import Report
    from ..policy.load import Policy
    from ..progress import Timer


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"Error: {message}\n")


def find_policy(start: Path | None = None) -> Path:
    """``leakcheck.yaml`` in the current folder or the nearest parent, up to the repo root."""
    here = (start or Path.cwd()).absolute()
    for folder in (here, *here.parents):
        candidate = folder / DEFAULT_POLICY_NAME
        if candidate.is_file():
            return candidate
        if (folder / ".git").exists():
            break
    raise UsageError(
        f"no {DEFAULT_POLICY_NAME} in {here} or its parents",
        fix="run `leakcheck init` to write one, or pass --policy PATH",
    )


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="leakcheck", description="Find train/test leakage in image datasets.",
                     epilog="Exit codes: 0 clean, 1 error-level findings outside the baseline, "
                            "2 usage, policy or store error, 3 internal error.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    chk = _command(sub, "check", "check the dataset; exit 1 on error-level findings")
    chk.add_argument("--policy", type=Path, help=f"policy file (default: nearest {DEFAULT_POLICY_NAME})")
    chk.add_argument("--format", choices=formats(), default="text", help="report format (default: text)")
    chk.add_argument("-o", "--output", type=Path, help="write the report here instead of stdout")
    chk.add_argument("-j", "--jobs", type=int, default=None, help="worker processes (default: all cores)")
    chk.add_argument("--max-findings", type=int, default=50, help="findings shown in full in text (0: all)")
    chk.add_argument("--no-cache", action="store_true", help="ignore and do not write the signature store")
    chk.add_argument("--executor", metavar="tcp://HOST:8786",
                     help="decode on this Dask scheduler's workers (default: $LEAKCHECK_EXECUTOR, else local); "
                          "a policy cannot choose this")
    chk.add_argument("--changed-since", metavar="REF",
                     help="pull request mode: findings that involve files changed since REF are new")
    chk.add_argument("--base-report", type=Path, metavar="JSON",
                     help="with --changed-since: a JSON report of a full check at REF; then only "
                          "changed files are searched")
    chk.add_argument("--fail-on", choices=("new", "all"),
                     help="which error-level findings fail (default: new with --changed-since, else all)")
    _add_quiet(chk)
    _add_render_options(chk)

    ren = _command(sub, "render", "render a saved JSON report in another format")
    ren.add_argument("report", type=Path, help="a report written by `check --format json`")
    ren.add_argument("--format", choices=formats(), default="text", help="report format (default: text)")
    ren.add_argument("-o", "--output", type=Path, help="write here instead of stdout")
    ren.add_argument("--max-findings", type=int, default=50, help="findings shown in full (0: all)")
    _add_render_options(ren)

    fpr = _command(sub, "fingerprint", "print the signature-parameter fingerprint (a cache key)")
    fpr.add_argument("--policy", type=Path, help=f"policy file (default: nearest {DEFAULT_POLICY_NAME})")
    fpr.add_argument("--cache-dir", action="store_true",
                     help="print the absolute folder of the policy's signature store instead")

    split_options(sub, DEFAULT_POLICY_NAME)  # `leakcheck split`'s options live with the command

    exp = _command(sub, "export", "write one row per image (split, group, digests, hashes, copy cluster)")
    exp.add_argument("-o", "--output", type=Path, help="CSV, JSON lines or Parquet file (default: CSV on stdout)")
    exp.add_argument("--format", choices=("csv", "jsonl", "parquet"), help="default: from the output suffix")
    _common(exp)

    bas = _command(sub, "baseline", "record the current findings so they stop failing the check")
    _common(bas)
    bas.add_argument("--prune", action="store_true", help="drop entries that match no finding any more")

    jud = _command(sub, "judge", "record a verdict for one finding in the baseline")
    jud.add_argument("finding_id", help="the id shown in every report (a unique prefix of 6+ digits is enough)")
    jud.add_argument("verdict", choices=("duplicate", "distinct"),
                     help="duplicate: a real leak accepted for now; distinct: a false alarm")
    jud.add_argument("--reason", required=True, help="why, for the next reviewer")
    jud.add_argument("--replace", action="store_true",
                     help="replace a verdict the finding already has (it is printed)")
    _common(jud)

    rep = _command(sub, "report", "write a self-contained HTML report to review findings; "
                                        "exits like `check` (1 when error-level findings fail)")
    rep.add_argument("--html", type=Path, required=True, metavar="PATH", help="where to write the report")
    _common(rep)

    hook = _command(sub, "hook", "pre-commit hook: check the given images against the whole dataset")
    hook.add_argument("--policy", type=Path, help=f"policy file (default: nearest {DEFAULT_POLICY_NAME})")
    hook.add_argument("--max-findings", type=int, default=20, help="findings shown in full (0: all)")
    hook.add_argument("files", nargs="*", help="staged files, relative to the current folder")

    ini = _command(sub, "init", "write a commented leakcheck.yaml, guessing splits from the tree")
    ini.add_argument("root", nargs="?", type=Path, default=Path("."), help="dataset folder (default: .)")
    ini.add_argument("-o", "--output", type=Path, help=f"policy path (default: ROOT/{DEFAULT_POLICY_NAME})")
    ini.add_argument("--force", action="store_true", help="overwrite an existing policy")
    parser.add_argument("--debug", action="store_true", help=f"traceback of an internal error ({DEBUG_ENV}=1)")
    for cmd in sub.choices.values():  # `leakcheck check --debug` too; SUPPRESS keeps a top-level --debug
        cmd.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                         help=f"show the traceback of an internal error ({DEBUG_ENV}=1)")
    return parser


def _command(sub: argparse._SubParsersAction, name: str, text: str) -> argparse.ArgumentParser:
    """A subcommand whose --help opens with the same line `leakcheck --help` lists it by."""
    return sub.add_parser(name, help=text, description=text)


def _add_render_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--blob-url", metavar="URL",
                   help="markdown thumbnails: https://github.com/OWNER/REPO/blob/SHA")
    p.add_argument("--path-prefix", metavar="DIR/",
                   help="prepended to paths in sarif/annotations/markdown "
                        "(default: the policy root relative to the git repository)")


def _common(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("--policy", type=Path, help=f"policy file (default: nearest {DEFAULT_POLICY_NAME})")
    cmd.add_argument("-j", "--jobs", type=int, default=None, help="worker processes (default: all cores)")
    cmd.add_argument("--no-cache", action="store_true", help="ignore and do not write the signature store")
    _add_quiet(cmd)


def _add_quiet(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("-q", "--quiet", action="store_true",
                     help="no progress bars on a terminal (the one-line timing summary stays)")


def _progress(args: argparse.Namespace) -> Timer:
    """Bars on stderr when it is a terminal; in CI logs and under --quiet only timings."""
    from ..progress import for_stream

    return for_stream(sys.stderr, quiet=args.quiet)


def _timing(report: Report, progress: Timer) -> None:
    progress.done()
    total = float(report.stats.get("seconds", 0.0))
    print(f"leakcheck: {report.stats.get('files', 0)} images in {progress.summary(total)}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    previous = _on_sigterm()
    try:
        if args.command == "init":
            return _init(args)
        if args.command == "hook":
            return _hook(args)
        if args.command == "split":
            from . import split as splitcli

            return splitcli.run(args, args.policy or find_policy(), _write)
        if args.command == "render":
            return _render(args)
        if args.command == "fingerprint":
            return _fingerprint(args)
        if args.command == "export":
            return _export(args)
        if args.command in ("baseline", "judge", "report"):
            return _REVIEW[args.command](args)
        return _check(args)
    except LeakcheckError as exc:
        print(f"Error: {exc}", file=sys.stderr)
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


def _check(args: argparse.Namespace) -> int:
    from ..ci import pullrequest
    from ..pipeline.run import check
    from ..policy.load import load

    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {args.jobs}")
    if args.base_report and not args.changed_since:
        raise UsageError("--base-report needs --changed-since REF", fix="name the commit the report was made at")
    policy = load(args.policy or find_policy())
    progress = _progress(args)
    options = {"jobs": args.jobs, "use_cache": not args.no_cache, "progress": progress}
    from ..signals.executors import ENV, check_address

    executor = args.executor or os.environ.get(ENV, "").strip()
    if executor:
        options["executor"] = check_address(executor, where="--executor" if args.executor else ENV)
    if args.changed_since:
        base = None
        if args.base_report:
            from ..report.model import load_report

            base = load_report(args.base_report)
        try:
            report = pullrequest.check_since(policy, args.changed_since, base_report=base, **options)
        except UsageError as exc:  # the library speaks of a base commit; the user typed a flag
            raise UsageError(f"--changed-since: {exc.problem}", path=exc.path, key=exc.key, fix=exc.fix) from None
    else:
        report = check(policy=policy, **options)
    _emit(report, args, policy.root, policy)
    _timing(report, progress)
    return pullrequest.exit_code(report, args.fail_on or ("new" if args.changed_since else "all"))


def _emit(report: object, args: argparse.Namespace, root: Path | None, policy: Policy | None = None) -> None:
    from ..ci.pullrequest import repo_prefix
    from ..detectors import thresholds
    from ..render import links, render

    # Every format gets every option and ignores those it does not know: a new format needs no change here.
    options: dict[str, object] = {"max_findings": args.max_findings, "root": root}
    if policy is not None:
        options["thresholds"] = thresholds(policy)  # html's score charts draw them
    if links(args.format):
        prefix = args.path_prefix
        if prefix is None:
            # Object storage (sources.Url) has no git checkout: paths stay root-relative.
            prefix = repo_prefix(root) if isinstance(root, Path) else ""
        options.update(prefix=prefix, blob_url=args.blob_url)
    text = render(report, args.format, **options)  # type: ignore[arg-type]
    if args.output:
        _write(args.output, text)
        print(f"leakcheck: report written to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)


def _render(args: argparse.Namespace) -> int:
    from ..errors import PolicyError
    from ..policy.load import load
    from ..render import links
    from ..report.model import load_report

    report, root = load_report(args.report), None
    if args.path_prefix is None and links(args.format):
        try:
            root = load(report.policy_path).root
        except PolicyError:
            root = None  # rendering elsewhere than the check ran: paths stay root-relative
    _emit(report, args, root)
    return EXIT_CLEAN


def _fingerprint(args: argparse.Namespace) -> int:
    from ..policy.load import load
    from ..pipeline.signatures import fingerprint

    policy = load(args.policy or find_policy())
    if args.cache_dir:  # what the Action caches: the store's folder, by the check's own rules
        from ..ci.pullrequest import cache_dir_output
        print(cache_dir_output(policy))
    else:
        print(fingerprint(policy))
    return EXIT_CLEAN


# --------------------------------------------------------------------------
# review: baseline, judge, report


def _load_policy(args: argparse.Namespace) -> Policy:
    from ..policy.load import load

    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {args.jobs}")
    return load(args.policy or find_policy())


def _run(args: argparse.Namespace, policy: Policy) -> Report:
    from ..pipeline.run import check

    progress = _progress(args)
    report = check(policy=policy, jobs=args.jobs, use_cache=not args.no_cache, progress=progress)
    _timing(report, progress)
    return report


def _baseline(args: argparse.Namespace) -> int:
    from ..report import baseline

    policy = _load_policy(args)
    # Locked for the whole run: a judge meanwhile would make the statuses recorded stale.
    with baseline.locked(policy.baseline):
        judged = baseline.load(policy.baseline)
        update = baseline.record(_run(args, policy), judged, prune=args.prune)
        baseline.save(update.baseline)
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


def _judge(args: argparse.Namespace) -> int:
    from ..report import baseline

    baseline.check_prefix(args.finding_id)  # a bad id fails before the check runs
    policy = _load_policy(args)
    findings = _run(args, policy).findings  # the check reads the baseline first: a broken one fails fast
    with baseline.locked(policy.baseline):  # read again and written under the lock: no verdict is lost
        judged = baseline.load(policy.baseline)
        # A prefix must be unique among entries and current findings; a verdict holds for the splits of now.
        entry = judged.resolve(args.finding_id, findings)
        if entry is None:
            raise UsageError(f"finding id {args.finding_id!r} is in neither the baseline nor the current findings",
                             fix="copy an id from `leakcheck check` or the HTML report")
        done = baseline.judge(judged, entry, args.verdict, args.reason, replace_verdict=args.replace)
        baseline.save(done.baseline)
    if done.replaced is not None:
        print(log_line(f"{entry.id}: replaced {done.replaced.describe()}"))
    print(log_line(f"{entry.id}: {done.entry.describe()}, recorded in {policy.baseline}"))
    return EXIT_CLEAN


def _report(args: argparse.Namespace) -> int:
    from ..files.atomic import write_atomic
    from ..render import render

    policy = _load_policy(args)
    report = _run(args, policy)
    from ..detectors import thresholds

    write_atomic(args.html, render(report, "html", root=policy.root, max_pixels=policy.files.max_pixels,
                                   thresholds=thresholds(policy)))
    print(f"leakcheck: {len(report.findings)} findings; review them in {args.html}", file=sys.stderr)
    return report.exit_code


_REVIEW = {"baseline": _baseline, "judge": _judge, "report": _report}


def _export(args: argparse.Namespace) -> int:
    from ..integrations import export

    policy = _load_policy(args)
    fmt = export.format_of(args.output, args.format)
    if args.output is None and fmt == "parquet":
        raise UsageError("Parquet cannot go to stdout", fix="pass -o FILE.parquet")
    table = export.table(policy, jobs=args.jobs, use_cache=not args.no_cache)
    if args.output is None:
        sys.stdout.write(export.to_text(table, fmt))
        return EXIT_CLEAN
    export.write(table, args.output, fmt)
    copies = sum(1 for c in table.column("cluster") if c)
    print(f"leakcheck export: {len(table.rows)} images, {copies} in copy clusters, written to {args.output}",
          file=sys.stderr)
    return EXIT_CLEAN


def _hook(args: argparse.Namespace) -> int:
    from ..policy.load import load
    from ..ci.hook import classify

    policy = load(args.policy or find_policy())
    staged = classify(policy, args.files)
    if staged.nothing:  # no staged image or policy input: nothing to hash, nothing to import
        return EXIT_CLEAN
    from ..pipeline.run import check
    from ..render import render

    if staged.inputs:  # a split, group or verdict may have moved anywhere: check as `check` does
        print("leakcheck hook: a file the policy reads is staged; checking the whole dataset", file=sys.stderr)
    report = check(policy=policy, focus=None if staged.inputs else staged.focus)
    if report.findings:
        sys.stdout.write(render(report, "text", max_findings=args.max_findings))
    return report.exit_code


# --------------------------------------------------------------------------
# init


def _write(path: Path, text: str, errors: str = "strict") -> None:
    """Write our own file; an unwritable path is the user's to fix, not a traceback."""
    from ..files.atomic import write_atomic

    try:
        write_atomic(path, text, errors=errors)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}",
                         fix="choose a writable path") from None


def _init(args: argparse.Namespace) -> int:
    root = args.root
    if not root.is_dir():
        raise UsageError(f"folder {root} does not exist", fix="pass the dataset folder: leakcheck init DATA")
    out = args.output or root / DEFAULT_POLICY_NAME
    if out.exists() and not args.force:
        raise UsageError(f"{out} already exists", fix="pass --force to overwrite it")
    from ..dataset import recognise as layout

    found = layout.detect(root)  # nothing recognised: exit 2, never placeholder globs
    for line in found.found:  # names from the dataset: one log line each
        print(log_line(f"Found: {line}"))
    for line in found.not_set_up:
        print(log_line(f"Not set up: {line}"))
    _write(out, layout.policy_text(found))
    print(log_line(f"Wrote {out}. Review it, then run: leakcheck check --policy {out}"))
    print("The signature store goes to .leakcheck/ beside it, which ignores itself in git: commit the policy only.")
    return EXIT_CLEAN


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
