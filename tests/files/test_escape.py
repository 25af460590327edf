"""One escaping rule per output medium: a property test each, over hostile strings.

Each test reads what the rule wrote back the way that medium's reader does
(a Markdown engine, an HTML parser, the runner's parsing of workflow
commands and of ``$GITHUB_OUTPUT``, ``csv``, a YAML loader, bash) and
checks that the string arrived as text and as nothing else.
"""

from __future__ import annotations

import csv
import io
import re
import subprocess
from html.parser import HTMLParser

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pytest_leakcheck.files import escape
from pytest_leakcheck.files.names import display, json_text, to_bytes
from pytest_leakcheck.validate import POLICY_BOUNDS, _BoundedLoader

# What a pull request can put in a name or a cell: controls (ESC, CR, LF, NUL,
# C1), bidi marks, separators, markdown, HTML and YAML syntax, the start of a
# formula, workflow commands, and bytes that are not UTF-8 (lone surrogates).
_PIECES = [
    "\n", "\r", "\t", "\x00", "\x1b[31m", "\x7f", "\x85", "\x9b", "\u2028", "\u202e", "\u200f", "\ufeff",
    "\udcff", "\udc80", "::error::", "::", "##[", "%", "%0A", ",", ":", "=", "+", "-", "@",
    "![x](https://evil.example/p.png)", "[a](javascript:alert(1))", "<img src=x onerror=alert(1)>",
    "<script>", "&amp;", "`", "``", "*", "_", "~~", "|", "# ", "> ", "- ", "1. ", "\\", "www.evil.example",
    "https://evil.example", "a@b.example", "'", '"', "{", "}", "[", "]", "&a", "*a", "!!python/object",
    "key: value", "- item", "? ", "$(id)", "${x}", ";", " ", "é", "😀", "\x1f",
]
hostile = st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=4)), max_size=12).map("".join)
_SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_HIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


@_SETTINGS
@given(hostile)
@example("::error::x\n::warning::y\x1b[2J")
def test_terminal_line_is_one_visible_line_and_no_command(text: str) -> None:
    line = escape.terminal(text)
    assert _HIDDEN.search(line) is None
    assert not line.lstrip().startswith("::")
    assert "##[" not in line


@settings(max_examples=60, deadline=None)
@given(hostile.filter(lambda s: "\x00" not in s))
@example("a\nb\x1b[31m\udcff##[x]'")
def test_shell_word_is_one_word_giving_back_the_exact_bytes(text: str) -> None:
    word = escape.shell_word(text)
    assert escape.terminal(word) == word  # prints as it is: one line, no command
    out = subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True, check=True).stdout
    assert out == to_bytes(text)


# --------------------------------------------------------------------------
# GitHub's runner: workflow commands and $GITHUB_OUTPUT, parsed as it parses them


def _parse_command(line: str) -> tuple[str, dict[str, str], str]:
    """actions/runner ActionCommand.TryParseV2, for one line."""
    assert line.startswith("::")
    end = line.index("::", 2)
    head, message = line[2:end], line[end + 2:]
    name, _, props = head.partition(" ")
    values = {}
    for prop in filter(None, props.split(",")):
        key, _, value = prop.partition("=")
        values[key] = value.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace(
            "%2C", ",").replace("%25", "%")
    return name, values, message.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


@_SETTINGS
@given(hostile, hostile)
def test_workflow_command_carries_exactly_the_shown_text(path: str, message: str) -> None:
    line = f"::error file={escape.command_property(path)},title=leakcheck::{escape.command_data(message)}"
    assert "\n" not in line and "\r" not in line
    name, props, text = _parse_command(line)
    assert name == "error"
    assert props == {"file": display(path), "title": "leakcheck"}
    assert text == display(message)


def _parse_output_file(text: str) -> dict[str, str]:
    """actions/runner's file command parsing (SetOutputFileCommand): NAME=VALUE or NAME<<DELIMITER."""
    lines = re.split("\r\n|\r|\n", text)
    out, i = {}, 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line:
            continue
        eq, heredoc = line.find("="), line.find("<<")
        if eq >= 0 and (heredoc < 0 or eq < heredoc):
            out[line[:eq]] = line[eq + 1:]
        else:
            name, delim = line[:heredoc], line[heredoc + 2:]
            body = []
            while lines[i] != delim:
                body.append(lines[i])
                i += 1
            i += 1
            out[name] = "\n".join(body)
    return out


