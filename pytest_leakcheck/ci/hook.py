"""Map the files pre-commit passes to what the hook must check.

pre-commit runs hooks from the repository root and passes staged paths
relative to it; the core wants paths relative to the policy's root.  Staged
images are hashed and compared with the whole dataset, whose other
signatures come from the store.  A staged file the policy reads (the policy
itself, its manifest or COCO/metadata split files, a group CSV or COCO file, the baseline) can move any
image to another split or change what counts as a leak, so it makes the hook
run the whole check: ``leakcheck hook splits.csv`` exits as ``leakcheck check``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..policy.load import Policy
from ..sources import inputs as split_inputs

#: Group rules whose value names a file the policy reads (groups.SOURCES).
_FILE_RULES = ("csv", "coco")


@dataclass(frozen=True)
class Staged:
    """What a list of staged files asks of the hook."""

    #: Staged images under the policy root, relative to it.
    focus: tuple[str, ...] = ()
    #: Staged files the policy reads, as they were given; any makes the check a full one.
    inputs: tuple[str, ...] = ()

    @property
    def nothing(self) -> bool:
        """No staged file can change a finding: no need to even open the store."""
        return not self.focus and not self.inputs


def policy_inputs(policy: Policy, *, baseline: bool = True) -> frozenset[Path]:
    """Every file besides images whose content the check reads, resolved.

    The signature store is not one: it is our own cache and never decides a
    finding.  ``baseline=False`` leaves out the baseline, which decides only
    whether a finding is accepted, never where a file sits.
    """
    files = [policy.path, policy.baseline if baseline else None]
    files += [Path(str(rule.value)) for rule in policy.groups if rule.source in _FILE_RULES]
    files += split_inputs(policy.split_sources)
    return frozenset(Path(os.path.realpath(f)) for f in files if f is not None)


def classify(policy: Policy, files: Iterable[str | Path], cwd: Path | None = None) -> Staged:
    """Sort staged files into images to focus on and inputs of the policy."""
    base = Path(cwd or Path.cwd())
    names = [str(f) for f in files]
    inputs = policy_inputs(policy)
    changed = tuple(n for n in names if Path(os.path.realpath(base / n)) in inputs)
    return Staged(tuple(focus_paths(policy, names, cwd=base)), changed)


def focus_paths(policy: Policy, files: Iterable[str | Path], cwd: Path | None = None) -> list[str]:
    """Staged image files, and staged links to folders, as POSIX paths relative to the policy root.

    A staged link to a folder (``test/more -> ../train``, new or retargeted)
    brings in every image below it, which the check focuses on (``run.focused``).
    Other files outside the root, or without an image suffix the policy knows,
    are dropped: they cannot leak into this dataset.
    """
    base = Path(cwd or Path.cwd())
    exts = policy.files.extensions
    out: dict[str, None] = {}
    for name in files:
        path = Path(os.path.abspath(base / name))
        if not path.name.lower().endswith(exts) and not (path.is_symlink() and path.is_dir()):
            continue
        # The root is resolved; resolve the folder too (a symlinked checkout,
        # /tmp -> /private/tmp) but not the file, whose own name is what counts.
        path = path.parent.resolve() / path.name
        try:
            rel = path.relative_to(policy.root)
        except ValueError:
            continue
        out[rel.as_posix()] = None
    return list(out)
