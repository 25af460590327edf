"""What the commands write: reports, files of our own, progress and the timing line.

Shared by the commands in cli/commands/; heavy modules are imported inside each function.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UsageError

if TYPE_CHECKING:
    from ..policy.load import Policy
    from ..progress import Timer
    from ..report.model import Report
    from .options import Rendering


def write(path: Path, text: str, errors: str = "strict") -> None:
    """Write our own file; an unwritable path is the user's to fix, not a traceback."""
    from ..files.atomic import write_atomic

    try:
        write_atomic(path, text, errors=errors)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}",
                         fix="choose a writable path") from None


def progress(quiet: bool) -> Timer:
    """Bars on stderr when it is a terminal; in CI logs and under --quiet only timings."""
    from ..progress import for_stream

    return for_stream(sys.stderr, quiet=quiet)


def timing(report: Report, timer: Timer) -> None:
    timer.done()
    total = float(report.stats.get("seconds", 0.0))
    print(f"leakcheck: {report.stats.get('files', 0)} images in {timer.summary(total)}", file=sys.stderr)


def emit(report: Report, how: Rendering, root: Path | None, policy: Policy | None = None) -> None:
    """``report`` rendered as ``how`` says, to its output file or stdout."""
    from ..ci.pullrequest import repo_prefix
    from ..detectors import thresholds
    from ..render import links, render

    # Every format gets every option and ignores those it does not know: a new format needs no change here.
    options: dict[str, object] = {"max_findings": how.max_findings, "root": root}
    if policy is not None:
        options["thresholds"] = thresholds(policy)  # html's score charts draw them
    if links(how.format):
        prefix = how.path_prefix
        if prefix is None:
            # Object storage (sources.Url) has no git checkout: paths stay root-relative.
            prefix = repo_prefix(root) if isinstance(root, Path) else ""
        options.update(prefix=prefix, blob_url=how.blob_url)
    text = render(report, how.format, **options)  # type: ignore[arg-type]
    if how.output:
        write(how.output, text)
        print(f"leakcheck: report written to {how.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
