"""Where the policy is when nobody says: ``leakcheck.yaml`` here or in the nearest parent.

The command line and the pytest plugin both look for it the same way, so the rule lives
with the policy rather than in either way in.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError
from .load import DEFAULT_POLICY_NAME


def find_policy(start: Path | None = None) -> Path:
    """``leakcheck.yaml`` in ``start`` (default: the current folder) or the nearest parent,
    up to the repository root."""
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


def policy_path(given: Path | None) -> Path:
    """The policy a command was pointed at (``--policy``), else the one :func:`find_policy` finds."""
    return given or find_policy()
