"""Recognise how a dataset says which file is in which split, for ``leakcheck init``.

A first policy that quietly matches nothing, or that leaves a subject split
unchecked, is worse than none: the user believes the check.  So this module
recognises the common layouts (a manifest CSV, a ``metadata.csv`` /
``metadata.jsonl`` with a split column, COCO split files, split folders at
any depth such as ImageFolder trees), proposes group rules when file or
folder names carry an id that repeats, and says what it did not set up.
When nothing is recognised it raises instead of writing placeholder globs.
Nothing here prints: the CLI shows :class:`Layout`'s lines.
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from . import splitsources
from ..errors import PolicyError, UsageError

SPLIT_NAMES = {
    "train": ("train", "training", "trn"),
    "val": ("val", "valid", "validation", "dev"),
    "test": ("test", "testing", "tst", "holdout"),
}
IMAGE_EXTS = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp")
#: How deep split folders and COCO files are looked for.
MAX_DEPTH = 6
#: The first token of a file name, when it carries a digit: ``s0586_003.jpg`` -> ``s0586``.
NAME_ID = r"(?:^|/)(?P<group>[^/_.-]*\d[^/_.-]*)[_-][^/]*$"
#: The folder holding the file, when its name carries a digit: ``train/s0586/003.jpg``.
FOLDER_ID = r"(?:^|/)(?P<group>[^/]*\d[^/]*)/[^/]+$"


@dataclass(frozen=True)
class Layout:
    """What ``init`` found: the policy's ``splits:`` and ``groups:`` text and what to tell the user."""

    splits_yaml: str
    groups_yaml: str
    found: tuple[str, ...]
    not_set_up: tuple[str, ...]


TEMPLATE = """\
# leakcheck policy: which files belong to which split, and what counts as a leak.
# Every key is documented in docs/policy.md of pytest-leakcheck.
# Written by `leakcheck init`{found}
version: 1

# Which file is in which split (docs/policy.md#splits). A file in no split,
# or in two, is reported as a file-level finding.
{splits}{groups}
pairs:
  compare: all            # or a list such as [train~test, val~test]
  within_split: warning   # duplicates inside one split: error | warning | off

detectors:
  identical_file: error     # same bytes
  identical_pixels: error   # same decoded pixels (re-saved, metadata stripped)
  phash:
    severity: error
    kind: phash             # phash | dhash | ahash | whash
    bits: 64                # 64 or 256
    max_distance: 8         # Hamming distance; higher finds more, and more false alarms
  thumbnail:
    severity: error
    size: 16                # side of the grey thumbnail
    min_cosine: 0.95        # contrast-normalised; lower finds more
  # Finds the crops, shifts, zooms and colour changes hashes miss, with thresholds
  # calibrated on this data (docs/detectors.md): errors where a copy is near
  # certain, warnings ("probably the same shot, please look") below that.
  aligned:
    severity: error
    error_false_alarms_per_10k: 2    # error level: expected false alarms per 10,000 images
    false_alarms_per_10k: 5          # warning level
  # Other shots of the same scene (a re-shot, a step aside, a burst), by local
  # features checked for one geometry (docs/detectors.md). A leak in a
  # classification benchmark: raise it to error. In instance retrieval, new
  # photos of known places are the test itself: turn it off.
  same_scene:
    severity: warning

# A copy flipped or rotated is still a leak: all 8 orientations are searched, and
# turned hash matches are verified by the aligned detector. To search fewer (a
# faster check for photos that always have an "up"), list them, e.g. [hflip];
# the summary line then names the orientations that were not searched.
augmentations: [hflip, vflip, rot90, rot180, rot270, transpose, transverse]

files:
  unassigned: warning       # image in no split
  ambiguous: error          # image in two splits
  unreadable: error         # corrupt, truncated, zero-byte or decompression bomb
  outside_root: error       # symbolic link to a file or folder outside root (not followed)

ignore: []                  # globs to skip, e.g. [docs/**]
cache: .leakcheck/cache.sqlite
baseline: .leakcheck-baseline.yaml   # judged findings: `leakcheck baseline`, `leakcheck judge`
"""


def policy_text(layout: Layout) -> str:
    """The commented policy for a recognised layout."""
    found = "".join(f"\n#   {line}" for line in layout.found)
    return TEMPLATE.format(found=" from:" + found if found else "", splits=layout.splits_yaml.rstrip("\n"),
                           groups=layout.groups_yaml.rstrip("\n"))


