"""File names, whatever their bytes: one codec to keep them, one escape to show them.

A Linux file name is any bytes but NUL and ``/``.  Python lists them as
``str`` through ``os.fsdecode``: bytes that are not UTF-8 become lone
surrogates (U+DC80..U+DCFF), which SQLite, ``str.encode()`` and strict JSON
parsers refuse.  So:

- in memory a path stays that ``str`` (``open()`` and ``Path`` take it back);
- where it is stored (the SQLite store, snapshots, finding ids) it becomes
  its original bytes, :func:`to_bytes`, and comes back with :func:`from_bytes`;
- in JSON it is valid Unicode plus, only when the name is not UTF-8, a
  ``*_bytes`` field with the exact bytes in hex (:func:`json_text`, :func:`hex_bytes`);
- wherever a person reads it (text report, error messages, annotations,
  Markdown, HTML, SARIF messages) it goes through :func:`display`, which
  turns control characters, bidi overrides and undecodable bytes into
  visible escapes.  Line-based outputs that may land in a CI log also go
  through :func:`log_line`, so no name can become a GitHub workflow command.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable
from typing import TextIO

# What display() escapes: every C0 and C1 control and DEL (category Cc; a
# newline in a name must not start a new report line), the line and
# paragraph separators, the bidi embeddings, overrides, isolates and marks
# (they reorder what a reader sees: "Trojan Source"), and lone surrogates,
# which stand for bytes that are not UTF-8.
_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    c = match.group()
    code = ord(c)
    if c in _SHORT:
        return _SHORT[c]
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"  # the undecodable byte itself, as os.fsdecode kept it
    if code < 0x80:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def display(text: str) -> str:
    """``text`` with every invisible or line-breaking character as a visible escape.

    ``\\n``, ``\\r``, ``\\t``; ``\\xNN`` for other ASCII controls and for bytes
    that are not UTF-8; ``\\uNNNN`` for C1 controls, separators and bidi
    marks.  Idempotent, and the identity on ordinary text, so applying it at
    several layers is harmless.  Backslashes are left alone: this is for
    reading, not for parsing (JSON keeps the exact name).
    """
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(_escape, text)


#: Characters of file or policy content an error message may quote.
EXCERPT_CHARS = 60


def excerpt(value: object, limit: int = EXCERPT_CHARS) -> str:
    """``value`` as a short excerpt for an error message: at most ``limit``
    characters, escaped by :func:`display`, ``…`` when cut; a string is quoted
    as ``repr`` quotes it, anything else is its ``repr``.

    Messages that quote a file's content (a manifest header, a policy value)
    go through this, so an error can never print a whole file, whatever the
    policy points it at.
    """
    try:
        text = value if isinstance(value, str) else repr(value)
    except ValueError:  # an int past Python's 4,300-digit limit for str()
        text = f"<{type(value).__name__} too long to show>"
    cut = display(text[:limit]) + ("…" if len(text) > limit else "")
    return f"'{cut}'" if isinstance(value, str) else cut


# GitHub's runner takes a line as a workflow command when it starts with
# `::` after leading whitespace, or when it holds `##[` anywhere (the legacy
# form; actions/runner ActionCommand.TryParseV2 and TryParse).
_COMMAND_START = re.compile(r"^(\s*):(?=:)")


def log_line(text: str) -> str:
    """One line for a log: :func:`display`, and never a GitHub workflow command.

    A ``::`` that would open the line becomes ``\\x3a:`` and ``##[`` becomes
    ``##\\x5b``: the name stays readable and the runner ignores the line.
    """
    text = display(text)
    return _COMMAND_START.sub(r"\1\\x3a", text).replace("##[", "##\\x5b")


def log_lines(lines: list[str]) -> str:
    """Lines joined for output, each one through :func:`log_line`."""
    return "".join(log_line(line) + "\n" for line in lines)


def log_text(text: str) -> str:
    """Each line of ``text`` through :func:`log_line`; its newlines are kept as they are.

    For text built from parts already passed through :func:`display` (so a
    newline in it is the renderer's own): the last guard before output.
    """
    return "\n".join(log_line(line) for line in text.split("\n"))


def defuse_json(text: str) -> str:
    """JSON text that a CI log cannot read as a workflow command; the same JSON value.

    ``##[`` can only occur inside a JSON string, where ``\\u005b`` is the
    same ``[``; indented JSON never starts a line with ``::``.
    """
    return text.replace("##[", "##\\u005b")


def to_bytes(path: str) -> bytes:
    """The name's bytes (what ``os.fsencode`` gives on Linux), for storing and hashing."""
    try:
        return path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        # A surrogate os.fsdecode never makes (read from a hand-edited JSON
        # report): no file has this name, but it must not crash a renderer.
        return path.encode("utf-8", "surrogatepass")


def from_bytes(data: bytes) -> str:
    """The in-memory name of stored bytes; ``from_bytes(to_bytes(p)) == p``."""
    return data.decode("utf-8", "surrogateescape")


def is_unicode(text: str) -> bool:
    """Whether ``text`` is valid Unicode (no lone surrogates): then it stores as TEXT and JSON."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_SURROGATE = re.compile("[\ud800-\udfff]")


def json_text(text: str) -> str:
    """``text`` as valid Unicode for JSON: undecodable bytes shown as ``\\xNN``, the rest exact."""
    return _SURROGATE.sub(_escape, text)


def hex_bytes(path: str) -> str | None:
    """The name's bytes in hex when :func:`json_text` cannot keep it exactly, else None."""
    return None if is_unicode(path) else to_bytes(path).hex()


def csv_writerow(out: TextIO) -> Callable[[list[str]], object]:
    """``writerow`` for a CSV whose rows name files: any name reads back the same.

    The minimal writer quotes a newline but leaves a lone ``\\r`` bare (it is
    not in the line terminator), and a reader ends the row there; such a row
    is written fully quoted.  Other rows are written as before.
    """
    minimal = csv.writer(out, lineterminator="\n")
    quoted = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_ALL)
    return lambda row: (quoted if any("\r" in cell for cell in row) else minimal).writerow(row)


def same_but_punctuation(missing: list[str], present: list[str]) -> dict[str, str]:
    """Each of ``missing`` (paths a list names) -> the one of ``present`` (files on disk) whose file name
    is its own but for punctuation, compared place by place (``1%0.jpg`` is ``1_0.jpg``, never ``10.jpg``);
    names that no file, or several, have that way are left out.

    A user's copy of COVID-CT (``covidct2`` of benchmarks/field.py) renamed ``1%0.jpg`` to ``1_0.jpg``
    while its lists still name ``1%0.jpg``: 167 missing files and 516 in no split, each side reported
    without the other."""
    def key(rel: str) -> str:
        return "".join(c if c.isalnum() else "_" for c in rel.replace("\\", "/").rsplit("/", 1)[-1].lower())

    by_key: dict[str, list[str]] = {}
    for rel in present:
        by_key.setdefault(key(rel), []).append(rel)
    return {rel: hits[0] for rel in missing if len(hits := by_key.get(key(rel), [])) == 1}
