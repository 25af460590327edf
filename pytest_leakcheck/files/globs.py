"""Globs over POSIX relative paths: checked when the policy loads, matched in linear time.

The rules are ``.gitignore``'s: ``**`` as a whole name spans folders (``**/``
zero or more, a trailing ``/**`` one or more), ``*`` and ``?`` stay inside
one name (so does a ``**`` glued to other characters), ``[abc]`` / ``[!abc]``
is a character class, a pattern naming a folder (``train``, ``train/``) means
everything below it, and a pattern without a slash matches at any depth.

A policy and the file names both come from a pull request, so the matcher
must not be a backtracking regex: ``*a*a*a*a*b`` against a long name of
``a``'s, or ``**/**/**/x`` against a deep path, takes exponential or
high-polynomial time in ``re``.  Here a pattern is cut at its stars into
fixed-length pieces, on two levels: names between ``**`` and characters
between ``*``.  Each piece is found at its leftmost place, which is correct
for stars and never needs to go back, so a match costs at most
O(len(path) x len(pattern)).  Fixed-length pieces compile to regexes without
a single quantifier.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from functools import lru_cache

#: Longer patterns are refused: no real glob needs them, and the match cost grows with the length.
MAX_PATTERN = 1024


class GlobError(ValueError):
    """A malformed glob; ``str(error)`` says why, for the policy error that names its key."""


@dataclass(frozen=True)
class _Name:
    """One name's pattern: fixed-length pieces (regex, width) between ``*``; ``starred``: any ``*``."""

    pieces: tuple[tuple[re.Pattern[str], int], ...]
    starred: bool

    def match(self, name: str) -> bool:
        if not self.starred:
            return self.pieces[0][0].fullmatch(name) is not None
        (first, _), *middle, (last, width) = self.pieces
        head = first.match(name)
        end = len(name) - width
        if head is None or end < head.end():
            return False
        pos = head.end()
        for piece, _ in middle:
            found = piece.search(name, pos, end)
            if found is None:
                return False
            pos = found.end()
        return last.fullmatch(name, end) is not None


#: A name token matching any one name (a trailing `/**` or a folder pattern's tail).
_ANY = _Name((), True)
#: Zero or more names.
_DEEP = None


@dataclass(frozen=True)
class Glob:
    """A compiled glob; ``chunks`` are runs of one-name matchers between ``**``.

    ``regex`` is the same glob as one regex when that regex cannot backtrack
    more than linearly: at most one ``**`` besides the folder tail, and at
    most one ``*`` per name, so every ``*`` has one place to end (the next
    ``/``) and only the one ``(?:.*/)?`` tries several.  ``re`` runs it in C;
    any other glob takes the leftmost-pieces walk in :meth:`match_names`.
    """

    pattern: str
    chunks: tuple[tuple[_Name | str, ...], ...]
    regex: re.Pattern[str] | None = None

    def match(self, path: str) -> bool:
        if self.regex is not None:
            return self.regex.match(path) is not None
        return self.match_names(path.split("/"))

    def match_names(self, names: list[str]) -> bool:
        """The walk every glob can take: leftmost runs of names between ``**``."""
        chunks = self.chunks
        if len(chunks) == 1:
            return len(names) == len(chunks[0]) and _run_at(chunks[0], names, 0)
        first, *middle, last = chunks
        if len(names) < len(first) + len(last) or not _run_at(first, names, 0):
            return False
        pos, end = len(first), len(names) - len(last)
        for run in middle:
            while pos + len(run) <= end and not _run_at(run, names, pos):
                pos += 1
            if pos + len(run) > end:
                return False
            pos += len(run)
        return _run_at(last, names, end)


def _run_at(run: tuple[_Name | str, ...], names: list[str], at: int) -> bool:
    for k, token in enumerate(run):
        name = names[at + k]
        if token is _ANY:
            continue
        if isinstance(token, str):
            if token != name:
                return False
        elif not token.match(name):
            return False
    return True


