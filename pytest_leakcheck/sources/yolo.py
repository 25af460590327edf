"""Ultralytics YOLO ``data.yaml``: ``train``/``val``/``test`` as folders, ``.txt`` lists, or lists of either.

::

    splits:
      yolo: data.yaml       # relative to root

``path:`` in data.yaml is the base the entries are relative to.  It is often
an absolute path on the machine that wrote the file, or Roboflow's ``../``
entries; so each entry is looked up under ``path:`` first, then under
data.yaml's own folder, and only inside root.  A ``.txt`` list names one image
per line, ``./``-relative to the list's folder or relative to the base.
"""

from __future__ import annotations

import os
from pathlib import Path
from collections.abc import Iterator
from typing import Any

from ..validate import Ctx, inside, read_yaml
from ..errors import PolicyError
from ..files import suffixes
from ..files.names import excerpt
from .base import SPLIT_WORDS, Assignment, Guess, Rows, SourceFile, SplitSources, add, clean_path

KIND = "yolo"
SPLIT_KEYS = ("train", "val", "test")
IMAGE_EXTS = suffixes.PICTURES


def parse(ctx: Ctx, raw: Any, root: Path, kind: str = KIND) -> SplitSources:
    at = ("splits", KIND)
    if not isinstance(raw, str) or not raw:
        raise ctx.fail(at, "expected the path of a YOLO data.yaml", "e.g. `yolo: data.yaml`")
    path = inside(ctx, at, raw, root / raw, (ctx.path.parent, root), "data.yaml")
    if not path.is_file():
        raise ctx.fail(at, f"data.yaml {excerpt(raw)} not found ({path})", "fix the path; it is relative to `root`")
    data = _load(path)
    splits = [k for k in SPLIT_KEYS if data.get(k)]
    if not splits:
        raise ctx.fail(at, f"{excerpt(raw)} names no split (no `train`, `val` or `test`)",
                       "a YOLO data.yaml has `train: images/train` and `val: images/val`")
    return SplitSources(KIND, tuple(SourceFile(path, s) for s in splits))


def _load(path: Path) -> dict:
    data, _ = read_yaml(path)
    if not isinstance(data, dict):
        raise PolicyError("data.yaml is not a mapping", path=str(path),
                          fix="a YOLO data.yaml maps `train`, `val`, `test` to folders or .txt lists")
    return data


def _bases(yaml_path: Path, data: dict, root: Path) -> list[Path]:
    folder = yaml_path.parent
    out = []
    base = data.get("path")
    if isinstance(base, str) and "\0" in base:
        raise PolicyError("`path` holds a NUL byte, which no file name can", path=str(yaml_path), key="path",
                          fix="write the dataset's folder, relative to data.yaml")
    if isinstance(base, str) and base:
        candidate = (folder / base).resolve()
        if candidate.is_dir() and _inside(candidate, root):
            out.append(candidate)
    return [*out, folder.resolve()]


def _inside(path: Path, root: Path) -> bool:
    real, base = Path(os.path.realpath(path)), root.resolve()
    return real == base or base in real.parents


def _locate(entry: str, bases: list[Path], root: Path) -> Path | None:
    tries = [entry]
    while tries[-1].startswith("../"):  # Roboflow writes ../train/images beside data.yaml
        tries.append(tries[-1][3:])
    for text in tries:
        for base in bases:
            candidate = Path(os.path.normpath(base / text))
            if candidate.exists() and _inside(candidate, root):
                return candidate
    return None


def read(spec: SplitSources, root: Path, extensions: tuple[str, ...] = IMAGE_EXTS) -> Assignment:
    rows: Rows = {}
    names: dict[str, None] = {}
    base_root = root.resolve()
    for source in spec.files:
        assert source.split is not None
        data = _load(source.path)
        bases = _bases(source.path, data, root)
        entries = data.get(source.split)
        for entry in entries if isinstance(entries, list) else [entries]:
            if not isinstance(entry, str) or not entry or "\0" in entry:
                raise PolicyError(f"`{source.split}` entry {excerpt(entry)} is not a path", path=str(source.path),
                                  key=source.split, fix="write a folder or a .txt list, relative to `path:`")
            found = _locate(entry, bases, root)
            if found is None:
                raise PolicyError(f"`{source.split}` entry {excerpt(entry)} not found under root",
                                  path=str(source.path), key=source.split,
                                  fix="entries are relative to `path:` (or to data.yaml's folder) and inside root")
            names.setdefault(source.split)
            for rel in (_listed(found, bases, root) if found.is_file() else _folder(found, base_root, extensions)):
                add(rows, names, rel, source.split)
    return Assignment(rows, tuple(names))


