"""Regular expressions a policy writes (``groups: - regex: ...``), run by RE2.

A policy comes from the pull request, and Python's ``re`` backtracks: a group
regex with nested quantifiers, ``(?P<group>(a+)+)b``, against one 48-character
file name ran for hours.  RE2 matches in time linear in the name whatever the
pattern, so no input can stall the check, and the answer is always the
regex's own (a time limit would have to guess a verdict when it fires, and
cannot interrupt ``re`` off the main thread, as under pytest).  The price is
RE2's syntax: no backreferences and no lookaround, which are refused when the
policy loads, with the key named; ``\\d`` and ``\\w`` are ASCII.

``google-re2`` is a dependency (wheels for every supported platform); it is
imported here, on first use, only when a policy has a regex rule (``tests/cli/test_lean.py``
keeps it out of a policy without one).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from ..files.names import is_unicode

#: Memory RE2 may use for one pattern's automata; a larger one is refused, never slow.
MAX_MEM = 64 << 20
_SURROGATE = re.compile("[\ud800-\udfff]")


@lru_cache(maxsize=64)
def compile(pattern: str) -> Any:
    """The RE2 program for ``pattern``; ``ValueError`` saying why RE2 refuses it."""
    import re2  # lazily: only a policy with a regex rule pays for it

    options = re2.Options()
    options.log_errors = False  # RE2 would print the pattern, the pull request's text, on stderr raw
    options.max_mem = MAX_MEM
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        text = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
        raise ValueError(text) from None


def group_names(program: Any) -> dict[str, int]:
    return dict(program.groupindex)


def search_group(program: Any, path: str, name: str = "group") -> str | None:
    """The text of group ``name`` in the first match in ``path``; None when it does not match or is empty."""
    # RE2 reads UTF-8: bytes of a name that is not UTF-8 (lone surrogates
    # here) are searched as U+FFFD, one character for one, so the span still
    # cuts the real name.
    text = path if is_unicode(path) else _SURROGATE.sub("\ufffd", path)
    m = program.search(text)
    if m is None:
        return None
    start, end = m.span(program.groupindex[name])
    return (path[start:end] or None) if start >= 0 else None
