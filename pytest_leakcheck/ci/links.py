"""Links whose target a change rewrites: they changed too.

``test/x.png -> ../assets/img.png`` is an image of the test split whose bytes
live in ``assets/``, a folder in no split.  A pull request that only rewrites
``assets/img.png`` (say, into a copy of a train image) changes ``test/x.png``
without touching its name.  So ``--changed-since`` and the hook add, to the
paths git reports, every link below the root whose target is one of them, lies
below one or holds one (a link to a folder), repeated until nothing is added
(a link to a link).  The links are those git tracks plus the changed paths
that are links: ``git ls-files -s`` names them by their mode, without a walk.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable
from pathlib import Path

#: git's file mode of a symbolic link.
_LINK = b"120000"
#: Links to links: how many rounds at most (a chain longer than this is followed this far).
_ROUNDS = 16


def _git(args: list[str], cwd: Path) -> bytes | None:
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def _links(top: Path, changed: Iterable[str]) -> list[Path]:
    """Every link git tracks under ``top``, and the changed paths (relative to ``top``) that are links."""
    out = _git(["ls-files", "-s", "-z"], top) or b""
    found = []
    for record in out.split(b"\0"):
        info, _, name = record.partition(b"\t")
        if info.startswith(_LINK + b" ") and name:
            found.append(top / os.fsdecode(name))
    found += [top / n for n in changed if os.path.islink(top / n)]
    return list(dict.fromkeys(found))


def through(root: Path, paths: Iterable[str], top: Path | None = None) -> set[str]:
    """``paths`` (relative to ``root``) and every link below ``root`` whose target they change."""
    from ..pipeline.run import Focus  # here: `leakcheck render` imports this package and stays lean

    wanted = set(paths)
    if top is None:
        out = _git(["rev-parse", "--show-toplevel"], root)
        if out is None:
            return wanted
        top = Path(os.fsdecode(out.strip())).resolve()
    real_root = os.path.realpath(root)
    targets: dict[str, str] = {}
    for link in _links(top, [os.path.relpath(root / p, top) for p in wanted]):
        name = os.path.relpath(os.path.join(os.path.realpath(link.parent), link.name), real_root)
        target = os.path.relpath(os.path.realpath(link), real_root)
        if not name.startswith("..") and not target.startswith(".."):
            targets[name.replace(os.sep, "/")] = target.replace(os.sep, "/")
    for _ in range(_ROUNDS):
        changed = Focus.of(wanted)
        more = {name for name, target in targets.items() if name not in wanted and changed.touches(target)}
        if not more:
            break
        wanted |= more
    return wanted
