"""Resolve every image file under the policy's root to exactly one split.

Files that fall in no split, in two splits, or that a manifest names but that
do not exist are reported as :class:`FileIssue` values; they never stop the
scan, so one stray file cannot hide a leak elsewhere.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..files import frames, globs, litter, members, names, remote as sources, suffixes, tiffpages
from .. import sources as splitsources
from ..sources.base import Rows
from ..sources.shards import listing as shard_listing
from ..errors import PolicyError
from ..policy.load import Policy, with_splits
from ..progress import SILENT, Progress


@dataclass(frozen=True)
class FileRecord:
    """One image file; ``path`` is relative to the policy root, POSIX style."""

    path: str
    split: str
    group: str | None
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class FileIssue:
    """A file-level problem: ``unassigned``, ``ambiguous``, ``missing``, ``outside_root``,
    ``not_examined`` (a folder that cannot be listed, a path too long to open), or ``pages``
    (multi-page TIFFs, whose pages after the first are not compared)."""

    kind: str
    path: str
    splits: tuple[str, ...] = ()
    detail: str = ""


@dataclass(frozen=True)
class Inventory:
    policy: Policy
    records: tuple[FileRecord, ...]
    issues: tuple[FileIssue, ...]
    #: Files and folders the policy's ``ignore`` skipped: tells "ignore hides everything" from a wrong glob.
    ignored: int = 0
    #: path -> label, from a split source's label column (a table's, a Hugging Face dataset's).
    labels: Mapping[str, str] = field(default_factory=dict)

    @property
    def splits(self) -> tuple[str, ...]:
        return self.policy.split_names


@lru_cache(maxsize=256)
def _any_glob(patterns: tuple[str, ...]) -> globs.GlobSet | None:
    # Compiled once per set of patterns: scan asks for every file and split.
    if not patterns:
        return None
    return globs.GlobSet(tuple(globs.compile(p) for p in patterns))


def matches(path: str, patterns: tuple[str, ...]) -> bool:
    """Whether ``path`` (POSIX, relative to root) matches any of the globs (globs.py)."""
    found = _any_glob(tuple(patterns))
    return found is not None and found.match(path)


@dataclass(frozen=True)
class Listing:
    """What a walk found: image files (path, stat), sorted; links leaving root; how much ``ignore`` skipped."""

    files: list[tuple[str, os.stat_result | sources.Stat]]
    #: (path, real target, whether it is a folder) of each link whose target is outside root.
    outside: list[tuple[str, str, bool]]
    ignored: int = 0
    #: (path, why) of each folder or file the walk could not examine: never skipped without a word.
    unexamined: list[tuple[str, str]] = field(default_factory=list)


#: Version control internals: folders no dataset lives in, never walked.  Every
#: other hidden file and folder is examined like any other (torchvision's
#: ImageFolder loads `train/cat/.x.jpg` and a `train/.ipynb_checkpoints` class).
VCS_FOLDERS = frozenset({".git", ".hg", ".svn"})


def _walk(root: Path, policy: Policy, progress: Progress = SILENT) -> Listing:
    """All image files under root, sorted; symlinks that leave root are listed apart, never followed;
    folders and files that cannot be examined (unreadable, a path too long to open) are listed too."""
    exts = policy.files.extensions
    # DICOM exports name files by UID or not at all: such a file is listed when its bytes are DICOM.
    sniff = any(e in exts for e in frames.SUFFIXES)
    root_real = os.path.realpath(root)
    cache_dir = os.path.dirname(str(policy.cache))
    found: list[tuple[str, os.stat_result]] = []
    outside: list[tuple[str, str, bool]] = []
    unexamined: list[tuple[str, str]] = []
    unlisted: dict[tuple[str, str], list[str]] = {}
    ignored = 0
    ignore = _any_glob(policy.ignore)

    def inside(p: str) -> bool:
        real = os.path.realpath(p)
        return real == root_real or real.startswith(root_real + os.sep)

    prefix_len = len(str(root).rstrip(os.sep)) + 1
    # Each folder carries the real paths of its ancestors: a link back up the
    # tree is a loop and is skipped, but two links to one folder are both
    # walked, so `test/x -> ../train/x` shows up as the leak it is.
    stack: list[tuple[str, frozenset[str]]] = [(str(root), frozenset())]
    while stack:
        folder, ancestors = stack.pop()
        # Relative paths by slicing once per folder, not os.path.relpath per
        # file: this loop runs once per image and relpath costs more than stat.
        base = folder[prefix_len:].replace(os.sep, "/")
        try:
            real = os.path.realpath(folder)
            if real in ancestors:
                continue
            entries = list(os.scandir(folder))
        except OSError as exc:  # mode 000, a path longer than PATH_MAX: named, not skipped
            unexamined.append((base or ".", f"cannot list this folder: {exc.strerror or exc}"))
            continue
        ancestors = ancestors | {real}
        base = base + "/" if base else ""
        before = len(found)
        for entry in entries:
            name = entry.name
            rel = base + name
            if ignore is not None and ignore.match(rel):
                with suppress(OSError):  # counted only to word the error when nothing is left
                    if entry.is_dir() or name.lower().endswith(exts):
                        ignored += 1
                continue
            try:
                if entry.is_symlink():
                    if not inside(entry.path):
                        # Not followed (a pull request could link /etc or a home folder), and
                        # not skipped either: a split folder linked away would check nothing.
                        if entry.is_dir() or name.lower().endswith(exts):
                            outside.append((rel, os.path.realpath(entry.path), entry.is_dir()))
                        continue
                    if entry.is_dir():
                        stack.append((entry.path, ancestors))
                    elif entry.is_file() and (name.lower().endswith(exts)
                                              or (sniff and frames.unnamed(name) and frames.sniff(entry.path))):
                        found.append((rel, entry.stat()))
                elif entry.is_dir(follow_symlinks=False):
                    if entry.path != cache_dir and name not in VCS_FOLDERS:
                        stack.append((entry.path, ancestors))
                elif entry.is_file(follow_symlinks=False) and (  # the file type first: a FIFO is never opened
                        name.lower().endswith(exts) or (sniff and frames.unnamed(name) and frames.sniff(entry.path))
                ) and not litter.resource_fork(name, entry.path):  # a Mac's Finder metadata: never an image
                    # is_file() comes from the folder listing: a FIFO named x.jpg
                    # would otherwise hang the read.
                    found.append((rel, entry.stat(follow_symlinks=False)))
                elif (suffix := _unlisted_image(name, exts)) and entry.is_file(follow_symlinks=False):
                    unlisted.setdefault((base, suffix), []).append(rel)
            except OSError as exc:  # a stat that fails (a name too long, an I/O error): named, not skipped
                unexamined.append((rel, f"cannot examine it: {exc.strerror or exc}"))
        progress.advance(len(found) - before)
    found.sort(key=lambda item: item[0])
    outside.sort()
    unexamined += _unlisted_found(unlisted)
    unexamined.sort()
    return Listing(found, outside, ignored, unexamined)  # type: ignore[arg-type]


#: Image formats ``files.extensions`` may not list: the pictures read by default (a policy's own list
#: may drop some) and the formats not read (``suffixes.UNREAD``).  Such files are named in the report,
#: never skipped in silence (a folder of them is one finding).
IMAGE_LIKE = suffixes.PICTURES + suffixes.UNREAD


def _unlisted_image(name: str, exts: tuple[str, ...]) -> str:
    """The suffix of an image format ``exts`` leaves out (``.heic``), or ""."""
    low = name.lower()
    if low.endswith(exts) or name.startswith("."):
        return ""
    return next((s for s in IMAGE_LIKE if low.endswith(s)), "")


def _unlisted_found(unlisted: dict[tuple[str, str], list[str]]) -> list[tuple[str, str]]:
    """One unexamined entry per folder and suffix of images ``files.extensions`` leaves out, at its first file."""
    out = []
    for (folder, suffix), rels in sorted(unlisted.items()):
        rels.sort()
        what = "this file" if len(rels) == 1 else f"{len(rels)} files ending {suffix} in {folder or './'} (this one first)"
        fix = ("rasterise to PNG, or `ignore:` such files" if suffix in suffixes.VECTOR
               else f"add {suffix} to it, or `ignore:` such files")
        out.append((rels[0], f"{what}: an image format `files.extensions` does not list ({fix})"))
    return out


def _walk_url(policy: Policy) -> Listing:
    """Image objects under a URL root, filtered as :func:`_walk` filters files."""
    exts = policy.files.extensions
    ignore = _any_glob(policy.ignore)
    try:
        found = sources.find(policy.root)  # type: ignore[arg-type]
    except OSError as exc:
        raise PolicyError(f"cannot list root {policy.root}: {exc}", path=policy.display(("root",)), key="root",
                          fix="check the URL and the AWS_* credentials and endpoint in the environment") from None
    # Hidden objects are examined as hidden files on disk are (VCS_FOLDERS aside): a copy
    # under ``test/.cache/`` in a bucket is as much a leak as one in a folder.
    images = [(rel, st) for rel, st in found
              if rel.lower().endswith(exts) and not any(part in VCS_FOLDERS for part in rel.split("/")[:-1])]
    kept = [(rel, st) for rel, st in images if not (ignore is not None and ignore.match(rel))]
    return Listing(kept, [], len(images) - len(kept))  # type: ignore[arg-type]


def _read(policy: Policy) -> splitsources.Assignment:
    """What the split source holds: rows (path -> [(split, group)]), split names, images inside
    shards, and labels where it has a label column."""
    assert policy.split_sources is not None
    return splitsources.read(policy.split_sources, policy.root, policy.files.extensions)  # type: ignore[arg-type]


def _read_rows(policy: Policy) -> tuple[Rows, tuple[str, ...], tuple[tuple[str, int, int], ...]]:
    """Rows of the split source: path -> [(split, group)], split names, and images inside shards."""
    found = _read(policy)
    return found.rows, found.names, found.members


def manifest_splits(policy: Policy) -> tuple[str, ...]:
    """Split names a manifest (or split files) uses, in first-seen order, without walking the tree."""
    return _read_rows(policy)[1]


def scan(policy: Policy, progress: Progress = SILENT) -> Inventory:
    """List the dataset: every image file, its split, or the issue that stops it having one."""
    progress.start("listing")
    listing = _walk_url(policy) if sources.is_url(policy.root) else _with_frames(_walk(policy.root, policy, progress),
                                                                                  policy.root)
    progress.done()
    labels: Mapping[str, str] = {}
    if policy.split_sources is not None:
        found = _read(policy)
        rows, names, members, labels = found.rows, found.names, found.members, found.labels
        policy = with_splits(policy, names)
        if members:  # images inside shards are listed as the files are
            listing = Listing(sorted([*listing.files, *((p, sources.Stat(size, mtime)) for p, size, mtime in members)],
                                     key=lambda item: item[0]), listing.outside, listing.ignored)

        def split_of(rel: str) -> tuple[str, ...]:
            found = rows.get(rel)
            if found is None and rel.endswith("/\x00"):  # a folder: the splits of the rows below it
                below = rel[:-1]
                return tuple(dict.fromkeys(s for path, entries in rows.items() if path.startswith(below)
                                           for s, _ in entries))
            return tuple(dict.fromkeys(s for s, _ in found or ()))
        records, issues = _assign_rows(listing, rows)
        issues += _unlisted_shards(policy)
    else:
        rules = [(name, found) for name, patterns in policy.splits if (found := _any_glob(patterns))]

        def split_of(rel: str) -> tuple[str, ...]:
            return tuple(name for name, found in rules if found.match(rel))
        records, issues = _assign_globs(listing, split_of)
    for rel, target, folder in listing.outside:
        # A folder link is put in the splits a file inside it would fall in.
        splits = split_of(rel) or (split_of(rel + "/\x00") if folder else ())
        what = "a folder" if folder else "a file"
        issues.append(FileIssue("outside_root", rel, splits,
                                f"a symbolic link to {what} outside root ({target}); not followed, so not checked"))
    for rel, why in listing.unexamined:
        # The splits its files would fall in: then it may hide a leak, an error by `files.unreadable`.
        splits = split_of(rel) or split_of(rel + "/\x00")
        issues.append(FileIssue("not_examined", rel, splits, why + "; not examined"))
    if not sources.is_url(policy.root):
        issues += _later_pages(policy.root, records)
    return Inventory(policy=policy, records=tuple(records), issues=tuple(issues), ignored=listing.ignored,
                     labels=labels)


#: Split sources whose images live inside shards, and the shard suffixes each reads.
_SHARDS = {"huggingface": members.TABLES, "webdataset": (members.TAR,)}


def _unlisted_shards(policy: Policy) -> list[FileIssue]:
    """Shards under root that no split's globs match: an image file in no split is reported, and a shard
    added later (``train-000004.tar`` beside globs that list four) held images nobody checked."""
    spec = policy.split_sources
    suffixes = _SHARDS.get(spec.kind) if spec is not None else None
    if suffixes is None or sources.is_url(policy.root):
        return []
    listed = {f.images for f in spec.files}  # type: ignore[union-attr]
    ignore = _any_glob(policy.ignore)
    return [FileIssue("unassigned", rel, (), "a shard no split's globs match: its images are not checked")
            for rel in shard_listing(Path(policy.root), suffixes)
            if rel not in listed and not (ignore is not None and ignore.match(rel))]


def _later_pages(root: Path, records: list[FileRecord]) -> list[FileIssue]:
    """One ``pages`` issue per folder and split of multi-page TIFFs, at its first file: the check
    decodes a file's first page only, so the others are compared with nothing (``files.tiffpages``)."""
    found: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for r in records:
        if r.path.lower().endswith(tiffpages.SUFFIXES) and (n := tiffpages.pages(os.path.join(root, r.path))) > 1:
            found.setdefault((os.path.dirname(r.path), r.split), []).append((r.path, n))
    out = []
    for (_, split), files in sorted(found.items()):
        (first, n), more = files[0], len(files) - 1
        what = (f"a TIFF of {n} pages" if not more else
                f"{len(files)} multi-page TIFFs in this folder ({sum(k for _, k in files)} pages; this one first)")
        out.append(FileIssue("pages", first, (split,), f"{what}: only the first page of each is checked, "
                             "the others are compared with nothing"))
    return out