@dataclass(frozen=True)
class GlobSet:
    """Several globs; a path matches when any of them does.

    The globs that have a linear regex are one alternation (one C call per
    path: the scan asks for every file and split); the rest are walked.
    """

    globs: tuple[Glob, ...]
    fast: re.Pattern[str] | None = field(init=False, compare=False, repr=False)
    slow: tuple[Glob, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        fast = [g.regex.pattern for g in self.globs if g.regex is not None]
        alternation = re.compile("|".join(f"(?:{p})" for p in fast), re.DOTALL) if fast else None
        object.__setattr__(self, "fast", alternation)
        object.__setattr__(self, "slow", tuple(g for g in self.globs if g.regex is None))

    def match(self, path: str) -> bool:
        if self.fast is not None and self.fast.match(path) is not None:
            return True
        if not self.slow:
            return False
        names = path.split("/")
        return any(g.match_names(names) for g in self.slow)


def compile(pattern: str) -> Glob:
    """Parse ``pattern``; raise :class:`GlobError` saying what is wrong with it."""
    return _compile(pattern)


@lru_cache(maxsize=1024)
def _compile(pattern: str) -> Glob:
    if len(pattern) > MAX_PATTERN:
        raise GlobError(f"longer than {MAX_PATTERN} characters")
    pat = pattern.strip()
    while pat.startswith("./"):
        pat = pat[2:]
    pat = pat.lstrip("/")
    dir_only = pat.endswith("/")
    pat = pat.rstrip("/")
    if not pat:
        raise GlobError("the pattern is empty")
    parts = pat.split("/")
    tokens: list[_Name | str | None] = [_DEEP] if len(parts) == 1 else []
    for n, part in enumerate(parts):
        if part == "**":
            # `a/**` is everything inside a (one name or more); `**/b`, `a/**/b`: zero or more.
            tokens += [_ANY, _DEEP] if n == len(parts) - 1 else [_DEEP]
        else:
            tokens.append(_name(part))
    tokens += [_ANY, _DEEP] if dir_only else [_DEEP]
    chunks: list[tuple[_Name | str, ...]] = [()]
    for token in tokens:
        if token is _DEEP:
            if chunks[-1] or len(chunks) == 1:
                chunks.append(())
        else:
            chunks[-1] = (*chunks[-1], token)
    return Glob(pattern, tuple(chunks), _linear_regex(chunks))


def _linear_regex(chunks: list[tuple[_Name | str, ...]]) -> re.Pattern[str] | None:
    """The glob as a regex, when that regex backtracks at most linearly (see :class:`Glob`)."""
    if len(chunks) > 3 or any(isinstance(t, _Name) and len(t.pieces) > 2 for run in chunks for t in run):
        return None
    runs = ["/".join(_token_regex(t) for t in run) for run in chunks]
    first, *inner, _ = runs  # the last run is empty: every glob ends in the folder tail
    body = first + "".join(("/" if first else "") + "(?:.*/)?" + run for run in inner)
    # DOTALL and \Z: a file name may hold a newline, and `.` or `$` stopping at
    # one would let such a copy escape every split glob.
    if not first and not inner:
        return re.compile(".*", re.DOTALL)
    return re.compile(f"{body}(?:/.*)?\\Z", re.DOTALL)


def _token_regex(token: _Name | str) -> str:
    if isinstance(token, str):
        return re.escape(token)
    if token is _ANY:
        return "[^/]+"
    return "[^/]*".join(piece.pattern for piece, _ in token.pieces)


def _name(part: str) -> _Name | str:
    """One name of a pattern: a plain string when it has no wildcard."""
    pieces: list[list[str]] = [[]]
    plain = True
    i = 0
    while i < len(part):
        c = part[i]
        if c == "*":
            while i < len(part) and part[i] == "*":  # `**` inside a name is a `*`, as in .gitignore
                i += 1
            pieces.append([])
            plain = False
            continue
        if c == "?":
            pieces[-1].append("[^/]")
            plain = False
        elif c == "[":
            i, token = _char_class(part, i)
            pieces[-1].append(token)
            plain = False
        else:
            pieces[-1].append(re.escape(c))
        i += 1
    if plain:
        return part
    return _Name(tuple((re.compile("".join(p), re.DOTALL), len(p)) for p in pieces), len(pieces) > 1)


def _char_class(part: str, i: int) -> tuple[int, str]:
    """The class opening at ``part[i]``: the index of its ``]`` and its regex."""
    start = i + 1
    negate = start < len(part) and part[start] in "!^"
    if negate:
        start += 1
    j = part.find("]", start)
    if j == -1:
        raise GlobError(f"unbalanced `[` at character {i + 1}: close it with `]`, or write `[[]` for a literal `[`")
    body = part[start:j]
    if not body:
        raise GlobError(f"empty character class at character {i + 1}")
    # Every character literal but a range's `-`: `[[:alpha:]]`, `&&` or `\\` mean themselves.
    escaped = "".join(c if c == "-" and 0 < k < len(body) - 1 else re.escape(c) for k, c in enumerate(body))
    source = f"[{'^/' if negate else ''}{escaped}]"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            re.compile(source)
    except (re.error, FutureWarning) as exc:
        raise GlobError(f"bad character class [{body}]: {getattr(exc, 'msg', exc)}") from None
    return j, source


def literal(text: str) -> str:
    """A glob matching exactly ``text``: ``*``, ``?`` and ``[`` as one-character classes.

    For globs built from names found on disk (``leakcheck init``): a folder
    named ``tr[ai]n`` or ``*`` must not become a pattern matching other folders.
    """
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)
