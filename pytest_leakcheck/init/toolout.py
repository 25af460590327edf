"""Folders a tool wrote beside the data (``sources.base.TOOL_OUTPUT``): ``init`` never reads them as
data, and proposes the policy's ``ignore:`` for those holding images, so the check does not either.

Ultralytics writes each training run to ``runs/<task>/<name>/``, plots and batch mosaics
(``confusion_matrix.png``, ``val_batch0_pred.jpg``); a repository that ships a model beside
its dataset ships them too, and the check reported each as a file in no split (held-out
probe of issue 37: ``zemlianin/uav`` at c905795, 14 warnings from ``runs/``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..files import suffixes
from ..sources.base import TOOL_OUTPUT, visible


@dataclass(frozen=True)
class Outputs:
    """Globs to ignore (``<folder>/**``, one a tool-output folder holding images) and how many images they hold."""

    globs: tuple[str, ...]
    images: int


def find(root: Path) -> Outputs:
    """The tool-output folders under ``root`` (where ``init`` looks) that hold images."""
    globs, held = [], 0
    for folder, dirs, _ in os.walk(root):
        base = Path(folder).relative_to(root).as_posix()
        prefix = "" if base == "." else base + "/"
        for d in sorted(d for d in dirs if d in TOOL_OUTPUT):
            n = _images_below(os.path.join(folder, d))
            if n:
                globs.append(f"{prefix}{d}/**")
                held += n
        dirs[:] = visible(dirs)
    return Outputs(tuple(globs), held)


def _images_below(folder: str) -> int:
    return sum(n.lower().endswith(suffixes.IMAGES) for _, _, names in os.walk(folder) for n in names
               if not n.startswith("."))
