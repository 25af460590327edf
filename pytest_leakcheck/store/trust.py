"""Whether a store at the policy's ``cache`` path may be read: never when git tracks it.

The store decides nothing a pull request could not see, as long as it is one
this machine's runs wrote: its signatures are what the images gave.  A store
committed to the repository is the pull request's: its snapshots can say that
nothing matched (with valid checksums) and its signatures can be any bytes.
So a store git tracks (or whose SQLite sidecars it tracks) is never opened;
the check runs from memory and says why.  The workflow owner's stores
(``LEAKCHECK_CACHE``, ``--cache-dir``, the Action's cache) are untracked and
read as before.  Exact links never come from a store at all
(``identical_file.IdenticalFile.incremental``): this run's digests decide them.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

#: SQLite's files beside a store: a committed ``-wal`` is replayed into the store when it opens.
_BESIDE = ("", "-wal", "-shm", "-journal")


def committed(path: Path) -> bool:
    """Whether git tracks the store at ``path`` (the name, or what it links to) or a file SQLite reads with it."""
    names = {Path(str(path) + s) for s in _BESIDE}
    if not any(os.path.lexists(n) for n in names):
        return False  # nothing there: the store will be this run's own
    names |= {Path(os.path.realpath(n)) for n in names if os.path.lexists(n)}
    by_folder: dict[Path, list[str]] = {}
    for name in names:
        folder = name.parent
        if folder.is_dir():
            by_folder.setdefault(folder, []).append(name.name)
    for folder, files in by_folder.items():
        try:
            out = subprocess.run(["git", "ls-files", "-z", "--", *files], cwd=folder, capture_output=True,
                                 check=False, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue  # no git: nothing can be tracked
        if out.strip(b"\0"):
            return True
    return False


def warning(path: Path) -> str:
    return (f"{path}: this signature store is tracked by git (a commit added it), so it is not read: a store in "
            "the repository is the pull request's; the check ran from memory. Add `.leakcheck/` to .gitignore "
            "and `git rm --cached` the store")
