"""What a guessed ``splits:`` section leaves out, so ``init`` neither takes nor writes a blind one.

A source that recognises part of a dataset is not the dataset's split: on a
Roboflow COCO export a user's extra ``train/_train_anno.json`` was taken for
the whole of it (valid/ and test/ left out), on a darknet export a COCO file
of test/ alone stood for it while ``train.txt`` and ``valid.txt`` listed the
rest, and ``check`` then passed: one split compares nothing across splits.
So each guess is measured here (:class:`Coverage`), ``init`` takes the first
that covers the data (:func:`choose`), and says what the one it takes leaves
out (:func:`warnings`).  Nothing here reads a file: it counts the listing.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..sources.base import Guess, split_folder

#: Folders a warning names, the most images first.
SHOWN_FOLDERS = 3


@dataclass(frozen=True)
class Coverage:
    """How much of the images on disk a guess puts in a split."""

    #: split -> images on disk (or inside shards) it holds, in the guess's order.
    per_split: tuple[tuple[str, int], ...]
    total: int
    #: Folders named like a split (``valid/``) holding images, none of which is in a split: (folder, images).
    left_folders: tuple[tuple[str, int], ...]
    #: Folders holding images in no split: (folder, images), the most first.
    unassigned_folders: tuple[tuple[str, int], ...]
    #: Split-named folders a YOLO data.yaml does not name, whose images all bear the file name of an
    #: image it assigns: a copy left behind, not a split it left out.  A data.yaml names the folders
    #: it trains on; ``pestrice`` of benchmarks/field.py keeps its old ``train/`` of all 530 images
    #: beside the re-split ``dataset_split/``, and taken for train it made every val and test image an
    #: error.  A folder with one image of its own is still a split the source left out.
    stray_folders: tuple[tuple[str, int], ...] = ()

    @property
    def assigned(self) -> int:
        return sum(n for _, n in self.per_split)

    @property
    def splits(self) -> tuple[str, ...]:
        return tuple(s for s, n in self.per_split if n)

    @property
    def covers(self) -> bool:
        """Two splits hold images, no split folder is left out, and most images are in a split."""
        return len(self.splits) >= 2 and not self.left_folders and self.assigned * 2 >= self.total

    def rank(self) -> tuple[int, int, int]:
        """Higher is better: more splits, then no split folder left out, then more images assigned
        (a table of train and test beside a stray ``valid/`` beats the one split of that folder)."""
        return (len(self.splits), not self.left_folders, self.assigned)


def measure(guess: Guess, files: list[str]) -> Coverage:
    """The coverage of ``guess`` over ``files`` (images on disk, relative to root)."""
    rows = guess.assignment.rows
    images = [*files, *(m[0] for m in guess.assignment.members)]
    per_split: Counter[str] = Counter(rows[p][0][0] for p in images if rows.get(p))
    order = [*guess.assignment.names, *sorted(per_split)]
    unassigned = [p for p in images if not rows.get(p)]
    by_folder = Counter(p.rsplit("/", 1)[0] if "/" in p else "." for p in unassigned)
    split_folders: dict[str, list[tuple[str, bool]]] = {}
    for p in images:
        folder = split_folder(p)
        if folder is not None:
            split_folders.setdefault(folder, []).append((p, bool(rows.get(p))))
    left = tuple((f, len(ps)) for f, ps in sorted(split_folders.items()) if not any(a for _, a in ps))
    stray: tuple[tuple[str, int], ...] = ()
    if _source(guess)[0] == "yolo":
        names = {p.rsplit("/", 1)[-1] for p in images if rows.get(p)}
        stray = tuple((f, n) for f, n in left if all(p.rsplit("/", 1)[-1] in names for p, _ in split_folders[f]))
        left = tuple(x for x in left if x not in stray)
    return Coverage(tuple((s, per_split[s]) for s in dict.fromkeys(order)), len(images), left,
                    tuple(by_folder.most_common()), stray)


def choose(guesses: list[tuple[Guess, Coverage]]) -> tuple[Guess, Coverage, tuple[str, ...]]:
    """The first guess that covers the data, else the one covering most (:meth:`Coverage.rank`),
    and a line for each earlier guess passed over (the user should know why a file was not used)."""
    pick = next((k for k, (_, c) in enumerate(guesses) if c.covers), None)
    if pick is None:
        pick = max(range(len(guesses)), key=lambda k: (guesses[k][1].rank(), -k))
    guess, coverage = guesses[pick]
    passed = tuple(f"{what(g)} {_summary(c)}; {what(guess)} {_summary(coverage)}: those are used"
                   for g, c in guesses[:pick])
    return guess, coverage, passed


def warnings(coverage: Coverage) -> tuple[str, ...]:
    """What the chosen guess leaves out, for the WARNING lines of ``init`` and the policy."""
    out = []
    for folder, n in coverage.left_folders:
        out.append(f"folder {folder}/ is named like a split and holds {n} image{'s' * (n != 1)}, none of them "
                   "in a split of this policy: add it to `splits:` (docs/sources.md), or to `ignore:` if it is "
                   "not data")
    for folder, n in coverage.stray_folders:
        out.append(f"folder {folder}/ is named like a split but is not in the YOLO data.yaml, and its {n} "
                   "images bear the names of images already in a split: a copy left behind, not a split; "
                   "delete it, or add it to `ignore:` (the check reports it as files in no split)")
    splits = coverage.splits
    if len(splits) < 2:
        held = f"only split {splits[0]} holds images ({coverage.assigned})" if splits else "no split holds images"
        out.append(f"{held}: no copy across splits will be searched, only copies within it; if the data has "
                   "other splits, add them to `splits:`")
    unassigned = coverage.total - coverage.assigned
    if unassigned * 2 > coverage.total:
        where = ", ".join(f"{f}/ {n}" for f, n in coverage.unassigned_folders[:SHOWN_FOLDERS])
        out.append(f"{unassigned} of {coverage.total} images are in no split ({where}): they are compared with "
                   "nothing; put them in a split, or in `ignore:` if they are not data")
    return tuple(out)


#: How a Warning line names a source, by its key under ``splits:``.
_NAMES = {"coco": "the COCO files", "lists": "the split lists", "yolo": "the YOLO data.yaml", "table": "the table",
          "metadata": "the metadata table", "manifest": "the manifest", "huggingface": "the Parquet shards",
          "webdataset": "the tar shards", "ids": "the id lists"}


def what(guess: Guess) -> str:
    """``the COCO files``: the source of a guess, by the key its ``splits:`` text opens with."""
    key, path = _source(guess)
    if key == "yolo" and "/" in path:  # one export of several in the tree: say which file
        return f"the YOLO {path}"
    return _NAMES.get(key, "the split folders")


def _source(guess: Guess) -> tuple[str, str]:
    """The key a guess's ``splits:`` text opens with, and its value (``yolo``, ``sub/data.yaml``)."""
    lines = guess.splits_yaml.splitlines()
    key, _, value = lines[1].strip().partition(":") if len(lines) > 1 else ("", "", "")
    return key, value.split("#", 1)[0].strip().strip('"')


def _summary(coverage: Coverage) -> str:
    held = ", ".join(f"{s} {n}" for s, n in coverage.per_split if n) or "no image"
    left = ", ".join(f"{f}/ ({n})" for f, n in coverage.left_folders[:SHOWN_FOLDERS])
    return f"assign {held}" + (f", leaving {left} out" if left else "")
