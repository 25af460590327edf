"""Recognise how a dataset says which file is in which split, for ``leakcheck init``.

A first policy that quietly matches nothing, or that leaves a subject split
unchecked, is worse than none: the user believes the check.  So this module
asks each split source (``sources/``: tables, Hugging Face shards,
WebDataset shards, YOLO, COCO, split lists) whether it recognises the data, else looks for
split folders at any depth (ImageFolder trees), then has ``groupids`` propose
a group rule when ids repeat, and says what it did not set up.  When nothing
is recognised it raises instead of writing placeholder globs.  Nothing here
prints: the CLI shows :class:`Layout`'s lines.
"""

from __future__ import annotations

import os
from collections import Counter
import re
from dataclasses import dataclass, replace
from pathlib import Path

from .. import detectors
from . import clipfolders, coverage, groupids, masks, metaprops, toolout
from .. import sources
from ..sources import yolo
from ..sources.base import TOOL_OUTPUT, Assignment, Guess, folders, split_folder, split_word, visible
from ..errors import UsageError
from ..files import frames, suffixes
from ..files.escape import yaml_comment, yaml_scalar
from ..files.globs import literal

IMAGE_EXTS = suffixes.IMAGES
#: How deep split folders are looked for.
MAX_DEPTH = 6


@dataclass(frozen=True)
class Layout:
    """What ``init`` found: the policy's ``splits:`` and ``groups:`` text and what to tell the user."""

    splits_yaml: str
    groups_yaml: str
    found: tuple[str, ...]
    not_set_up: tuple[str, ...]
    #: What to look at before trusting the policy (a proposed group holding a large share of the files).
    warnings: tuple[str, ...] = ()
    #: Globs the policy's ``ignore:`` proposes (a tool's output beside the data, Ultralytics' ``runs/``: ``toolout``).
    ignore: tuple[str, ...] = ()


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

{detectors}
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