def detect(root: Path) -> Layout:
    """Recognise the layout under ``root``; :class:`UsageError` when there is none to recognise."""
    files = _images(root)
    for finder in (_manifest, _metadata, _coco, _folders):
        hit = finder(root, files)
        if hit is not None:
            splits_yaml, found, assignment = hit
            break
    else:
        raise UsageError(
            f"no splits recognised under {root}: no train/val/test folders, manifest CSV "
            "(path,split), metadata.csv/.jsonl with a split column, or COCO instances_<split>.json",
            fix="write leakcheck.yaml by hand (docs/policy.md) or lay the files out in split folders",
        )
    groups_yaml, group_lines, group_note = _groups(assignment)
    notes = [group_note] if group_note else []
    notes.append("orientations: copies in all 8 orientations are searched; `augmentations: [hflip]` "
                 "is faster for photos that always have an up")
    notes.append("the `same_scene` detector (other shots of a scene) warns; raise it to error for a "
                 "classification benchmark, turn it off for instance retrieval")
    notes.append("the `aligned` detector (crops, shifts, zooms) is on: errors where a copy is near certain, "
                 "warnings for probable ones; `aligned: {severity: off}` makes a cold check faster")
    return Layout(splits_yaml, groups_yaml, (*found, *group_lines), tuple(notes))


# --------------------------------------------------------------------------
# Listing


def _images(root: Path) -> list[str]:
    out = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        base = Path(folder).relative_to(root).as_posix()
        prefix = "" if base == "." else base + "/"
        out += [prefix + n for n in sorted(names) if n.lower().endswith(IMAGE_EXTS) and not n.startswith(".")]
    return out


def _split_of(name: str) -> str | None:
    low = name.lower()
    return next((s for s, names in SPLIT_NAMES.items() if low in names), None)


def _token_split(name: str) -> str | None:
    """``instances_train2017.json`` -> train: a split word among the name's tokens."""
    for token in re.split(r"[^a-z]+", name.lower()):
        split = _split_of(token)
        if split:
            return split
    return None


Hit = tuple[str, tuple[str, ...], dict[str, str]]


# --------------------------------------------------------------------------
# Finders: each returns (splits yaml, what it found, file -> split) or None


def _manifest(root: Path, files: list[str]) -> Hit | None:
    for path in sorted(root.glob("*.csv")):
        header, rows = _csv(path)
        if "path" in header and "split" in header:
            assignment = {_clean(r["path"]): (r.get("split") or "").strip() for r in rows if r.get("path")}
            yaml = f"splits:\n  manifest: {path.name}   # columns path,split[,group]\n"
            return yaml, (f"manifest {path.name}: {len(assignment)} rows, splits {_names(assignment)}",), assignment
    return None


def _metadata(root: Path, files: list[str]) -> Hit | None:
    for name in ("metadata.csv", "metadata.jsonl"):
        path = root / name
        if not path.is_file():
            continue
        try:
            rows, _ = splitsources.read(splitsources.SplitSources("metadata", (splitsources.SourceFile(path),)))
        except PolicyError:  # not a metadata table with splits: try the next layout
            continue
        assignment = {rel: entries[0][0] for rel, entries in rows.items()}
        yaml = f"splits:\n  metadata: {name}   # file_name (or path) and split of every image\n"
        return yaml, (f"{name}: {len(assignment)} images, splits {_names(assignment)}",), assignment
    return None


def _coco(root: Path, files: list[str]) -> Hit | None:
    found: dict[str, tuple[str, str]] = {}
    for path in _shallow(root, "*.json"):
        split = _token_split(path.stem)
        if split is None or split in found:
            continue
        names = _coco_names(path)
        if names:
            found[split] = (path.relative_to(root).as_posix(), _image_folder(root, files, names))
    if not found:
        return None
    lines, assignment, found_lines = [], {}, []
    for split in (s for s in SPLIT_NAMES if s in found):
        file, images = found[split]
        rows, _ = splitsources.read(splitsources.SplitSources(
            "coco", (splitsources.SourceFile(root / file, split, images),)))
        assignment.update({rel: split for rel in rows})
        lines.append(f"    {split}: {{file: {file}, images: {images}}}" if images else f"    {split}: {file}")
        found_lines.append(f"COCO split file {file}: {len(rows)} images in {split}"
                           + (f" (under {images}/)" if images else ""))
    return "splits:\n  coco:\n" + "\n".join(lines) + "\n", tuple(found_lines), assignment


