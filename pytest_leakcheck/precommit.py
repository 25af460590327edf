"""Map the files pre-commit passes to the focus of a check.

pre-commit runs hooks from the repository root and passes staged paths
relative to it; the core wants paths relative to the policy's root.  Only
those files are hashed and compared with the whole dataset, whose other
signatures come from the store.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from .policy import Policy


def focus_paths(policy: Policy, files: Iterable[str | Path], cwd: Path | None = None) -> list[str]:
    """Staged image files as POSIX paths relative to the policy root, in the given order.

    Files outside the root, or without an image suffix the policy knows, are
    dropped: they cannot leak into this dataset.
    """
    base = Path(cwd or Path.cwd())
    exts = policy.files.extensions
    out: dict[str, None] = {}
    for name in files:
        path = Path(os.path.abspath(base / name))
        if not path.name.lower().endswith(exts):
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
