"""Folders a tool wrote beside the data (``sources.base.TOOL_OUTPUT``): ``init`` never reads them as
data, and proposes the policy's ``ignore:`` for those holding images, so the check does not either.

Ultralytics writes each training run to ``runs/<task>/<name>/``, plots and batch mosaics
(``confusion_matrix.png``, ``val_batch0_pred.jpg``); a repository that ships a model beside
its dataset ships them too, and the check reported each as a file in no split (held-out
probe of issue 37: ``zemlianin/uav`` at c905795, 14 warnings from ``runs/``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..files import suffixes


@dataclass(frozen=True)
class Outputs:
    """Globs to ignore (``<folder>/**``, one a tool-output folder holding images) and how many images they hold."""

    globs: tuple[str, ...]
    images: int


def find(root: Path, folders: Sequence[str]) -> Outputs:
    """Of the tool-output ``folders`` under ``root`` (relative, as ``init``'s walk passed them over),
    those that hold images."""
    counted = [(f, _images_below(os.path.join(root, f))) for f in folders]
    return Outputs(tuple(f"{f}/**" for f, n in counted if n), sum(n for _, n in counted))


def _images_below(folder: str) -> int:
    return sum(n.lower().endswith(suffixes.IMAGES) for _, _, names in os.walk(folder) for n in names
               if not n.startswith("."))