def _folders(root: Path, files: list[str]) -> Hit | None:
    found: dict[str, list[str]] = {}
    folders = sorted({f.rsplit("/", 1)[0] for f in files if "/" in f} | set(_dirs(root)))
    for folder in folders:
        parts = folder.split("/")
        if len(parts) > MAX_DEPTH:
            continue
        split = _split_of(parts[-1])
        # A folder named `test` inside a split folder is a class, not a split.
        if split and not any(_split_of(p) for p in parts[:-1]):
            found.setdefault(split, []).append(folder)
    if not found:
        return None
    assignment = {}
    lines, found_lines = [], []
    for split in (s for s in SPLIT_NAMES if s in found):
        globs = [f"{f}/**" for f in found[split]]
        lines.append(f"  {split}: [{', '.join(globs)}]")
        below = [f[len(d) + 1:] for d in found[split] for f in files if f.startswith(d + "/")]
        inside = [f for d in found[split] for f in files if f.startswith(d + "/")]
        assignment.update({f: split for f in inside})
        classes = {b.split("/")[0] for b in below if "/" in b}
        kind = f", {len(classes)} class folders (ImageFolder)" if classes else ""
        found_lines.append(f"split folder{'s' if len(globs) > 1 else ''} {', '.join(found[split])}: "
                           f"{len(inside)} images in {split}{kind}")
    return "splits:\n" + "\n".join(lines) + "\n", tuple(found_lines), assignment


# --------------------------------------------------------------------------
# Group proposal


def _groups(assignment: dict[str, str]) -> tuple[str, tuple[str, ...], str]:
    """A ``groups:`` block when a name or folder id repeats, with the evidence; else a note."""
    for pattern, where in ((NAME_ID, "file names"), (FOLDER_ID, "folder names")):
        regex = re.compile(pattern)
        ids: dict[str, set[str]] = {}
        matched = 0
        for path, split in assignment.items():
            m = regex.search(path)
            if m:
                matched += 1
                ids.setdefault(m.group("group"), set()).add(split)
        # An id must repeat (several files each) and cover most files to be one.
        if len(ids) < 2 or matched < 0.9 * len(assignment) or matched < 2 * len(ids):
            continue
        spanning = sorted(g for g, s in ids.items() if len(s) > 1)
        splits = sorted({s for g in spanning for s in ids[g]})
        many = len(spanning) != 1
        evidence = (f"{len(spanning)} id{'s' * many} appear{'s' * (not many)} in more than one split "
                    f"({' and '.join(splits)}), e.g. {spanning[0]}" if spanning else "no id appears in two splits yet")
        line = f"group ids in {where}: {len(ids)} ids over {matched} files; {evidence}"
        yaml = ("\n# Files that share an id (subject, video, session) must stay in one split;\n"
                f"# proposed by `leakcheck init` from {where} ({evidence}).\n"
                f"groups:\n  - regex: '{pattern}'\n"
                f"ungrouped: {'own-group' if matched == len(assignment) else 'warning'}\n"
                "group_split: error\n")
        return yaml, (line,), ""
    return "", (), ("groups: no repeated id found in file or folder names; if several images show one "
                    "subject, video or patient, add a rule (docs/policy-groups.md)")


# --------------------------------------------------------------------------
# Small readers


def _csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            return list(reader.fieldnames or []), list(reader)
    except (OSError, UnicodeDecodeError, csv.Error):
        return [], []


def _coco_names(path: Path) -> list[str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return []
    images = data.get("images") if isinstance(data, dict) else None
    if not isinstance(images, list):
        return []
    return [i["file_name"] for i in images if isinstance(i, dict) and isinstance(i.get("file_name"), str)]


def _image_folder(root: Path, files: list[str], names: list[str]) -> str:
    """The folder (relative to root) that COCO ``file_name`` values are relative to."""
    on_disk = set(files)
    sample = names[:50]
    for folder in ["", *_dirs(root)]:
        prefix = folder + "/" if folder else ""
        if sum(prefix + n in on_disk for n in sample) * 2 > len(sample):
            return folder
    return ""


def _dirs(root: Path) -> list[str]:
    out = []
    for folder, dirs, _ in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        rel = Path(folder).relative_to(root)
        if len(rel.parts) >= MAX_DEPTH:
            dirs[:] = []
        if rel.parts:
            out.append(rel.as_posix())
    return out


def _shallow(root: Path, pattern: str) -> list[Path]:
    return sorted(p for depth in ("", "*/", "*/*/") for p in root.glob(depth + pattern)
                  if not any(part.startswith(".") for part in p.relative_to(root).parts))


def _clean(rel: str) -> str:
    rel = rel.strip().replace("\\", "/")
    while rel.startswith("./"):
        rel = rel[2:]
    return rel


def _names(assignment: dict[str, str]) -> str:
    counts = Counter(assignment.values())
    return ", ".join(f"{s} {n}" for s, n in counts.items())
