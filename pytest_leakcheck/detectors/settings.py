"""A detector's settings section, declared: each key's kind and bounds once, one parse for all.

``FIELDS = {"severity": Choice(SEVERITIES), "candidates": Number(int, 1, 64)}`` and
``parse_settings(ctx, raw, at, Settings, FIELDS)`` read a section the way
``Ctx`` reads the rest of the policy: unknown keys refused with a suggestion,
every error naming the file, line and key, and each key missing from ``raw``
taking the settings class's own default.  Keys are checked in the table's order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ..validate import Ctx
from .base import section

S = TypeVar("S")


@dataclass(frozen=True)
class Number:
    """An ``int`` or ``float`` from ``low`` to ``high``, both included."""

    kind: type
    low: float
    high: float


@dataclass(frozen=True)
class Choice:
    """One of ``options``."""

    options: tuple[str, ...]


def parse_settings(ctx: Ctx, raw: Any, at: tuple[str, ...], settings: type[S],
                   fields: Mapping[str, Number | Choice]) -> S:
    """``settings(**values)``: every key of ``fields`` read from ``raw`` (or the class default) and checked."""
    raw = section(ctx, raw, at, tuple(fields))
    default = settings()
    values: dict[str, Any] = {}
    for key, field in fields.items():
        value = raw.get(key, getattr(default, key))
        if isinstance(field, Choice):
            values[key] = ctx.choice(value, (*at, key), field.options)
        else:
            values[key] = ctx.number(value, (*at, key), field.kind, field.low, field.high)
    return settings(**values)
