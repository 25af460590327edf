"""Load and validate ``leakcheck.yaml`` into a frozen :class:`Policy`.

Validation is strict on purpose: a typo in a threshold key would otherwise
silently fall back to a default and let leaks through.  Every error names the
file, the line, the key and a fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .. import detectors
from ..files import globs, remote as sources, suffixes
from . import grouprules
from .. import sources as splitsources
from ..validate import AUGMENTATIONS, SEVERITIES, Ctx, inside, read_yaml, remote, type_name
from ..errors import PolicyError
from .grouprules import GroupRule, ShareRules
from ..files.names import excerpt

SCHEMA_VERSION = 1
DEFAULT_POLICY_NAME = "leakcheck.yaml"
DEFAULT_BASELINE_NAME = ".leakcheck-baseline.yaml"
# All eight: a copy turned by 90 degrees is a leak as much as a mirrored one (aerial,
# medical and scanned data have no "up"), and a user who never reads the summary
# must not miss it. The hashes search every orientation; the aligned verifier
# judges each turned hash hit by detail (the first image turned as the hash found
# it), which drops the low-texture coincidences that once made this too noisy.
DEFAULT_AUGMENTATIONS = AUGMENTATIONS
DEFAULT_EXTENSIONS = suffixes.IMAGES
# Pillow's own bomb limit is 2 * 89.5 Mpx; a dataset image larger than this is
# almost certainly a mistake or an attack, and decoding it could exhaust memory.
DEFAULT_MAX_PIXELS = 178_956_970


@dataclass(frozen=True)
class FileRules:
    extensions: tuple[str, ...] = DEFAULT_EXTENSIONS
    unassigned: str = "warning"
    ambiguous: str = "error"
    unreadable: str = "error"
    missing: str = "error"
    #: A symbolic link under root whose target is outside it (its files are not checked).
    outside_root: str = "error"
    max_pixels: int = DEFAULT_MAX_PIXELS


@dataclass(frozen=True)
class Policy:
    """Everything one check needs to know, resolved to absolute paths."""

    path: Path
    #: The dataset folder, or a :class:`~sources.Url` in object storage (``s3://bucket/prefix``).
    root: Path | sources.Url
    splits: tuple[tuple[str, tuple[str, ...]], ...] = ()
    split_names: tuple[str, ...] = ()
    pairs: tuple[tuple[str, str], ...] = ()
    within_split: str = "warning"
    #: One picture under two labels within a split (``pipeline/conflicts.py``): error, warning or off.
    label_conflict: str = "warning"
    detectors: detectors.Detectors = field(default_factory=detectors.default)
    augmentations: tuple[str, ...] = DEFAULT_AUGMENTATIONS
    files: FileRules = field(default_factory=FileRules)
    ignore: tuple[str, ...] = ()
    cache: Path = Path(".leakcheck/cache.sqlite")
    #: Group rules, first match wins; see docs/policy-groups.md.
    groups: tuple[GroupRule, ...] = ()
    ungrouped: str = "warning"
    group_split: str = "error"
    split_share: ShareRules | None = None
    #: Judged findings; None (a policy built in code) means no baseline.
    baseline: Path | None = None
    #: Tables, COCO, YOLO, Hugging Face or WebDataset shards (sources/), read like a manifest.
    split_sources: splitsources.SplitSources | None = None
    #: Key path -> line number, for messages that point at the policy.
    lines: dict[tuple[str, ...], int] = field(default_factory=dict, compare=False, repr=False)

    @property
    def manifest(self) -> Path | sources.Url | None:
        """The ``path,split[,group]`` table of ``splits: {manifest: FILE}``, if that is the split source."""
        return _manifest(self.split_sources)

    @property
    def store_folders(self) -> tuple[Path, ...]:
        """Local folders the signature store may live in (a URL root is not one)."""
        return tuple(p for p in (self.path.parent, self.root) if isinstance(p, Path))

    @property
    def orientations(self) -> tuple[str, ...]:
        return ("identity", *self.augmentations)

    def display(self, key: tuple[str, ...] = ()) -> str:
        """``file:line`` for a key, for messages that point into the policy."""
        line = self.lines.get(key)
        return f"{self.path}:{line}" if line else str(self.path)


# --------------------------------------------------------------------------
# Sections


def _splits(ctx: Ctx, raw: Any) -> tuple[tuple[tuple[str, tuple[str, ...]], ...], tuple[str, ...]]:
    """Glob splits: split name -> globs (every other kind of split goes through sources/)."""
    at = ("splits",)
    if raw is None:
        raise ctx.fail(at, "no splits defined", "add e.g. `splits: {train: [train/**], test: [test/**]}`")
    if not isinstance(raw, dict) or not raw:
        raise ctx.fail(at, f"expected a mapping of split name to globs, got {type_name(raw)}")
    rules = []
    for name, patterns in raw.items():
        if not isinstance(name, str) or not name.replace("-", "").replace("_", "").isalnum():
            raise ctx.fail((*at, str(name)), "split names use letters, digits, - and _")
        rules.append((name, _globs(ctx, patterns, (*at, name))))
    return tuple(rules), tuple(name for name, _ in rules)


def _globs(ctx: Ctx, raw: Any, at: tuple[str, ...]) -> tuple[str, ...]:
    """A list of globs, each parsed now: a typo in a class fails here, not in the middle of a scan."""
    patterns = ctx.strings(raw, at)
    for i, pattern in enumerate(patterns):
        try:
            globs.compile(pattern)
        except globs.GlobError as exc:
            raise ctx.fail((*at, str(i)), f"malformed glob {excerpt(pattern)}: {exc}",
                           "globs follow .gitignore: `**` spans folders, `*` and `?` one name, `[a-z]` a class",
                           ) from None
    return patterns


def _label_conflict(ctx: Ctx, raw: Any) -> str:
    """``pairs.label_conflict``: the severity of one picture under two labels within a split."""
    raw = ctx.mapping(raw, ("pairs",), ("compare", "within_split", "label_conflict"))
    return ctx.choice(raw.get("label_conflict", "warning"), ("pairs", "label_conflict"), SEVERITIES)


def _pairs(ctx: Ctx, raw: Any, names: tuple[str, ...]) -> tuple[tuple[tuple[str, str], ...], str]:
    at = ("pairs",)
    raw = ctx.mapping(raw, at, ("compare", "within_split", "label_conflict"))
    within = ctx.choice(raw.get("within_split", "warning"), (*at, "within_split"), SEVERITIES)
    compare = raw.get("compare", "all")
    if compare == "all":
        pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
        return tuple(pairs), within
    if not isinstance(compare, list):
        raise ctx.fail((*at, "compare"), f"expected `all` or a list like [train~test], got {type_name(compare)}")
    if not compare:
        raise ctx.fail((*at, "compare"), "compares no pair of splits, so no leak between splits can be found",
                       "list the pairs to search, e.g. `[train~test, val~test]`, or write `all`")
    pairs = []
    for i, item in enumerate(compare):
        where = (*at, "compare", str(i))
        parts = [p.strip() for p in item.split("~")] if isinstance(item, str) else item
        if not isinstance(parts, list) or len(parts) != 2 or parts[0] == parts[1]:
            raise ctx.fail(where, f"invalid pair {excerpt(item)}", "write two different splits as `train~test`")
        for part in parts:
            if names and part not in names:
                raise ctx.fail(where, f"unknown split {excerpt(part)}", "splits are: " + ", ".join(names))
        pairs.append(tuple(parts))
    return tuple(pairs), within


def _files(ctx: Ctx, raw: Any) -> FileRules:
    at = ("files",)
    keys = ("extensions", "unassigned", "ambiguous", "unreadable", "missing", "outside_root", "max_pixels")
    raw = ctx.mapping(raw, at, keys)
    d = FileRules()
    exts = d.extensions
    if "extensions" in raw:
        exts = tuple(
            ("." + e.lower().lstrip(".")) for e in ctx.strings(raw["extensions"], (*at, "extensions"))
        )
    sev: dict[str, str] = {
        k: ctx.choice(raw.get(k, getattr(d, k)), (*at, k), SEVERITIES)
        for k in ("unassigned", "ambiguous", "unreadable", "missing", "outside_root")
    }
    max_pixels = ctx.number(raw.get("max_pixels", d.max_pixels), (*at, "max_pixels"), int, 1, 10**12)
    return FileRules(extensions=exts, max_pixels=max_pixels, **sev)


_TOP_KEYS = ("version", "root", "splits", "pairs", "detectors", "augmentations", "files", "ignore", "cache",
             "baseline", "executor")
# Group rules, validated by groups.py; see docs/policy-groups.md.
_GROUP_KEYS = ("groups", "ungrouped", "group_split", "split_share")


def load(path: str | Path, *, need_manifest: bool = True) -> Policy:
    """Read and validate a policy file; raise :class:`PolicyError` on any problem.

    ``need_manifest=False`` accepts a manifest that does not exist yet, for
    ``leakcheck split``, which writes it.
    """
    path = Path(path).absolute()
    data, lines = read_yaml(path)
    ctx = Ctx(path, lines)
    if data is None:
        raise ctx.fail((), "the policy is empty", "run `leakcheck init` for a commented example")
    raw = ctx.mapping(data, (), _TOP_KEYS + _GROUP_KEYS)
    _no_executor(ctx, raw)
    if "version" not in raw:
        raise ctx.fail(("version",), "missing `version`", f"add `version: {SCHEMA_VERSION}` at the top")
    version = raw["version"]
    if isinstance(version, bool) or version != SCHEMA_VERSION:  # `version: true` equals 1 in Python
        raise ctx.fail(("version",), f"unsupported policy version {excerpt(version)}",
                       f"this leakcheck reads version {SCHEMA_VERSION}; upgrade pytest-leakcheck")
    root_raw = raw.get("root", ".")
    if not isinstance(root_raw, str):
        raise ctx.fail(("root",), "expected a folder path")
    root = _root(ctx, path, root_raw)
    if not isinstance(root, sources.Url) and not root.is_dir():
        raise ctx.fail(("root",), f"folder {excerpt(root_raw)} does not exist", "point `root` at the dataset folder")
    split_sources = splitsources.parse(ctx, raw.get("splits"), root)
    if split_sources is not None:
        splits, names = (), split_sources.names
        if need_manifest:
            _present(ctx, split_sources, raw["splits"])
    else:
        splits, names = _splits(ctx, raw.get("splits"))
    pairs, within = _pairs(ctx, raw.get("pairs"), names)
    augs = DEFAULT_AUGMENTATIONS
    if "augmentations" in raw:
        augs = ctx.strings(raw["augmentations"] or [], ("augmentations",))
    for i, aug in enumerate(augs):
        ctx.choice(aug, ("augmentations", str(i)), AUGMENTATIONS)
    cache = raw.get("cache", ".leakcheck/cache.sqlite")
    if not isinstance(cache, str) or not cache:
        raise ctx.fail(("cache",), "expected a file path")
    baseline = raw.get("baseline", DEFAULT_BASELINE_NAME)
    if not isinstance(baseline, str) or not baseline:
        raise ctx.fail(("baseline",), "expected a file path", f"e.g. `baseline: {DEFAULT_BASELINE_NAME}`")
    return Policy(
        path=path,
        root=root,
        splits=splits,
        split_names=names,
        pairs=pairs,
        within_split=within,
        label_conflict=_label_conflict(ctx, raw.get("pairs")),
        detectors=detectors.parse(ctx, raw.get("detectors")),
        augmentations=tuple(dict.fromkeys(augs)),
        files=_files(ctx, raw.get("files")),
        ignore=_globs(ctx, raw["ignore"], ("ignore",)) if raw.get("ignore") else (),
        cache=(path.parent / cache).resolve(),
        baseline=inside(ctx, ("baseline",), baseline, path.parent / baseline, _folders(ctx, root), "baseline"),
        lines=lines,
        split_sources=split_sources,
        **_group_keys(ctx, raw, root, _manifest(split_sources), names),
    )


def _root(ctx: Ctx, path: Path, raw: str) -> Path | sources.Url:
    """A folder relative to the policy, or a URL; a URL root is checked when it is listed."""
    if not sources.is_url(raw):
        return inside(ctx, ("root",), raw, path.parent / raw, (path.parent,), "root folder")
    url = sources.parse(raw)
    if url is None:
        raise ctx.fail(("root",), f"{excerpt(raw)} is not a usable URL", "write it as s3://bucket/prefix, without `..`")
    return remote(ctx, ("root",), raw, url)


def _present(ctx: Ctx, spec: splitsources.SplitSources, raw: dict) -> None:
    """Every local file the split source names exists (``leakcheck split`` may name one it will write)."""
    if splitsources.missing(spec):
        raise ctx.fail(("splits", spec.kind), f"{spec.kind} {excerpt(raw[spec.kind])} not found",
                       splitsources.missing_fix(spec))


def _manifest(spec: splitsources.SplitSources | None) -> Path | sources.Url | None:
    return spec.files[0].path if spec is not None and spec.kind == "manifest" else None


def _folders(ctx: Ctx, root: Path | sources.Url) -> tuple[Path, ...]:
    """Where files the policy names may lie: its own folder and a local root."""
    return (ctx.path.parent, root) if isinstance(root, Path) else (ctx.path.parent,)


def _no_executor(ctx: Ctx, raw: dict) -> None:
    """Refuse ``executor:``: where code runs is the workflow owner's choice, never the policy's.

    A policy comes with the pull request; a Dask scheduler it named would run
    the check's work and return whatever results it liked (docs/security.md).
    """
    if "executor" in raw:
        raise ctx.fail(("executor",), "the policy cannot choose where the check runs",
                       "drop the key; the workflow's owner passes `--executor tcp://HOST:8786` "
                       "or sets LEAKCHECK_EXECUTOR in the job's environment")


def _group_keys(
    ctx: Ctx, raw: dict, root: Path, manifest: Path | None, names: tuple[str, ...]
) -> dict:
    if not any(k in raw for k in _GROUP_KEYS):
        return {}
    return {
        "groups": grouprules.parse_rules(ctx, raw.get("groups"), root, manifest),
        "ungrouped": ctx.choice(raw.get("ungrouped", "warning"), ("ungrouped",), grouprules.UNGROUPED),
        "group_split": ctx.choice(raw.get("group_split", "error"), ("group_split",), SEVERITIES),
        "split_share": grouprules.parse_share(ctx, raw.get("split_share"), names, SEVERITIES),
    }


def with_splits(policy: Policy, names: tuple[str, ...]) -> Policy:
    """Fill in split names and default pairs once a manifest has been read."""
    pairs = policy.pairs
    if not pairs:
        pairs = tuple((a, b) for i, a in enumerate(names) for b in names[i + 1 :])
    unknown = [p for pair in pairs for p in pair if p not in names]
    if unknown:
        raise PolicyError(
            f"pair names split {excerpt(unknown[0])}, which the manifest does not use",
            path=policy.display(("pairs", "compare")),
            key="pairs.compare",
            fix="splits in the manifest are: " + ", ".join(names),
        )
    return replace(policy, split_names=names, pairs=pairs)


