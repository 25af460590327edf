"""One escaping rule per output medium, for everything that came from data.

The policy, the dataset, its file names and every cell of its manifests
belong to whoever opens the pull request (docs/security.md).  Whatever of
theirs leakcheck writes out goes through the one function here for that
medium, and every writer of that medium calls it:

===================  ===========================  ===================================
medium               function                     what a hostile string cannot do
===================  ===========================  ===================================
terminal, CI log     :func:`terminal`             break a line, move the cursor, run
                                                  a workflow command
shell command shown  :func:`shell_word`           be more than one word when pasted
workflow command     :func:`command_data`,        end the message or a property,
                     :func:`command_property`     start a second command
``$GITHUB_OUTPUT``   :func:`output_value`         set a second output
Markdown             :func:`markdown`,            open a link, an image, HTML, a
                     :func:`markdown_code`        table cell, emphasis or a heading
HTML                 :func:`html_text`            open a tag or an attribute
SARIF                :func:`sarif_text`           hide text (JSON keeps the rest)
CSV for people       :func:`csv_cell`             run as a spreadsheet formula
YAML written         :func:`yaml_scalar`,         add a key, a list item or a tag
by ``init``          :func:`yaml_comment`
===================  ===========================  ===================================

Each rule starts from :func:`names.display`, which makes every control
character, bidi mark and undecodable byte visible; what each adds is that
medium's own syntax.  ``tests/files/test_escape.py`` holds one property
test per medium over hostile strings.
"""

from __future__ import annotations

import html
import re
import shlex
from collections.abc import Callable, Sequence
from typing import TextIO

from .names import csv_writerow, display, json_text, log_line

# --------------------------------------------------------------------------
# Terminal and CI logs


def terminal(text: str) -> str:
    """One line for a terminal or a CI log: :func:`names.log_line` (no control
    character, no workflow command)."""
    return log_line(text)


# Bash reads $'...' with these escapes; everything else printable stays as it is.
_ANSI_C = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def shell_word(text: str) -> str:
    """``text`` as one shell word that prints as one safe log line.

    An ordinary name is ``shlex.quote``'d.  One holding a character
    :func:`display` escapes (a newline, ESC, a byte that is not UTF-8) or the
    ``##[`` of a workflow command is written in bash's ``$'...'`` form, whose
    escapes give back the exact bytes when the line is pasted.
    """
    if display(text) == text and "##[" not in text:
        word = shlex.quote(text)
        # shlex leaves `::x` bare, and a log line may start with the word: quoted, it is no command.
        return f"'{text}'" if word.startswith(":") else word
    out = []
    for c in text:
        code = ord(c)
        if c in _ANSI_C:
            out.append(_ANSI_C[c])
        elif 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8, as os.fsdecode keeps it
            out.append(f"\\x{code - 0xDC00:02x}")
        elif c == "[" or display(c) != c:
            out.append("".join(f"\\x{b:02x}" for b in c.encode("utf-8", "surrogatepass")))
        else:
            out.append(c)
    return "$'" + "".join(out) + "'"


# --------------------------------------------------------------------------
# GitHub workflow commands and $GITHUB_OUTPUT


