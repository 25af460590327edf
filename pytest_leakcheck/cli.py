"""``leakcheck`` on the command line.

Exit codes: 0 clean, 1 error-level findings, 2 usage, policy or store error,
3 internal error, 130 / 143 interrupted (Ctrl-C / SIGTERM).  Errors print as
``Error: ...`` on stderr, never as a traceback (unless --debug).
"""

from __future__ import annotations

import argparse
import csv
import os
import signal
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import (
    EXIT_CLEAN,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    EXIT_USAGE,
    LeakcheckError,
    Terminated,
    UsageError,
)
from .policy import DEFAULT_POLICY_NAME

FORMATS = ("text", "json", "sarif", "markdown", "annotations")
#: Set to 1 to see the traceback of an internal error (as --debug does).
DEBUG_ENV = "LEAKCHECK_DEBUG"

if TYPE_CHECKING:
    from .findings import Report
    from .policy import Policy


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
    parser = _Parser(prog="leakcheck", description="Find train/test leakage in image datasets.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    chk = sub.add_parser("check", help="check the dataset; exit 1 on error-level findings")
    chk.add_argument("--policy", type=Path, help=f"policy file (default: nearest {DEFAULT_POLICY_NAME})")
    chk.add_argument("--format", choices=FORMATS, default="text")
    chk.add_argument("-o", "--output", type=Path, help="write the report here instead of stdout")
    chk.add_argument("-j", "--jobs", type=int, default=None, help="worker processes (default: all cores)")
    chk.add_argument("--max-findings", type=int, default=50, help="findings shown in full in text (0: all)")
    chk.add_argument("--no-cache", action="store_true", help="ignore and do not write the signature store")
    chk.add_argument("--changed-since", metavar="REF",
                     help="pull request mode: findings that involve files changed since REF are new")
    chk.add_argument("--base-report", type=Path, metavar="JSON",
                     help="with --changed-since: a JSON report of a full check at REF; then only "
                          "changed files are searched")
    chk.add_argument("--fail-on", choices=("new", "all"),
                     help="which error-level findings fail (default: new with --changed-since, else all)")
    _add_render_options(chk)

    ren = sub.add_parser("render", help="render a saved JSON report in another format")
    ren.add_argument("report", type=Path, help="a report written by `check --format json`")
    ren.add_argument("--format", choices=FORMATS, default="text")
    ren.add_argument("-o", "--output", type=Path, help="write here instead of stdout")
    ren.add_argument("--max-findings", type=int, default=50, help="findings shown in full (0: all)")
    _add_render_options(ren)

    fpr = sub.add_parser("fingerprint", help="print the signature-parameter fingerprint (a cache key)")
    fpr.add_argument("--policy", type=Path, help=f"policy file (default: nearest {DEFAULT_POLICY_NAME})")
    fpr.add_argument("--cache-dir", action="store_true",
                     help="print the absolute folder of the policy's signature store instead")

    spl = sub.add_parser("split", help="write a manifest in which no group or copy spans splits")
    spl.add_argument("--policy", type=Path, help=f"policy file (default: nearest {DEFAULT_POLICY_NAME})")
    spl.add_argument("--test", type=float, required=True, help="share of files for test, e.g. 0.2")
    spl.add_argument("--val", type=float, default=0.0, help="share for val (default: 0: no val)")
    spl.add_argument("--seed", type=int, default=0, help="the same seed gives the same manifest")
    spl.add_argument("-o", "--output", type=Path, required=True, help="manifest CSV to write")
    spl.add_argument("--stratify", metavar="folder|COLUMN",
                     help="balance labels: the parent folder name, or a column of the manifest")
    spl.add_argument("--keep", type=Path, metavar="MANIFEST",
                     help="repair this manifest, changing as few assignments as possible")
    spl.add_argument("--names", default="train,val,test", help="split names (default: %(default)s)")
    spl.add_argument("-j", "--jobs", type=int, default=None, help="worker processes (default: all)")
    spl.add_argument("--no-cache", action="store_true", help="do not use the signature store")

    bas = sub.add_parser("baseline", help="record the current findings so they stop failing the check")
    _common(bas)
    bas.add_argument("--prune", action="store_true", help="drop entries that match no finding any more")

    jud = sub.add_parser("judge", help="record a verdict for one finding in the baseline")
    jud.add_argument("finding_id", help="the id shown in every report (a unique prefix is enough)")
    jud.add_argument("verdict", choices=("duplicate", "distinct"),
                     help="duplicate: a real leak accepted for now; distinct: a false alarm")
    jud.add_argument("--reason", required=True, help="why, for the next reviewer")
    _common(jud)

    rep = sub.add_parser("report", help="write a self-contained HTML report to review findings")
    rep.add_argument("--html", type=Path, required=True, metavar="PATH", help="where to write the report")
    _common(rep)

    hook = sub.add_parser("hook", help="pre-commit hook: check the given images against the whole dataset")
    hook.add_argument("--policy", type=Path, help=f"policy file (default: nearest {DEFAULT_POLICY_NAME})")
    hook.add_argument("--max-findings", type=int, default=20, help="findings shown in full (0: all)")
    hook.add_argument("files", nargs="*", help="staged files, relative to the current folder")

    ini = sub.add_parser("init", help="write a commented leakcheck.yaml, guessing splits from the tree")
    ini.add_argument("root", nargs="?", type=Path, default=Path("."), help="dataset folder (default: .)")
    ini.add_argument("-o", "--output", type=Path, help=f"policy path (default: ROOT/{DEFAULT_POLICY_NAME})")
    ini.add_argument("--force", action="store_true", help="overwrite an existing policy")
    parser.add_argument("--debug", action="store_true", help=f"traceback of an internal error ({DEBUG_ENV}=1)")
    for cmd in sub.choices.values():  # `leakcheck check --debug` too; SUPPRESS keeps a top-level --debug
        cmd.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    return parser


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


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    previous = _on_sigterm()
    try:
        if args.command == "init":
            return _init(args)
        if args.command == "hook":
            return _hook(args)
        if args.command == "split":
            return _split(args)
        if args.command == "render":
            return _render(args)
        if args.command == "fingerprint":
            return _fingerprint(args)
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
    from . import changes
    from .core import check
    from .policy import load

    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {args.jobs}")
    if args.base_report and not args.changed_since:
        raise UsageError("--base-report needs --changed-since REF", fix="name the commit the report was made at")
    policy = load(args.policy or find_policy())
    options = {"jobs": args.jobs, "use_cache": not args.no_cache}
    if args.changed_since:
        base = None
        if args.base_report:
            from .saved import load_report

            base = load_report(args.base_report)
        report = changes.check_since(policy, args.changed_since, base_report=base, **options)
    else:
        report = check(policy=policy, **options)
    _emit(report, args, policy.root)
    return changes.exit_code(report, args.fail_on or ("new" if args.changed_since else "all"))


def _emit(report: object, args: argparse.Namespace, root: Path | None) -> None:
    from .changes import repo_prefix
    from .report import render

    options: dict[str, object] = {"max_findings": args.max_findings}
    if args.format in ("sarif", "markdown", "annotations"):
        prefix = args.path_prefix
        if prefix is None:
            prefix = repo_prefix(root) if root is not None else ""
        options.update(prefix=prefix, blob_url=args.blob_url)
    text = render(report, args.format, **options)  # type: ignore[arg-type]
    if args.output:
        _write(args.output, text)
        print(f"leakcheck: report written to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)


def _render(args: argparse.Namespace) -> int:
    from .errors import PolicyError
    from .policy import load
    from .saved import load_report

    report = load_report(args.report)
    root = None
    if args.path_prefix is None and args.format in ("sarif", "markdown", "annotations"):
        try:
            root = load(report.policy_path).root
        except PolicyError:
            root = None  # rendering elsewhere than the check ran: paths stay root-relative
    _emit(report, args, root)
    return EXIT_CLEAN


def _fingerprint(args: argparse.Namespace) -> int:
    from .policy import load
    from .signatures import fingerprint
    from .storefile import locate

    policy = load(args.policy or find_policy())
    if args.cache_dir:  # what the Action caches: the store's folder, by the check's own rules
        print(locate(policy.cache, (policy.path.parent, policy.root)).parent)
    else:
        print(fingerprint(policy))
    return EXIT_CLEAN


def _split(args: argparse.Namespace) -> int:
    from . import split
    from .policy import load

    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {args.jobs}")
    policy = load(args.policy or find_policy(), need_manifest=False)
    plan = split.plan(policy, test=args.test, val=args.val, seed=args.seed, stratify=args.stratify,
                      keep=args.keep, names=tuple(n.strip() for n in args.names.split(",")),
                      jobs=args.jobs, use_cache=not args.no_cache)
    _write(args.output, split.manifest_text(plan))
    sys.stdout.write(split.summary(plan))
    print(f"leakcheck split: wrote {args.output}")
    return EXIT_CLEAN


# --------------------------------------------------------------------------
# review: baseline, judge, report


def _load_policy(args: argparse.Namespace) -> Policy:
    from .policy import load

    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {args.jobs}")
    return load(args.policy or find_policy())


def _run(args: argparse.Namespace, policy: Policy) -> Report:
    from .core import check

    return check(policy=policy, jobs=args.jobs, use_cache=not args.no_cache)


def _baseline(args: argparse.Namespace) -> int:
    from . import baseline

    policy = _load_policy(args)
    judged = baseline.load(policy.baseline)
    update = baseline.record(_run(args, policy), judged, prune=args.prune)
    baseline.save(update.baseline)
    line = f"Wrote {policy.baseline}: {len(update.baseline.entries)} entries, {update.added} added"
    if update.pruned:
        line += f", {update.pruned} stale pruned"
    if update.stale:
        line += f", {update.stale} stale kept (--prune drops them)"
    print(line)
    return EXIT_CLEAN


def _judge(args: argparse.Namespace) -> int:
    from . import baseline

    policy = _load_policy(args)
    judged = baseline.load(policy.baseline)
    entry = judged.resolve(args.finding_id)
    if entry is None:
        # Not recorded yet: find it in a fresh check.
        hits = [f for f in _run(args, policy).findings if f.id.startswith(args.finding_id)]
        if len(hits) != 1:
            problem = "is ambiguous" if hits else "is in neither the baseline nor the current findings"
            raise UsageError(f"finding id {args.finding_id!r} {problem}",
                             fix="copy an id from `leakcheck check` or the HTML report")
        entry = baseline.Entry.of(hits[0])
    baseline.save(baseline.judge(judged, entry, args.verdict, args.reason))
    print(f"{entry.id}: {args.verdict} ({args.reason}), recorded in {policy.baseline}")
    return EXIT_CLEAN


def _report(args: argparse.Namespace) -> int:
    from . import html  # noqa: F401  (registers the "html" renderer)
    from .report import render, write_atomic

    policy = _load_policy(args)
    report = _run(args, policy)
    write_atomic(args.html, render(report, "html", root=policy.root, max_pixels=policy.files.max_pixels))
    print(f"leakcheck: {len(report.findings)} findings; review them in {args.html}", file=sys.stderr)
    return report.exit_code


_REVIEW = {"baseline": _baseline, "judge": _judge, "report": _report}


def _hook(args: argparse.Namespace) -> int:
    from .policy import load
    from .precommit import focus_paths

    policy = load(args.policy or find_policy())
    focus = focus_paths(policy, args.files)
    if not focus:  # no staged image in this dataset: nothing to hash, nothing to import
        return EXIT_CLEAN
    from .core import check
    from .report import render

    report = check(policy=policy, focus=focus)
    if report.findings:
        sys.stdout.write(render(report, "text", max_findings=args.max_findings))
    return report.exit_code


# --------------------------------------------------------------------------
# init

_SPLIT_NAMES = {
    "train": ("train", "training", "trn"),
    "val": ("val", "valid", "validation", "dev"),
    "test": ("test", "testing", "tst", "holdout"),
}

_TEMPLATE = """\
# leakcheck policy: which files belong to which split, and what counts as a leak.
# Every key is documented in docs/policy.md of pytest-leakcheck.
version: 1

# Split name -> globs relative to this file (`**` spans folders). A file in
# no split, or in two, is reported as a file-level finding.
{splits}
pairs:
  compare: all            # or a list such as [train~test, val~test]
  within_split: warning   # duplicates inside one split: error | warning | off

detectors:
  identical_file: error     # same bytes
  identical_pixels: error   # same decoded pixels (re-saved, metadata stripped)
  phash:
    severity: error
    kind: phash             # phash | dhash | ahash | whash
    bits: 64                # 64 or 256
    max_distance: 8         # Hamming distance; higher finds more, and more false alarms
  thumbnail:
    severity: error
    size: 16                # side of the grey thumbnail
    min_cosine: 0.95        # contrast-normalised; lower finds more
  # Finds the crops, shifts, zooms and colour changes hashes miss, with a threshold
  # calibrated on this data (docs/detectors.md). Off by default: it makes a cold
  # check several times slower. Uncomment to turn it on.
  # aligned:
  #   severity: error
  #   false_alarms_per_10k: 50   # expected false alarms per 10,000 images searched

# A copy flipped or rotated is still a leak when training augments that way.
# hflip suits most photos. Add vflip, rot90, rot180, rot270, transpose and
# transverse for data with no natural "up": aerial and satellite tiles,
# microscopy, scanned documents fed in any orientation.
augmentations: [hflip]

files:
  unassigned: warning       # image in no split
  ambiguous: error          # image in two splits
  unreadable: error         # corrupt, truncated, zero-byte or decompression bomb

ignore: []                  # globs to skip, e.g. [docs/**]
cache: .leakcheck/cache.sqlite
baseline: .leakcheck-baseline.yaml   # judged findings: `leakcheck baseline`, `leakcheck judge`
"""


def _guess_splits(root: Path) -> str:
    for csv_path in sorted(root.glob("*.csv")):
        try:
            with open(csv_path, newline="", encoding="utf-8-sig") as fh:
                header = next(csv.reader(fh), [])
        except (OSError, UnicodeDecodeError, csv.Error):
            continue
        if "path" in header and "split" in header:
            return f"splits:\n  manifest: {csv_path.name}   # columns path,split[,group]\n"
    found: dict[str, str] = {}
    candidates = [p for p in sorted(root.iterdir()) if p.is_dir() and not p.name.startswith(".")]
    for depth_one in list(candidates):
        candidates += [p for p in sorted(depth_one.iterdir()) if p.is_dir()]
    for folder in candidates:
        for split, names in _SPLIT_NAMES.items():
            if folder.name.lower() in names and split not in found:
                found[split] = folder.relative_to(root).as_posix()
    if not found:
        return (
            "# No train/val/test folders found: edit these globs.\n"
            "splits:\n  train: [train/**]\n  test: [test/**]\n"
        )
    # Canonical order (train, val, test), not folder order: split order is
    # the order members and `train~test` labels are reported in.
    lines = [f"  {split}: [{found[split]}/**]" for split in _SPLIT_NAMES if split in found]
    return "splits:\n" + "\n".join(lines) + "\n"


def _write(path: Path, text: str) -> None:
    """Write our own file; an unwritable path is the user's to fix, not a traceback."""
    from .report import write_atomic

    try:
        write_atomic(path, text)
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
    _write(out, _TEMPLATE.format(splits=_guess_splits(root).rstrip("\n")))
    print(f"Wrote {out}. Review the splits, then run: leakcheck check --policy {out}")
    return EXIT_CLEAN


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