ignore: {ignore}                  # globs to skip, e.g. [docs/**]
cache: .leakcheck/cache.sqlite
baseline: .leakcheck-baseline.yaml   # judged findings: `leakcheck baseline`, `leakcheck judge`
"""


def policy_text(layout: Layout) -> str:
    """The commented policy for a recognised layout.

    Everything taken from the dataset (file and folder names, split names in a
    manifest, group ids) is a quoted scalar (escape.yaml_scalar) or a comment
    kept on its line (escape.yaml_comment): a crafted name cannot add a key.
    """
    found = "".join(f"\n#   {yaml_comment(line)}" for line in layout.found)
    found += "".join(f"\n#   WARNING: {yaml_comment(line)}" for line in layout.warnings)
    return TEMPLATE.format(found=" from:" + found if found else "", splits=layout.splits_yaml.rstrip("\n"),
                           groups=layout.groups_yaml.rstrip("\n"), detectors=detectors.template(),
                           ignore="[" + ", ".join(yaml_scalar(g) for g in layout.ignore) + "]")


#: Images not split yet (class folders only) are the commonest case of no splits, and `leakcheck split`
#: asks for a policy first: name both steps (held-out probe of issue 37: the BUSI ultrasound set).
NOT_SPLIT_FIX = ("not split yet: a leakcheck.yaml of `version: 1` and `splits: {manifest: splits.csv}`, then "
                 "`leakcheck split --test 0.2 -o splits.csv` writes a split that keeps copies together "
                 "(docs/split.md); split already: write leakcheck.yaml by hand (docs/sources.md) or lay the "
                 "files out in split folders")


def not_split_fix(root: Path, files: list[str]) -> str:
    """NOT_SPLIT_FIX, naming the group rule init reads from inside the files (DICOM patients, photo
    bursts) when there is one: `leakcheck split` keeps groups together only under a policy's rule, and
    the two-line policy alone put 11 of 54 patients in two splits (held-out probe 9: the Kaggle CT
    slices of TCGA patients, `ctdwt` of benchmarks/field_sources.py)."""
    proposal = metaprops.propose(root, dict.fromkeys(files, "all"))
    rule = next((line[4:] for line in (proposal.yaml if proposal else "").splitlines() if line.startswith("  - ")), "")
    if not rule:
        return NOT_SPLIT_FIX
    what = re.sub(r"[;,] \d+ (?:patients? )?in more than one split.*", "", proposal.found[0].split("; ")[0])
    fix = NOT_SPLIT_FIX.replace("` and `splits: {manifest: splits.csv}`",
                                f"`, `splits: {{manifest: splits.csv}}` and `groups: [{{{rule}}}]` ({what})", 1)
    return fix.replace("keeps copies together", "keeps copies and groups together", 1)


def detect(root: Path) -> Layout:
    """Recognise the layout under ``root``; :class:`UsageError` when there is none to recognise."""
    files, unread, tools = _images(root)
    tool = toolout.find(root, tools)
    labels = masks.find(root, files)
    # HC18 (`hc18` of benchmarks/field.py) ships an ellipse mask beside each image: counted, they doubled
    # train's images and made every image's number an id that repeats (the check ignores them, so init
    # must not count them either).
    files = [f for f in files if f not in labels.files]
    guess, passed_over, left_out = _guess(root, files)
    if guess is None and unread:
        raise UsageError(f"no splits recognised under {root}: {_unread_warning(unread)[0]}",
                         fix="convert the images to PNG, or write leakcheck.yaml by hand (docs/sources.md)")
    if guess is None:
        raise UsageError(
            f"no splits recognised under {root}: no train/val/test folders, table of files with a split column "
            "(CSV, TSV, JSON lines, Parquet), YOLO data.yaml, Hugging Face Parquet/Arrow shards, WebDataset "
            "shards, COCO instances_<split>.json, or split lists (train.txt, test.txt, ImageSets/Main)",
            fix=not_split_fix(root, files),
        )
    assignment = guess.assignment
    splits = {p: entries[0][0] for p, entries in assignment.rows.items()}
    proposal = groupids.propose(splits, assignment.labels, assignment.extra)
    if proposal.column is None:  # a patient or burst read from inside the files says more than a name token
        proposal = _inside(metaprops.propose(root, splits), proposal)
    clips = clipfolders.propose(root, splits) if not proposal.yaml and proposal.column is None else None
    if clips is not None:  # a rule from the names and the files themselves comes first: they say more
        proposal = clips if clips.yaml else replace(proposal, note="; ".join(n for n in (proposal.note, clips.note) if n))
    splits_yaml, groups_yaml = guess.splits_yaml, proposal.yaml
    if proposal.column is not None and guess.columns_indent:
        splits_yaml = _with_group_column(splits_yaml, proposal.column, guess.columns_indent)
    elif proposal.column is not None:  # a manifest: its `group` column is read as it is, any other by a rule
        groups_yaml += "" if proposal.column == "group" else f"groups:\n  - manifest_column: {yaml_scalar(proposal.column)}\n"
    notes = [proposal.note] if proposal.note else []
    notes.append("orientations: copies in all 8 orientations are searched; `augmentations: [hflip]` "
                 "is faster for photos that always have an up")
    notes += detectors.init_notices()
    warnings = (*_unread_warning(unread), *guess.warnings, *passed_over, *left_out, *proposal.warnings)
    if f"\n  {yolo.KIND}:" not in guess.splits_yaml:  # a data.yaml passed over is said, not silent
        warnings = (*yolo.unusable(root), *warnings)
    found = (*guess.found, *proposal.found)
    if tool.globs:
        found += (f"a tool's output, not data ({tool.images} images): ignored as {', '.join(tool.globs)}",)
    if labels.globs:
        found += (f"label masks named like the images, annotations rather than data ({labels.images} "
                  f"files): ignored as {', '.join(labels.globs)}",)
    return Layout(splits_yaml, groups_yaml, found, tuple(notes), warnings, (*tool.globs, *labels.globs))


def _inside(inside: groupids.Proposal | None, names: groupids.Proposal) -> groupids.Proposal:
    """The rule read from inside the files, unless it is none and the names gave one: then the names',
    with why the inside gave none (times a script wrote chain no burst, and must not drop a name rule);
    with neither, why each gave none."""
    if inside is None:
        return names
    if inside.yaml:
        return inside
    if not names.yaml:  # neither: both reasons, or the names' (a Roboflow rule refused) went unsaid (probe 11)
        said = names.note.removeprefix("groups: ")
        return replace(inside, note="; ".join(n for n in (inside.note, said) if n),
                       warnings=(*inside.warnings, *names.warnings))
    return replace(names, note="; ".join(n for n in (names.note, inside.note) if n),
                   warnings=(*names.warnings, *inside.warnings))


def _guess(root: Path, files: list[str]) -> tuple[Guess | None, tuple[str, ...], tuple[str, ...]]:
    """The first guess that covers the data (coverage.py), asking the sources in order and then
    the split folders; what was passed over and what the one taken leaves out, as warnings.

    The first source that recognised anything used to win: a user's COCO file for one split
    beside a Roboflow export gave a policy of that split alone, and ``check`` then passed.
    """
    measured: list[tuple[Guess, coverage.Coverage]] = []
    by_folder = _folders(root, files)
    for guess in sources.guesses(root, files):
        measured.append((guess, coverage.measure(guess, files)))
        if measured[-1][1].covers:
            break
    else:
        if by_folder is not None:
            measured.append((by_folder, coverage.measure(by_folder, files)))
    if not measured:
        return None, (), ()
    guess, covered, passed = coverage.choose(measured)
    wider = _wider_folders(files, by_folder, guess, covered)
    if wider is not None:
        (guess, covered), said = wider
        passed = (*passed, said)
    return guess, passed, coverage.warnings(covered)


def _wider_folders(files: list[str], by_folder: Guess | None, guess: Guess,
                   covered: coverage.Coverage) -> tuple[tuple[Guess, coverage.Coverage], str] | None:
    """The split folders instead of a source that agrees with them but lists fewer of their images.

    A Roboflow COCO export's ``<split>/_annotations.coco.json`` may list fewer images than its
    folder holds (``wrist-coco`` of benchmarks/field.py: 90 of 117; the 27 left out were the copies
    across splits); every image in a split folder is in that split, so the folders are read.
    Not where the folders' extra images are a copy left behind outside the folders a YOLO
    data.yaml names (``Coverage.stray_folders``): those are not in any split the data.yaml trains on.
    """
    if by_folder is None or by_folder is guess:
        return None
    stray = {f for f, _ in covered.stray_folders}
    extra = (p for p in by_folder.assignment.rows if p not in guess.assignment.rows)
    if stray and all(split_folder(p) in stray for p in extra):
        return None
    folder_rows = by_folder.assignment.rows
    agrees = all(folder_rows.get(p, [(None, None)])[0][0] == entries[0][0]
                 for p, entries in guess.assignment.rows.items())
    wide = coverage.measure(by_folder, files)
    if not (agrees and wide.covers and wide.assigned > covered.assigned):
        return None
    said = (f"the split folders hold {wide.assigned} images, {wide.assigned - covered.assigned} more than "
            f"{coverage.what(guess)} list: the split folders are used")
    return (by_folder, wide), said


def _with_group_column(yaml: str, column: str, indent: str) -> str:
    """The source's ``columns:`` mapping with ``group`` added (or a new one)."""
    marker = f"{indent}columns: {{"
    if marker in yaml:
        return yaml.replace(marker, f"{marker}group: {yaml_scalar(column)}, ", 1)
    return yaml + f"{indent}columns: {{group: {yaml_scalar(column)}}}\n"