def command_data(text: str) -> str:
    """A workflow command's message (after the second ``::``).

    GitHub's runner unescapes only ``%25``, ``%0D`` and ``%0A`` there
    (actions/runner ActionCommand.cs), so no other control character can
    travel: :func:`display` shows each one first.
    """
    return display(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def command_property(text: str) -> str:
    """A property value (``file=``, ``title=``): also ``:`` and ``,``, which end a property.

    With ``:`` escaped, the first ``::`` of the line is the one we wrote, so
    a value can neither end the properties early nor start a command.
    """
    return command_data(text).replace(":", "%3A").replace(",", "%2C")


class UnsafeOutput(ValueError):
    """A value that cannot be one ``name=value`` line of ``$GITHUB_OUTPUT`` as it is."""


def output_value(value: str) -> str:
    """``value`` unchanged for ``echo "name=$value" >> "$GITHUB_OUTPUT"``; refused when it could set more.

    The file is read line by line: a newline in a value starts a second
    output (say ``base=``), and the runner also reads ``name<<DELIMITER``
    blocks.  A value here is a path the owner's workflow uses as it is (the
    store's folder), so it cannot be escaped either: any character
    :func:`display` would change refuses it (:class:`UnsafeOutput`).
    """
    if display(value) != value:
        raise UnsafeOutput(f"holds a line break or a control character: {display(value)}")
    return value


# --------------------------------------------------------------------------
# Markdown (GitHub's job summary)

# CommonMark lets a backslash escape any ASCII punctuation, and then shows the
# character as it is.  Escaped always: what opens a link or an image (`[`, `]`),
# HTML or an autolink (`<`, `>`, `&`), emphasis and strikethrough (`*`, `_`,
# `~`), code (`` ` ``), a table cell (`|`) and the backslash itself.  GFM's
# extended autolinks (`https://…`, `www.…`, `a@b.c`) match only inside one text
# run, which an escaped `:`, `.` or `@` splits.  What only opens a block at
# the start of a line (`#`, `-`, `+`, `=`, `>`, `1.`) is escaped there.
_MD_ALWAYS = re.compile(r"[\\`*_\[\]<>&|~@]|:(?=//)|(?<=www)\.", re.IGNORECASE)
_MD_LINE_START = re.compile(r"^(?: +|[#+\-=>]|\d+(?=[.)]))")


def _line_start(m: re.Match[str]) -> str:
    found = m.group()
    if found[0] == " ":  # four spaces would open a code block: spaces as entities
        return "&#32;" * len(found)
    # `1.` opens a list: the escape goes before the dot, `\1.` would not do.
    return found + "\\" if found[0].isdigit() else "\\" + found


def markdown(text: str) -> str:
    """``text`` shown as it is, inline, in GitHub-flavoured Markdown (table cells and line starts included)."""
    return _MD_LINE_START.sub(_line_start, _MD_ALWAYS.sub(lambda m: "\\" + m.group(), display(text)))


def markdown_code(text: str) -> str:
    """``text`` as an inline code span, whatever backticks it holds (outside tables)."""
    shown = display(text)
    runs = [len(r) for r in re.findall("`+", shown)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if shown.startswith(("`", " ")) or shown.endswith(("`", " ")) or not shown else ""
    return f"{fence}{pad}{shown}{pad}{fence}"


# --------------------------------------------------------------------------
# HTML and SARIF


def html_text(value: object) -> str:
    """Text or an attribute value in HTML: :func:`display`, then HTML's own escapes.

    ``##[`` becomes ``##&#91;`` (the same text on the page), so the file,
    printed raw to a CI log, carries no legacy workflow command either.
    """
    return html.escape(display(str(value)), quote=True).replace("##[", "##&#91;")


def sarif_text(text: str) -> str:
    """A SARIF message: :func:`display`; JSON escapes the rest (and ``names.defuse_json`` the ``##[``)."""
    return display(text)


# --------------------------------------------------------------------------
# CSV read by people and spreadsheets

#: A cell starting with one of these runs as a formula in Excel, LibreOffice
#: and Google Sheets (OWASP, "CSV injection").
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(text: str) -> str:
    """A cell of a CSV meant for people (``leakcheck export``).

    Valid Unicode (a byte that is not UTF-8 as ``\\xNN``, as in the JSON
    report), and a cell that a spreadsheet would run as a formula gets a
    leading ``'``, which spreadsheets show as text.  The ``csv`` module's
    quoting takes care of commas, quotes and line breaks.
    """
    text = json_text(text)
    return "'" + text if text.startswith(FORMULA_START) else text


def csv_writer(out: TextIO) -> Callable[[Sequence[str]], object]:
    """``writerow`` for a CSV meant for people: every cell through :func:`csv_cell`,
    and a row holding a lone CR fully quoted (``names.csv_writerow``)."""
    writerow = csv_writerow(out)
    return lambda row: writerow([csv_cell(str(cell)) for cell in row])


# --------------------------------------------------------------------------
# YAML written by `leakcheck init`

_YAML_SHORT = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\x00": "\\0"}
# YAML 1.1/1.2 printable set, less what we escape anyway; anything else is escaped.
_YAML_PLAIN = re.compile("[\x20-\x7e\u00a0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def yaml_scalar(text: str) -> str:
    """``text`` as one double-quoted YAML scalar that loads back as exactly ``text``.

    Whatever it holds (``: ``, ``#``, ``]``, ``&``, a newline, a BOM, a
    surrogate standing for a byte that is not UTF-8), it stays one string
    and can add no key, item, alias or tag to the document around it.
    """
    out = []
    for c in text:
        if c in _YAML_SHORT:
            out.append(_YAML_SHORT[c])
        elif c not in "\ufeff\u2028\u2029" and _YAML_PLAIN.fullmatch(c):  # YAML breaks lines at U+2028/9
            out.append(c)
        elif ord(c) <= 0xFF:
            out.append(f"\\x{ord(c):02x}")
        elif ord(c) <= 0xFFFF:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(f"\\U{ord(c):08x}")
    return '"' + "".join(out) + '"'


def yaml_comment(text: str) -> str:
    """Text for after a ``#`` on one line of YAML: :func:`display` keeps it on that line."""
    return display(text)
