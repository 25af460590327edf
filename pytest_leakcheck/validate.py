"""Reading YAML with line numbers, and the checks every policy section shares.

The policy loader and every module that owns a section of the policy (each
detector, the group rules) validate through :class:`Ctx`, so each error names
the file, the line, the key and a fix in the same words.  This module sits
below all of them and imports none of them.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from . import orientation as _orientation
from .errors import LeakcheckError, PolicyError
from .files.names import display, excerpt

SEVERITIES = ("error", "warning", "off")
#: The eight orientations of a square (``identity`` is always searched): defined in orientation.py.
ORIENTATIONS = _orientation.ORIENTATIONS
AUGMENTATIONS = _orientation.AUGMENTATIONS


@dataclass(frozen=True)
class Bounds:
    """Limits on a YAML document, checked while its node graph is composed.

    A pull request controls the YAML: an alias bomb ("billion laughs") is a
    few hundred bytes that expand to billions of nodes, and deep nesting
    overflows the recursive composer.  So the node graph is built with a
    count of every node it would expand to, aliases included, and construction
    into Python objects only starts once it is known to be small.
    """

    #: Bytes of the document, checked before parsing.
    max_bytes: int = 1 << 20
    #: Nodes after expanding every alias (the cost of walking the data).
    max_nodes: int = 100_000
    max_depth: int = 64
    #: Alias uses (`*name`) in the document.
    max_aliases: int = 1_000


POLICY_BOUNDS = Bounds()


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader whose composer refuses documents beyond its :class:`Bounds`."""

    def __init__(self, text: str, bounds: Bounds) -> None:
        super().__init__(text)
        self.bounds = bounds
        self.depth = 0
        self.aliases = 0
        self.weight = 0  # nodes so far, each alias counted as the nodes it expands to
        self.sizes: dict[int, int] = {}  # id(node) -> expanded node count, once composed

    def _refuse(self, problem: str, mark: Any) -> yaml.YAMLError:
        return yaml.composer.ComposerError(None, None, problem, mark)

    def compose_node(self, parent: Any, index: Any) -> Any:
        b = self.bounds
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            target = self.anchors.get(event.anchor)
            if target is not None:
                self.aliases += 1
                if self.aliases > b.max_aliases:
                    raise self._refuse(f"more than {b.max_aliases} aliases", event.start_mark)
                size = self.sizes.get(id(target))
                if size is None:  # the anchor is still open: the alias is inside its own node
                    raise self._refuse(f"alias *{event.anchor} refers to a node that contains it",
                                       event.start_mark)
                self._add(size, event.start_mark)
            return super().compose_node(parent, index)
        mark = self.peek_event().start_mark
        self.depth += 1
        if self.depth > b.max_depth:
            raise self._refuse(f"nested more than {b.max_depth} levels deep", mark)
        start = self.weight
        self._add(1, mark)
        node = super().compose_node(parent, index)
        self.sizes[id(node)] = self.weight - start
        self.depth -= 1
        return node

    def _add(self, nodes: int, mark: Any) -> None:
        self.weight += nodes
        if self.weight > self.bounds.max_nodes:
            raise self._refuse(f"more than {self.bounds.max_nodes:,} values once aliases are expanded", mark)


def read_yaml(path: Path, bounds: Bounds = POLICY_BOUNDS) -> tuple[Any, dict[tuple[str, ...], int]]:
    try:
        # Read at most one byte past the limit (a FIFO or /proc file has no size to check first).
        with open(path, encoding="utf-8") as fh:
            text = fh.read(bounds.max_bytes + 1)
    except FileNotFoundError:
        raise PolicyError(
            "policy file not found",
            path=str(path),
            fix="run `leakcheck init` to write one, or pass --policy PATH",
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(f"cannot read policy: {exc}", path=str(path)) from None
    if len(text) > bounds.max_bytes:
        raise PolicyError(f"the file is longer than the limit of {bounds.max_bytes:,} characters", path=str(path),
                          fix="long lists of files belong in a manifest CSV, not in YAML")
    loader = None
    try:
        loader = _BoundedLoader(text, bounds)  # the reader refuses control characters here already
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise PolicyError(
            f"invalid YAML: {getattr(exc, 'problem', None) or exc}",
            path=str(path),
            line=mark.line + 1 if mark else None,
            fix="check indentation and quoting near that line",
        ) from None
    except Exception as exc:
        # int() of a 5,000-digit number, a date like 2020-13-45, an empty `!!int` (an IndexError
        # inside PyYAML): the graph is already bounded, so whatever fails now is the document's value.
        raise PolicyError(f"invalid YAML value: {excerpt(str(exc))}", path=str(path),
                          fix="quote the value if it is text, or correct the number or date") from None
    finally:
        if loader is not None:
            loader.dispose()
    lines: dict[tuple[str, ...], int] = {}
    if node is not None:
        _record_lines(node, (), lines, path)
    return data, lines


def _record_lines(node: yaml.Node, at: tuple[str, ...], lines: dict, path: Path) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value)
            if key in seen:
                raise PolicyError(
                    "duplicate key",
                    path=str(path),
                    line=key_node.start_mark.line + 1,
                    key=".".join((*at, key)),
                    fix="keep one of them",
                )
            seen.add(key)
            lines[(*at, key)] = key_node.start_mark.line + 1
            _record_lines(value_node, (*at, key), lines, path)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[(*at, str(i))] = item.start_mark.line + 1
            _record_lines(item, (*at, str(i)), lines, path)


# --------------------------------------------------------------------------
# Validation helpers


