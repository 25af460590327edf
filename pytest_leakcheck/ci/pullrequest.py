"""Which images a pull request touches, and which findings it brings.

Git says what changed since a base commit; the check then compares only
those files against the whole dataset, which is what keeps a pull request
on a large dataset fast.  Findings that already exist on the base come from
a saved JSON report of a full check at that commit; without one, the whole
dataset is searched and every finding is sorted into new or existing.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import EXIT_CLEAN, EXIT_LEAKS, PolicyError, UsageError
from ..report.model import Finding, Report
from ..policy.load import Policy
from .hook import policy_inputs
from ..store.storefile import CACHE_ENV

_FETCH_FIX = "fetch the base commit too, e.g. `actions/checkout` with `fetch-depth: 0`"


@dataclass(frozen=True)
class ChangeSet:
    """Paths added, modified, renamed or retyped since ``base`` (relative to the policy root).

    A path may be a link to a folder: it then stands for every file below it.
    """

    ref: str
    base: str  # full SHA of the merge base
    paths: frozenset[str]
    #: Whether the policy, its manifest or a group CSV/COCO file changed: then
    #: splits or groups may have moved.
    policy_changed: bool = False


def _git(args: list[str], cwd: Path) -> bytes:
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    except FileNotFoundError:
        raise UsageError("comparing with a base commit needs git, which is not installed",
                         fix="install git, or run a full check without a base commit") from None
    if proc.returncode != 0:
        raise _GitFailed(proc.stderr.decode(errors="replace").strip())
    return proc.stdout


class _GitFailed(Exception):
    pass


def repo_root(folder: Path) -> Path | None:
    """The top of the git work tree holding ``folder``; ``None`` outside git."""
    try:
        out = _git(["rev-parse", "--show-toplevel"], folder)
    except (_GitFailed, UsageError):
        return None
    return Path(out.decode().strip()).resolve()


def repo_prefix(folder: Path) -> str:
    """``folder`` relative to its repository's top, POSIX, with a trailing slash ('' at the top).

    Annotations and SARIF name files relative to the repository, while
    findings name them relative to the policy root.
    """
    top = repo_root(folder)
    base = top if top is not None else Path.cwd().resolve()
    rel = os.path.relpath(Path(folder).resolve(), base).replace(os.sep, "/")
    return "" if rel == "." else rel.rstrip("/") + "/"


def cache_dir_output(policy: Policy) -> str:
    """The store's folder as the Action writes it to ``$GITHUB_OUTPUT`` and gives actions/cache.

    The folder comes from the policy's ``cache``, the pull request's: a line
    break in it would set a second output (say the base commit) or cache more
    paths, so such a folder is a policy error naming ``cache`` (escape.output_value).
    """
    from ..files.escape import UnsafeOutput, output_value
    from ..pipeline.run import store_location

    folder = store_location(policy)
    assert folder is not None
    try:
        return output_value(str(folder.parent))
    except UnsafeOutput as exc:
        raise PolicyError(f"the signature store's folder {exc}", path=str(policy.path), key="cache",
                          fix=f"name a folder without line breaks or control characters, or set {CACHE_ENV}") from None


def _split_z(out: bytes) -> list[str]:
    return [p.decode("utf-8", errors="surrogateescape") for p in out.split(b"\0") if p]


def changed_since(policy: Policy, ref: str) -> ChangeSet:
    """Files added, modified or renamed on this branch since it left ``ref``.

    Committed changes come from ``git diff REF...HEAD`` (against the merge
    base, so commits landed on the base since do not count); staged,
    unstaged and untracked files count too, so the same command works
    locally before a commit.
    """
    root = policy.root
    top = repo_root(root)
    if top is None:
        raise UsageError(f"base commit {ref}: {root} is not inside a git repository",
                         fix="run a full check, or run from a git checkout")
    try:
        _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], top)
    except _GitFailed:
        raise UsageError(f"git does not know the base commit {ref!r}", fix=_FETCH_FIX) from None
    try:
        base = _git(["merge-base", ref, "HEAD"], top).decode().strip()
    except _GitFailed:
        raise UsageError(f"no common ancestor of the base commit {ref!r} and HEAD (shallow clone?)",
                         fix=_FETCH_FIX) from None
    # T: a file or folder replaced by a link (or back) changes what is under that name.
    names = _split_z(_git(["diff", "--name-only", "--diff-filter=AMRT", "-z", base, "HEAD", "--"], top))
    names += _split_z(_git(["diff", "--name-only", "--diff-filter=AMRT", "-z", "HEAD", "--"], top))
    names += _split_z(_git(["ls-files", "--others", "--exclude-standard", "-z"], top))
    root_real = root.resolve()
    paths = set()
    for name in names:
        rel = os.path.relpath(top / name, root_real).replace(os.sep, "/")
        if not rel.startswith("../"):
            paths.add(rel)
    touched = {(top / n).resolve() for n in names}
    # Not the baseline: every check applies it anyway, and an edit to it (a verdict
    # given in this pull request) moves no file to another split or group.
    watched = policy_inputs(policy, baseline=False)
    return ChangeSet(ref=ref, base=base, paths=frozenset(paths), policy_changed=bool(touched & watched))


def classify(report: Report, changes: ChangeSet) -> Report:
    """Mark each finding ``new`` if it involves a changed file, else ``existing``.

    A changed policy or manifest can move any file to another split, so then
    every finding counts as new.
    """
    from ..pipeline.run import Focus  # here: `leakcheck render` imports this module and must stay lean

    changed = Focus.of(changes.paths)

    def status(f: Finding) -> str:
        # A changed link to a folder changes every file below it (run.Focus); what was not
        # examined cannot be shown unchanged since the base, so it counts as new.
        if changes.policy_changed or f.kind == "not-examined" or any(changed.touches(m.path) for m in f.members):
            return "new"
        return "existing"

    found = tuple(replace(f, status=status(f)) for f in report.findings)
    return replace(report, findings=found)


def merge_base_report(focused: Report, base: Report, changes: ChangeSet, root: Path) -> Report:
    """New findings from a focused check plus the base report's findings still standing.

    A base finding still stands when every member is unchanged and still on
    disk (a missing-file finding: still missing).  One that lost a member is
    left out, since the focused check cannot tell whether the rest still
    match; the next full check will.
    """
    from ..pipeline.run import Focus

    changed = Focus.of(changes.paths)

    def stands(f: Finding) -> bool:
        if any(changed.touches(m.path) for m in f.members):
            return False
        return f.kind == "missing-file" or all((root / m.path).is_file() for m in f.members)

    new = [replace(f, status="new") for f in focused.findings]
    seen = {f.id for f in new}
    old = [replace(f, status="existing") for f in base.findings if f.id not in seen and stands(f)]
    return replace(focused, findings=tuple(new + old))


def exit_code(report: Report, fail_on: str) -> int:
    """With ``new``, only new error-level findings fail the check; with ``all``,
    existing ones too.  Findings the baseline knows never fail."""
    failing = ("new",) if fail_on == "new" else ("new", "existing")
    errors = [f for f in report.errors if f.status in failing]
    return EXIT_LEAKS if errors else EXIT_CLEAN


def check_since(
    policy: Policy,
    ref: str,
    *,
    base_report: Report | None = None,
    **options: object,
) -> Report:
    """The pull request check: changed images against the whole dataset.

    With ``base_report`` (a full check at the base commit) only the changed
    files are searched and existing findings come from that report: the
    fast path, linear in the dataset.  Without it, or when the policy
    itself changed, the whole dataset is searched and each finding sorted
    into new or existing.  ``options`` go to :func:`core.check`.
    """
    from ..pipeline.run import check

    changes = changed_since(policy, ref)
    if base_report is not None and not changes.policy_changed:
        focused = check(policy=policy, focus=changes.paths, **options)  # type: ignore[arg-type]
        report = merge_base_report(focused, base_report, changes, policy.root)
        mode = "focused"
    else:
        report = classify(check(policy=policy, **options), changes)  # type: ignore[arg-type]
        mode = "full"
    stats = {**report.stats, "changed_files": len(changes.paths), "base_commit": changes.base,
             "search": mode}
    return replace(report, stats=stats)
