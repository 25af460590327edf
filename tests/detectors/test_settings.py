"""A detector's settings table: defaults from the settings class, each key checked in the table's order,
every error naming the file, line, key and fix, as the hand-written parses did."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_leakcheck.detectors.settings import Choice, Number, parse_settings
from pytest_leakcheck.errors import PolicyError
from pytest_leakcheck.validate import Ctx


@dataclass(frozen=True)
class Sparkle:
    severity: str = "warning"
    glint: float = 0.5
    spots: int = 3


FIELDS = {"severity": Choice(("error", "warning", "off")), "glint": Number(float, 0, 1), "spots": Number(int, 1, 9)}
AT = ("detectors", "sparkle")
CTX = Ctx(Path("leakcheck.yaml"), {AT: 7, (*AT, "spots"): 9})


def test_missing_keys_take_the_class_defaults_and_given_ones_are_read() -> None:
    assert parse_settings(CTX, None, AT, Sparkle, FIELDS) == Sparkle()
    assert parse_settings(CTX, {"spots": 5.0, "severity": False}, AT, Sparkle, FIELDS) == Sparkle("off", 0.5, 5)
    assert type(parse_settings(CTX, {"spots": 5.0}, AT, Sparkle, FIELDS).spots) is int


@pytest.mark.parametrize("raw, key, problem, fix", [
    ({"spots": 10}, "spots", "10 is out of range", "use a value from 1 to 9"),
    ({"spots": 2.5}, "spots", "expected an integer, got float", None),
    ({"severity": "loud", "spots": 99}, "severity", "invalid value 'loud'", "use one of: error, warning, off"),
    ({"glnt": 0.2}, "glnt", "unknown key", "did you mean `glint`?"),
])
def test_errors_name_the_key_line_and_fix(raw: dict, key: str, problem: str, fix: str | None) -> None:
    with pytest.raises(PolicyError) as err:
        parse_settings(CTX, raw, AT, Sparkle, FIELDS)
    assert err.value.key == f"detectors.sparkle.{key}" and problem in str(err.value)
    assert err.value.line == (9 if key == "spots" else 7) and err.value.fix == fix