class Ctx:
    """Where we are in a YAML file, so every error can point at the line.

    ``error`` is the error class raised: the policy's by default, the
    baseline's for the baseline file.
    """

    def __init__(self, path: Path, lines: dict[tuple[str, ...], int],
                 error: type[LeakcheckError] = PolicyError) -> None:
        self.path = path
        self.lines = lines
        self.error = error

    def fail(self, at: tuple[str, ...], problem: str, fix: str | None = None) -> LeakcheckError:
        line = None
        for n in range(len(at), 0, -1):
            line = self.lines.get(at[:n])
            if line:
                break
        return self.error(problem, path=str(self.path), line=line, key=".".join(at) or None, fix=fix)

    def mapping(self, value: Any, at: tuple[str, ...], allowed: tuple[str, ...]) -> dict:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(at, f"expected a mapping, got {type_name(value)}")
        for key in value:
            if not isinstance(key, str) or key not in allowed:
                close = difflib.get_close_matches(str(key), allowed, n=1)
                fix = f"did you mean `{close[0]}`?" if close else "allowed keys: " + ", ".join(allowed)
                raise self.fail((*at, str(key)), "unknown key", fix)
        return value

    def choice(self, value: Any, at: tuple[str, ...], choices: tuple[str, ...]) -> str:
        # YAML 1.1 reads a bare `off` as false; people mean the word.
        if value is False and "off" in choices:
            return "off"
        if value not in choices:
            close = difflib.get_close_matches(str(value), choices, n=1)
            fix = f"did you mean `{close[0]}`?" if close else "use one of: " + ", ".join(choices)
            raise self.fail(at, f"invalid value {excerpt(value)}", fix)
        return value

    def number(self, value: Any, at: tuple[str, ...], kind: type, lo: float, hi: float) -> Any:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if kind is int:
            # float() of a huge YAML integer overflows; only floats need the check.
            ok = ok and (isinstance(value, int) or float(value).is_integer())
        if not ok:
            raise self.fail(at, f"expected {'an integer' if kind is int else 'a number'}, got {type_name(value)}")
        if not lo <= value <= hi:
            raise self.fail(at, f"{excerpt(value)} is out of range", f"use a value from {lo} to {hi}")
        return kind(value)

    def strings(self, value: Any, at: tuple[str, ...]) -> tuple[str, ...]:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self.fail(at, f"expected a list of strings, got {type_name(value)}")
        return tuple(value)


#: Folders (separated by os.pathsep) that files named in the policy may also lie in.  The
#: explicit opt-out of the rule that they stay inside the policy's folder and root: a pull
#: request can edit the policy but not the environment of the job that runs leakcheck.
ALLOW_ENV = "LEAKCHECK_ALLOW_PATHS"


def allowed_folders() -> tuple[Path, ...]:
    """The folders :data:`ALLOW_ENV` names, resolved; empty when it is unset."""
    raw = os.environ.get(ALLOW_ENV, "")
    return tuple(Path(p).expanduser().resolve() for p in raw.split(os.pathsep) if p.strip())


def inside(ctx: Ctx, at: tuple[str, ...], raw: str, path: Path, folders: tuple[Path, ...], what: str) -> Path:
    """``path`` resolved (links followed), refused unless it is in one of ``folders``
    (the policy's folder first), or in a folder of :data:`ALLOW_ENV`.

    Checked before the file is opened or even tested for existence: a policy
    naming ``/proc/self/environ`` or ``~/.ssh/id_rsa`` must not get its
    contents into an error message or a report.
    """
    real = path.resolve()
    bases = list(dict.fromkeys([*(f.resolve() for f in folders), *allowed_folders()]))
    if any(real == base or base in real.parents for base in bases):
        return real
    where = " or ".join(display(str(b)) for b in bases)
    fix = f"keep it inside {where}; to read files elsewhere on purpose, set {ALLOW_ENV}=FOLDER in the environment"
    raise ctx.fail(at, f"{what} {excerpt(raw)} is outside the policy's folder ({display(str(real))})", fix)


#: Object-storage prefixes (separated by white space) that a policy may name as its root or
#: manifest, e.g. ``s3://bucket/datasets``.  Which hosts the check contacts is the workflow
#: owner's choice: a policy alone never makes it read anything over the network.
REMOTE_ENV = "LEAKCHECK_ALLOW_REMOTE"
#: The object stores leakcheck reads; any other scheme (http, file, ftp, …) is refused.
REMOTE_SCHEMES = ("s3",)


def remote(ctx: Ctx, at: tuple[str, ...], raw: str, url: Any) -> Any:
    """``url`` (a parsed ``sources.Url``), refused unless its scheme is object storage and
    it lies under a prefix the job's :data:`REMOTE_ENV` names.

    Checked before anything is contacted, so a refused URL costs no request and
    no error quotes what a host would have answered.
    """
    scheme = str(url).partition("://")[0]
    if scheme not in REMOTE_SCHEMES:
        raise ctx.fail(at, f"{excerpt(raw)}: leakcheck reads local paths and s3:// object storage only",
                       "write a path inside the repository")
    allowed = [p.rstrip("/") for p in os.environ.get(REMOTE_ENV, "").split() if p.strip()]
    text = str(url)
    if not any(text == p or text.startswith(p + "/") for p in allowed):
        raise ctx.fail(at, f"{excerpt(raw)} is in object storage, which this job has not enabled",
                       f"the workflow's owner enables it with {REMOTE_ENV}=s3://BUCKET/PREFIX in the job's "
                       "environment; a policy cannot")
    return url


def type_name(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", type(None): "nothing"}.get(
        type(value), type(value).__name__
    )