def _images(root: Path) -> tuple[list[str], Counter[str], list[str]]:
    """The image files under ``root``, how many files of each format not read by default it holds,
    and the tool-output folders the walk passed over (``toolout``)."""
    out: list[str] = []
    unread: Counter[str] = Counter()
    tools: list[str] = []
    for folder, dirs, names in os.walk(root):
        base = Path(folder).relative_to(root).as_posix()
        prefix = "" if base == "." else base + "/"
        if base != "." and toolout.ran_here(folder, dirs, names):  # a run named anything: by what it holds
            tools.append(base)
            dirs[:] = []
            continue
        tools += [prefix + d for d in sorted(dirs) if d in TOOL_OUTPUT]
        dirs[:] = visible(dirs)
        out += [prefix + n for n in sorted(names) if not n.startswith(".") and (
            n.lower().endswith(IMAGE_EXTS) or (frames.unnamed(n) and frames.sniff(os.path.join(folder, n))))]
        unread.update(s for n in names if (s := next((u for u in suffixes.UNREAD if n.lower().endswith(u)), "")))
    return out, unread, tools


def _unread_warning(unread: Counter[str]) -> tuple[str, ...]:
    """A set of .jxl or RAW files is not "no image": say what is there and how to read it."""
    if not unread:
        return ()
    kinds = ", ".join(f"{n} {s}" for s, n in unread.most_common())
    return (f"files of formats not read by default are left out ({kinds}): list their suffixes under "
            "`files: {extensions: [...]}` if Pillow reads them, or convert them",)


#: Words beside a split word in a split folder's name (``data_train``, ``train_images``, ``Testing_Data``,
#: GTSRB's ``Final_Training``).
_LOOSE_WORDS = frozenset({"data", "dataset", "set", "images", "image", "imgs", "img", "photos", "pictures",
                          "files", "samples", "split", "final"})


def loose_split(name: str) -> str | None:
    """``test`` for ``tests``, ``data_train``, ``train_images`` or ``Testing_Data``: one split word
    (or its plural) among a folder name's letter runs, the others only words like ``data``."""
    words = [w for w in re.split(r"[^a-z]+", name.lower()) if w]
    splits = {split_word(w) or split_word(w[:-1]) if w.endswith("s") else split_word(w) for w in words}
    splits.discard(None)
    rest = [w for w in words if not (split_word(w) or (w.endswith("s") and split_word(w[:-1])))]
    return splits.pop() if len(splits) == 1 and all(w in _LOOSE_WORDS for w in rest) else None