def _with_frames(listing: Listing, root: Path) -> Listing:
    """Each multi-frame DICOM file listed as its frames (``scan.dcm#frame=0001``...), as shard members are."""
    if not any(frames.named(rel) for rel, _ in listing.files):
        return listing
    files: list[tuple[str, os.stat_result]] = []
    for rel, st in listing.files:
        count = frames.frame_count(os.path.join(root, rel)) if frames.named(rel) else 1
        files += [(rel, st)] if count == 1 else [(members.join(rel, frames.member(k, count)), st)
                                                 for k in range(count)]
    files.sort(key=lambda item: item[0])
    return Listing(files, listing.outside, listing.ignored, listing.unexamined)  # type: ignore[arg-type]


def _assign_rows(listing: Listing, rows: Rows,
                 ) -> tuple[list[FileRecord], list[FileIssue]]:
    """Files against manifest rows: records, and unassigned, ambiguous and missing files."""
    records: list[FileRecord] = []
    issues: list[FileIssue] = []
    # A listed link that leaves root is its own finding, not also a missing file.
    seen = {rel for rel, _, _ in listing.outside}
    for rel, st in listing.files:
        seen.add(rel)
        entries = rows.get(rel)
        if entries is None and members.SEP in rel:  # a frame of a multi-frame file the manifest lists whole
            seen.add(members.shard_of(rel))
            entries = rows.get(members.shard_of(rel))
        if not entries:
            issues.append(FileIssue("unassigned", rel, (), "listed in no split"))
            continue
        splits = tuple(dict.fromkeys(s for s, _ in entries))
        if len(splits) > 1:
            issues.append(FileIssue("ambiguous", rel, splits, "listed in several splits"))
            continue
        records.append(FileRecord(rel, splits[0], entries[0][1], st.st_size, st.st_mtime_ns))
    # A row below a folder that could not be listed is reported with that folder, not as missing.
    hidden_by = tuple(rel + "/" for rel, _ in listing.unexamined)
    missing = [rel for rel in sorted(set(rows) - seen) if not (hidden_by and rel.startswith(hidden_by))]
    renamed = names.same_but_punctuation(missing, [i.path for i in issues if i.kind == "unassigned"])
    for rel in missing:
        # Rows come from any split source (a manifest, split lists, id lists, COCO files, a table), so the
        # message names the split, not a manifest the policy may not have.
        split = rows[rel][0][0]
        hint = (f" ({renamed[rel]}, in no split, has its name but for punctuation: renamed since?)"
                if rel in renamed else "")
        issues.append(FileIssue("missing", rel, (split,), f"listed for the {split} split, not on disk{hint}"))
    return records, issues


def _assign_globs(listing: Listing, split_of: Callable[[str], tuple[str, ...]],
                  ) -> tuple[list[FileRecord], list[FileIssue]]:
    """Files against split globs: records, and unassigned and ambiguous files."""
    records: list[FileRecord] = []
    issues: list[FileIssue] = []
    for rel, st in listing.files:
        splits = split_of(rel)
        if not splits:
            issues.append(FileIssue("unassigned", rel, (), "matches no split's globs"))
        elif len(splits) > 1:
            issues.append(FileIssue("ambiguous", rel, splits, "matches the globs of several splits"))
        else:
            records.append(FileRecord(rel, splits[0], None, st.st_size, st.st_mtime_ns))
    return records, issues
