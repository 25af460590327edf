"""Folders a tool wrote beside the data (``sources.base.TOOL_OUTPUT``): ``init`` never reads them as
data, and proposes the policy's ``ignore:`` for those holding images, so the check does not either.

Ultralytics writes each training run to ``runs/<task>/<name>/``, plots and batch mosaics
(``confusion_matrix.png``, ``val_batch0_pred.jpg``); a repository that ships a model beside
its dataset ships them too, and the check reported each as a file in no split (held-out
probe of issue 37: ``zemlianin/uav`` at c905795, 14 warnings from ``runs/``).

A run is also known by what it holds (:func:`ran_here`), since ``project=``/``name=`` put it anywhere:
``Model_poly/Poly_run12/`` beside the export, or a prediction run ``test/Poly_run12/`` inside a split
folder, its images named as the split's own with the boxes drawn on (held-out probe of stop 55:
``waterandstuff/AMV_Exam`` at ce26c6a, 13 warnings of files in no split from five training runs, and
init read a prediction run as a class folder of test and preferred the split folders to the data.yaml).
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


#: Files an Ultralytics training run writes beside its ``args.yaml`` (one is enough: a run stopped
#: early holds ``labels_correlogram.jpg`` and no results).
_RUN_FILES = frozenset({"results.csv", "labels_correlogram.jpg", "confusion_matrix.png"})


def ran_here(folder: str, dirs: Sequence[str], names: Sequence[str]) -> bool:
    """Whether ``folder`` (holding ``dirs`` and ``names``) is an Ultralytics run, whatever its name:
    a training run (``args.yaml`` beside its plots, results or ``weights/``), or a prediction run
    (predicted ``labels/`` beside images all named as images of the sibling ``images/`` folder)."""
    if "args.yaml" in names and ("weights" in dirs or not _RUN_FILES.isdisjoint(names)):
        return True
    shown = [n for n in names if n.lower().endswith(suffixes.IMAGES)]
    if "labels" not in dirs or not shown or os.path.basename(folder) == "images":
        return False
    try:
        sources = set(os.listdir(os.path.join(os.path.dirname(folder), "images")))
    except OSError:
        return False
    return all(n in sources for n in shown)


def _images_below(folder: str) -> int:
    return sum(n.lower().endswith(suffixes.IMAGES) for _, _, names in os.walk(folder) for n in names
               if not n.startswith("."))