def misspelt_split(name: str) -> str | None:
    """``train`` for ``ttrain`` or ``trian``: a split word of four letters or more with one letter typed
    twice or two neighbouring letters swapped, the slips a hand-made folder name shows (a held-out
    Roboflow export of skin photos re-split by its user into ``ttrain/`` and ``ttest/`` beside
    ``valid/``: init took 61 of 1,598 images for a split).  Other one-letter changes make words
    (``text``, ``rest``, ``brain``), so they are not read."""
    low = name.lower()
    near = {low[:k] + low[k + 1:] for k in range(1, len(low)) if low[k] == low[k - 1]}
    near |= {low[:k] + low[k + 1] + low[k] + low[k + 2:] for k in range(len(low) - 1) if low[k] != low[k + 1]}
    found = {split_word(w) for w in near if len(w) >= 4} - {None}
    return found.pop() if len(found) == 1 and not split_word(low) else None


def _loose_siblings(found: dict[str, list[str]], root: Path, files: list[str]) -> None:
    """Split folders named loosely (``training/`` beside ``tests/``; ``data_train/`` beside
    ``data_valid/``; ``ttrain/`` beside ``valid/``), taken only when one parent holds two or more
    splits so named: a lone ``tests/`` is as often a code repository's tests as a split (probe 3,
    docs/field.md)."""
    if len(found) >= 2:
        return
    taken = {f for fs in found.values() for f in fs}
    by_parent: dict[str, dict[str, list[str]]] = {}
    for folder in sorted({f.rsplit("/", 1)[0] for f in files if "/" in f} | set(folders(root, MAX_DEPTH))):
        parts = folder.split("/")
        split = split_word(parts[-1]) if folder in taken else loose_split(parts[-1]) or misspelt_split(parts[-1])
        if split and len(parts) <= MAX_DEPTH and not any(loose_split(p) for p in parts[:-1]):
            by_parent.setdefault("/".join(parts[:-1]), {}).setdefault(split, []).append(folder)
    for siblings in by_parent.values():
        if len(siblings) >= 2:
            for split, names in siblings.items():
                found.setdefault(split, [])
                found[split] += [n for n in names if n not in found[split]]


def _folders(root: Path, files: list[str]) -> Guess | None:
    """Split folders at any depth (``train/``, ``data/v1/test/``), class folders below them."""
    found: dict[str, list[str]] = {}
    for folder in sorted({f.rsplit("/", 1)[0] for f in files if "/" in f} | set(folders(root, MAX_DEPTH))):
        parts = folder.split("/")
        if len(parts) > MAX_DEPTH:
            continue
        split = split_word(parts[-1])
        # A folder named `test` inside a split folder is a class, not a split.
        if split and not any(split_word(p) for p in parts[:-1]):
            found.setdefault(split, []).append(folder)
    _loose_siblings(found, root, files)
    if not found:
        return None
    rows: dict[str, list[tuple[str, str | None]]] = {}
    labels: dict[str, str] = {}
    lines, found_lines = [], []
    for split in (s for s in ("train", "val", "test") if s in found):
        globs = [f"{f}/**" for f in found[split]]
        lines.append(f"  {split}: [{', '.join(yaml_scalar(literal(f) + '/**') for f in found[split])}]")
        inside = [(d, f) for d in found[split] for f in files if f.startswith(d + "/")]
        for d, f in inside:
            rows[f] = [(split, None)]
            below = f[len(d) + 1:]
            if "/" in below:  # the class folder, when there is one; groupids decides whether it acts as one
                labels[f] = below.split("/")[0]
        classes = {f[len(d) + 1:].split("/")[0] for d, f in inside if "/" in f[len(d) + 1:]}
        # YOLO and Roboflow exports keep a split's images in ``images/`` beside ``labels/``: not a class;
        # FUNSD keeps them beside ``annotations/`` (JSON), which is no YOLO layout.
        yolo_like = any((root / d / "labels").is_dir() for d in found[split])
        kind = (f", in images/ ({'a YOLO layout' if yolo_like else 'not a class folder'})" if classes == {"images"}
                else f", {len(classes)} class folders (ImageFolder)" if classes else "")
        found_lines.append(f"split folder{'s' if len(globs) > 1 else ''} {', '.join(found[split])}: "
                           f"{len(inside)} images in {split}{kind}")
    names = tuple(s for s in ("train", "val", "test") if s in found)
    return Guess("splits:\n" + "\n".join(lines) + "\n", tuple(found_lines), Assignment(rows, names, (), labels))

