"""names.display / log_line: the one escape every human-facing output uses, and the path codec."""

from __future__ import annotations

import json
import os
import unicodedata

import pytest

from pytest_leakcheck.errors import PolicyError
from pytest_leakcheck.files.names import defuse_json, display, from_bytes, hex_bytes, json_text, log_line, to_bytes

BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def unsafe(text: str, allowed: str = "") -> list[str]:
    """Characters a reader cannot see or that break a line: controls, separators, bidi marks, surrogates."""
    return [c for c in text if c not in allowed
            and (unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp") or c in BIDI)]


@pytest.mark.parametrize(("raw", "shown"), [
    ("a\nb", "a\\nb"),
    ("a\rb\tc", "a\\rb\\tc"),
    ("\x1b[31mred", "\\x1b[31mred"),
    ("del\x7f", "del\\x7f"),
    ("nel\x85", "nel\\u0085"),
    ("abc\u202egpj.exe", "abc\\u202egpj.exe"),
    ("iso\u2066late\u2069", "iso\\u2066late\\u2069"),
    ("mark\u200e\u200f\u061c", "mark\\u200e\\u200f\\u061c"),
    ("line\u2028para\u2029", "line\\u2028para\\u2029"),
    (os.fsdecode(b"bad\xff\xfe.jpg"), "bad\\xff\\xfe.jpg"),
])
def test_display_makes_each_unsafe_character_a_visible_escape(raw: str, shown: str) -> None:
    assert display(raw) == shown
    assert unsafe(display(raw)) == []


def test_display_keeps_ordinary_text_and_is_idempotent() -> None:
    """Accents, CJK, emoji, backslashes and punctuation are shown as they are."""
    for text in ("train/img_01.jpg", "données/été.png", "写真/猫.jpg", "a b,c:d%e\\f.jpg", "🐱‍👤.jpg"):
        assert display(text) == text
    every = "".join(map(chr, range(0x00, 0xA0))) + BIDI + "\u2028\u2029" + os.fsdecode(b"\xff")
    assert unsafe(display(every)) == []
    assert display(display(every)) == display(every)


@pytest.mark.parametrize("line", [
    "::error file=x::boom",
    "    ::error file=x::boom",
    "\u3000::warning::x",
    "text ##[error]boom",
    "::stop-commands::token",
])
def test_log_line_is_never_a_workflow_command(line: str) -> None:
    """GitHub's runner reads `::` after leading whitespace, and `##[` anywhere, as a command."""
    safe = log_line(line)
    assert not safe.lstrip().startswith("::")
    assert "##[" not in safe
    assert log_line(safe) == safe


def test_error_messages_are_one_safe_line() -> None:
    """A policy's path or text quoted in an error cannot break the line or start a command."""
    exc = PolicyError("manifest 'm\n::error::x.csv' not found", path="/repo/\u202eevil\n##[error].yaml", line=3)
    text = str(exc)
    assert unsafe(text) == []
    assert "##[" not in text and "\n" not in text
    assert "m\\n::error::x.csv" in text


def test_path_codec_round_trips_any_linux_name() -> None:
    for raw in (b"plain.jpg", b"bad\xff\xfe.jpg", b"a\nb\r.jpg", "é\u202e".encode(), b"\xed\xa0\x80.jpg"):
        name = os.fsdecode(raw)
        assert to_bytes(name) == raw == os.fsencode(name)
        assert from_bytes(to_bytes(name)) == name


def test_json_text_is_valid_unicode_and_hex_keeps_the_bytes() -> None:
    name = os.fsdecode(b"bad\xff.jpg")
    assert json_text(name) == "bad\\xff.jpg"
    assert bytes.fromhex(hex_bytes(name) or "") == b"bad\xff.jpg"
    assert hex_bytes("é.jpg") is None and json_text("é\n.jpg") == "é\n.jpg"


def test_defuse_json_keeps_the_value() -> None:
    value = {"path": "x##[error]y", "list": ["##[##["]}
    text = defuse_json(json.dumps(value))
    assert "##[" not in text
    assert json.loads(text) == value
