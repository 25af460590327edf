"""The detector registry: every module or package of this package that sets ``DETECTOR``.

Adding a detector is adding a module here, or a folder for one with helpers of
its own (``aligned/``, ``same_scene/``: the detector in ``__init__.py``); see
``base.py`` for the protocol and ``docs/architecture.md`` for a walk-through.
Nothing else lists them.  ``base`` is the protocol and a ``_`` prefix means
private; modules that set no ``DETECTOR`` (``hashing``) are shared helpers.

The policy calls :func:`parse` for the ``detectors:`` section, the
signature stage asks :func:`families` what to compute, and the search and
findings stages loop over :func:`enabled`.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..validate import Ctx
from .base import Detector, PolicyView

if TYPE_CHECKING:
    from ..signals.families import Family


@lru_cache(maxsize=1)
def registry() -> tuple[Detector, ...]:
    """Every detector, strongest first."""
    found = []
    for info in pkgutil.iter_modules(__path__):  # modules and packages (``info.ispkg``) alike
        if info.name.startswith("_") or info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        detector = getattr(module, "DETECTOR", None)
        if isinstance(detector, Detector):
            found.append(detector)
    return tuple(sorted(found, key=lambda d: d.rank))


def names() -> tuple[str, ...]:
    """Detector names, strongest first."""
    return tuple(d.name for d in registry())


def get(name: str) -> Detector:
    for d in registry():
        if d.name == name:
            return d
    raise KeyError(name)


@dataclass(frozen=True)
class Detectors:
    """The policy's ``detectors:`` section: each detector's settings, by section name.

    ``policy.detectors.phash.max_distance`` reads like a plain attribute.
    """

    settings: tuple[tuple[str, Any], ...]

    def __getattr__(self, section: str) -> Any:
        if section.startswith("_") or section == "settings":
            raise AttributeError(section)
        for key, value in self.settings:
            if key == section:
                return value
        raise AttributeError(section)

    def of(self, detector: Detector) -> Any:
        return getattr(self, detector.section)


def default() -> Detectors:
    return Detectors(tuple((d.section, d.default) for d in registry()))


def parse(ctx: Ctx, raw: Any) -> Detectors:
    """Validate ``detectors:``; each detector checks its own section."""
    at = ("detectors",)
    raw = ctx.mapping(raw, at, tuple(d.section for d in registry()))
    return Detectors(tuple(
        (d.section, d.parse(ctx, raw[d.section], (*at, d.section)) if d.section in raw else d.default)
        for d in registry()
    ))


def enabled(policy: PolicyView) -> list[tuple[Detector, Any]]:
    """Detectors whose severity is not ``off``, with their settings, strongest first."""
    out = []
    for d in registry():
        settings = policy.detectors.of(d)
        if settings.severity != "off":
            out.append((d, settings))
    return out


def thresholds(policy: PolicyView) -> dict[str, tuple[float, bool]]:
    """Enabled detector name -> (threshold, lower_is_stronger), for pictures of the scores."""
    out = {}
    for d, settings in enabled(policy):
        value = d.threshold(settings)
        if value is not None:
            out[d.name] = (value, d.lower_is_stronger)
    return out


def template() -> str:
    """The ``detectors:`` section ``leakcheck init`` writes: every detector at its defaults, with why-comments.

    Values come from each detector's ``default``, so the template never restates
    one that has since changed.
    """
    lines = ["detectors:"]
    for d in registry():
        lines += [f"  # {line}" for line in d.init_comment.splitlines()]
        written = d.init_default if d.init_default is not None else d.default  # what init proposes
        rows = [(key, _yaml_scalar(getattr(written, key)), why) for key, why in d.init_keys]
        # Bare (`phash: error`) only where the detector reads the bare form: the protocol's own parse.
        if [key for key, _, _ in rows] == ["severity"] and type(d).parse is Detector.parse:
            lines += _commented([(f"  {d.section}: {rows[0][1]}", rows[0][2])])
        else:
            lines.append(f"  {d.section}:")
            lines += _commented([(f"    {key}: {value}", why) for key, value, why in rows])
    return "\n".join(lines) + "\n"


def _yaml_scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # `2`, as a person writes it; it reads back as 2.0
    return str(value)


def _commented(rows: list[tuple[str, str]]) -> list[str]:
    """Lines with their comments aligned in one column (28, or further for long keys)."""
    width = max([28] + [len(text) + 3 for text, why in rows if why])
    return [f"{text.ljust(width)}# {why}" if why else text for text, why in rows]


def init_notices() -> tuple[str, ...]:
    """What ``leakcheck init`` tells the user about detectors it set up."""
    return tuple(d.init_notice for d in registry() if d.init_notice)


def families(policy: PolicyView) -> tuple[Family, ...]:
    """Every family some detector needs, each once, and the frame count the report states."""
    from ..signals.families import frames_family, unique

    return unique([*(f for d in registry() for f in d.families(policy.detectors.of(d), policy)), frames_family()])