@_SETTINGS
@given(hostile)
@example("x\nbase=0000000")
def test_github_output_value_sets_one_output_or_is_refused(value: str) -> None:
    try:
        safe = escape.output_value(value)
    except escape.UnsafeOutput:
        assert display(value) != value
        return
    assert _parse_output_file(f"cache-dir={safe}\nkey-prefix=k\n") == {"cache-dir": value, "key-prefix": "k"}


# --------------------------------------------------------------------------
# Markdown and HTML, read by real parsers


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append(tag)
        self.attrs += attrs

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _html(text: str) -> _Tags:
    parser = _Tags()
    # CommonMark decodes numeric character references (spec 6.2; GitHub's cmark-gfm does):
    # mistune 3 leaves `&#32;` as text, so the leading-space entity is decoded here as GitHub would.
    parser.feed(text.replace("&amp;#32;", " "))
    parser.close()
    return parser


@_SETTINGS
@given(hostile)
@example("![x](https://evil.example/p.png) [a](https://evil.example) <b>x</b> www.evil.example")
@example("  leading spaces")
def test_markdown_text_renders_as_exactly_its_text(text: str) -> None:
    mistune = pytest.importorskip("mistune")
    md = mistune.create_markdown(plugins=["url", "table", "strikethrough"])
    page = _html(md(f"finding {escape.markdown(text)} end"))
    assert set(page.tags) <= {"p"}, page.tags
    assert "".join(page.text).strip() == f"finding {display(text)} end".strip()
    for line in (escape.markdown(text), f"> {escape.markdown(text)}"):  # at the start of a line
        start = _html(md(line))
        assert set(start.tags) <= {"p", "blockquote"}, start.tags
        assert "".join(start.text).strip() == display(text).strip()
    cell = _html(md(f"| a | b |\n|---|---|\n| x | {escape.markdown(text)} |\n"))
    assert set(cell.tags) <= {"table", "thead", "tbody", "tr", "th", "td"}, cell.tags
    assert cell.tags.count("td") == 2


@_SETTINGS
@given(hostile)
def test_markdown_code_span_renders_as_exactly_its_text(text: str) -> None:
    mistune = pytest.importorskip("mistune")
    page = _html(mistune.create_markdown(plugins=["url", "strikethrough"])(f"split {escape.markdown_code(text)}"))
    assert page.tags == ["p", "code"]
    assert "".join(page.text[1:]).strip() == display(text).strip()


@_SETTINGS
@given(hostile)
def test_html_text_is_text_and_attribute_only(text: str) -> None:
    page = _html(f'<p title="{escape.html_text(text)}">{escape.html_text(text)}</p>')
    assert page.tags == ["p"]
    assert page.attrs == [("title", display(text))]
    assert "".join(page.text) == display(text)


def test_sarif_text_is_display() -> None:
    assert escape.sarif_text("a\nb\x1b") == "a\\nb\\x1b"


# --------------------------------------------------------------------------
# CSV and YAML


@_SETTINGS
@given(st.lists(hostile, min_size=1, max_size=4))
@example(["=HYPERLINK(\"https://evil.example\")", "+1", "-2", "@SUM(A1)", "\tx", "\rx"])
def test_csv_cells_read_back_and_never_start_a_formula(cells: list[str]) -> None:
    buf = io.StringIO()
    escape.csv_writer(buf)(cells)
    (row,) = list(csv.reader(io.StringIO(buf.getvalue())))
    assert len(row) == len(cells)
    for got, want in zip(row, cells):
        assert not got.startswith(escape.FORMULA_START)
        got.encode("utf-8")  # valid Unicode whatever the name's bytes (raises if not)
        assert (got[1:] if got.startswith("'") and json_text(want)[:1] in escape.FORMULA_START else got) \
            == json_text(want)


@_SETTINGS
@given(hostile)
@example("train\nexecutor: tcp://evil.example:8786")
@example("x, executor: tcp://e:1]")
def test_yaml_scalar_loads_back_as_exactly_the_string(text: str) -> None:
    doc = f"splits:\n  train: [{escape.yaml_scalar(text)}]  # {escape.yaml_comment(text)}\nkey: {escape.yaml_scalar(text)}\n"
    assert yaml.safe_load(doc) == {"splits": {"train": [text]}, "key": text}
    loader = _BoundedLoader(doc, POLICY_BOUNDS)  # the policy's own loader reads it the same
    assert loader.construct_document(loader.get_single_node()) == {"splits": {"train": [text]}, "key": text}