def _folder(folder: Path, root: Path, extensions: tuple[str, ...]) -> list[str]:
    out = []
    for here, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        rel = Path(here).resolve().relative_to(root).as_posix()
        prefix = "" if rel == "." else rel + "/"
        out += [prefix + f for f in sorted(files) if f.lower().endswith(extensions) and not f.startswith(".")]
    return out


def _listed(txt: Path, bases: list[Path], root: Path) -> list[str]:
    out = []
    base_root = root.resolve()
    try:
        lines = txt.read_text(encoding="utf-8", errors="surrogateescape").splitlines()
    except OSError as exc:
        raise PolicyError(f"cannot read image list: {exc.strerror or exc}", path=str(txt)) from None
    for n, line in enumerate(lines, 1):
        entry = clean_path(line) if line.strip() else ""
        if not entry:
            continue
        if "\0" in entry:  # no file name holds one; the file system would refuse to look it up
            raise PolicyError(f"line {n} holds a NUL byte", path=str(txt), line=n, fix="one image path per line")
        if len(entry) > 4096:
            raise PolicyError(f"line {n} is {len(entry):,} characters long", path=str(txt), line=n,
                              fix="one image path per line")
        folders = [txt.parent.resolve()] if line.strip().startswith("./") else [*bases, txt.parent.resolve()]
        path = next((Path(os.path.normpath(b / entry)) for b in folders if (b / entry).exists()),
                    Path(os.path.normpath(folders[0] / entry)))
        if not _inside(path, root):
            raise PolicyError(f"line {n} names {excerpt(entry)}, outside root", path=str(txt), line=n,
                              fix="list images inside the dataset folder, relative to data.yaml's `path:`")
        out.append(path.relative_to(base_root).as_posix() if path.is_absolute() else path.as_posix())
    return out


def _split_files(root: Path) -> Iterator[tuple[Path, list[str]]]:
    """Each YAML file at the root or one folder down that names train and another split."""
    for path in sorted(p for depth in ("", "*/") for ext in ("yaml", "yml") for p in root.glob(f"{depth}*.{ext}")):
        if path.name.startswith(".") or path.name.startswith("leakcheck"):
            continue
        try:
            data = _load(path)
        except PolicyError:
            continue
        splits = [k for k in SPLIT_KEYS if data.get(k)]
        if "train" in splits and len(splits) >= 2:
            yield path, splits


def unusable(root: Path) -> list[str]:
    """Why each YOLO file naming splits could not be read (paths that are not under the dataset,
    a trainer's absolute ``D:/…`` ones): ``init`` says so when it falls back to split folders."""
    out = []
    for path, splits in _split_files(root):
        try:
            read(SplitSources(KIND, tuple(SourceFile(path, s) for s in splits)), root)
        except PolicyError as exc:
            out.append(f"{path.relative_to(root).as_posix()} names splits, but its {exc.problem}: not used")
    return out


def recognise(root: Path, files: list[str]) -> Guess | None:
    for path, splits in _split_files(root):
        rel = path.relative_to(root).as_posix()
        try:
            assignment = read(SplitSources(KIND, tuple(SourceFile(path, s) for s in splits)), root)
        except PolicyError:
            continue
        counts = {s: sum(1 for e in assignment.rows.values() if e[0][0] == s) for s in SPLIT_WORDS if s in splits}
        found = (f"YOLO {rel}: " + ", ".join(f"{s} {n}" for s, n in counts.items()) + " images",)
        return Guess(f"splits:\n  yolo: {rel}   # train/val/test folders or .txt lists\n", found, assignment)
    return None
