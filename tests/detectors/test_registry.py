"""Detector knowledge has one home: adding a detector module changes nothing outside detectors/.

The renderers and the policy `leakcheck init` writes ask the registry how a
detector words its values and signals and what its defaults are; a detector
dropped into the package shows up in all of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import pytest_leakcheck
from pytest_leakcheck import detectors
from pytest_leakcheck.init.recognise import Layout, policy_text
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.render import render
from pytest_leakcheck.report.model import Finding, Link, Member, Pair, Report

PACKAGE = Path(pytest_leakcheck.__file__).parent

#: A detector of its own, written as a module of the detectors package would be.
GLINT = '''
"""``glint``: a made-up detector, registered by a test."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..validate import SEVERITIES, Ctx
from .base import Detector, section


@dataclass(frozen=True)
class GlintSettings:
    severity: str = "warning"
    min_glint: float = 0.5


class Glint(Detector):
    name = "glint"
    section = "glint"
    rank = 45
    evidence_key = "glint_score"
    default = GlintSettings()
    evidence_value = "glint score {:.2f}"
    signal_text = {"glint_ratio": "glint ratio {:.0%}"}
    init_comment = "Sees sparkle where hashes see noise."
    init_keys = (("severity", ""), ("min_glint", "how much glint makes a copy"))

    def parse(self, ctx: Ctx, raw: Any, at: tuple[str, ...]) -> GlintSettings:
        raw = section(ctx, raw, at, ("severity", "min_glint"))
        return GlintSettings(ctx.choice(raw.get("severity", "warning"), (*at, "severity"), SEVERITIES),
                             ctx.number(raw.get("min_glint", 0.5), (*at, "min_glint"), float, 0, 1))

    def summary(self, stats: Any) -> str:
        return f"glint threshold {stats['threshold']:.2f}"


DETECTOR = Glint()
'''


@pytest.fixture
def glint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[detectors.Detector]:
    """The registry with ``glint.py`` in the package's folder list, as if it were added to detectors/."""
    folder = tmp_path / "more_detectors"
    folder.mkdir()
    (folder / "glint.py").write_text(GLINT)
    monkeypatch.setattr(detectors, "__path__", [*detectors.__path__, str(folder)])
    detectors.registry.cache_clear()
    yield detectors.get("glint")
    monkeypatch.undo()
    detectors.registry.cache_clear()
    monkeypatch.delitem(__import__("sys").modules, "pytest_leakcheck.detectors.glint", raising=False)


#: A detector written as a package, the way ``aligned/`` and ``same_scene/`` are: the class in
#: ``__init__.py``, its arithmetic in a submodule imported only when it searches.
SPARKLE_INIT = GLINT.replace("glint", "sparkle").replace("Glint", "Sparkle").replace(
    "from ..validate", "from ...validate").replace("from .base", "from ..base").replace(
    "rank = 45", "rank = 46") + \
    "\nfrom . import _arith  # noqa: E402  (the folder's private helper: no detector of its own)\n"
SPARKLE_HELPER = "DETECTOR = None  # a helper inside a detector's folder is never a detector\nSIDE = 7\n"
#: A module whose name says it is private: whatever it sets, it is no detector.
HIDDEN = GLINT.replace("glint", "hidden").replace("Glint", "Hidden").replace("rank = 45", "rank = 47")


@pytest.fixture
def sparkle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[detectors.Detector]:
    """The registry with a ``sparkle/`` package and a ``_hidden.py`` module in the package's folder list."""
    folder = tmp_path / "more_detectors"
    (folder / "sparkle").mkdir(parents=True)
    (folder / "sparkle" / "__init__.py").write_text(SPARKLE_INIT)
    (folder / "sparkle" / "_arith.py").write_text(SPARKLE_HELPER)
    (folder / "_hidden.py").write_text(HIDDEN)
    monkeypatch.setattr(detectors, "__path__", [*detectors.__path__, str(folder)])
    detectors.registry.cache_clear()
    yield detectors.get("sparkle")
    monkeypatch.undo()
    detectors.registry.cache_clear()
    for name in ("sparkle._arith", "sparkle", "_hidden"):
        monkeypatch.delitem(__import__("sys").modules, f"pytest_leakcheck.detectors.{name}", raising=False)


def test_a_detector_package_is_registered_and_its_private_modules_are_not(sparkle: detectors.Detector) -> None:
    assert sparkle.name == "sparkle" and sparkle.rank == 46
    names = detectors.names()
    assert "sparkle" in names and "hidden" not in names
    assert names.index("sparkle") == names.index("aligned") + 1  # by rank, among the real ones
    assert __import__("sys").modules["pytest_leakcheck.detectors.sparkle._arith"].SIDE == 7


def _report() -> Report:
    members = (Member("train/a.jpg", "train", "00" * 32),
               Member("test/b.jpg", "test", "11" * 32, Link("train/a.jpg", "glint", 0.7712, "hflip")))
    pair = Pair("train/a.jpg", "test/b.jpg", "glint", 0.7712, "hflip", {"glint_ratio": 0.25, "phash_distance": 12})
    finding = Finding("abcdef012345", "near-duplicate", "error", members, pairs=(pair,), orientation="hflip")
    return Report("leakcheck.yaml", (finding,), stats={"files": 2, "glint": {"threshold": 0.42}})


def test_a_new_detector_module_shows_in_the_text_report(glint: detectors.Detector) -> None:
    text = render(_report(), "text")
    assert "linked by glint 0.7712 after hflip to train/a.jpg" in text
    assert "evidence: glint score 0.77, phash distance 12, glint ratio 25%" in text
    assert "; glint threshold 0.42" in text


def test_a_new_detector_module_shows_in_the_markdown_and_sarif_reports(glint: detectors.Detector) -> None:
    for fmt in ("markdown", "sarif", "annotations"):
        out = render(_report(), fmt)
        assert "glint 0.7712 after hflip" in out, fmt
        assert "phash distance 12, glint ratio 25%" in out, fmt


def test_without_the_module_its_signals_read_by_their_own_names() -> None:
    """The fixture's effect is real: unregistered, the same report shows the raw signal name."""
    text = render(_report(), "text")
    assert "glint ratio 0.25" in text and "glint ratio 25%" not in text
    assert "glint score" not in text and "glint threshold" not in text


def test_a_new_detector_module_shows_in_the_init_policy(glint: detectors.Detector, tmp_path: Path) -> None:
    text = policy_text(Layout("splits:\n  train: [train/**]\n  test: [test/**]\n", "", (), ()))
    assert ("  # Sees sparkle where hashes see noise.\n"
            "  glint:\n"
            "    severity: warning\n"
            "    min_glint: 0.5          # how much glint makes a copy\n") in text
    (tmp_path / "leakcheck.yaml").write_text(text)
    assert load(tmp_path / "leakcheck.yaml").detectors.glint == glint.default


def test_the_init_policy_states_every_detector_at_its_default(tmp_path: Path) -> None:
    """Nothing in the template restates a default by hand: it reads back as the registry's defaults
    (or what a detector asks init to propose instead, ``init_default``: same-scene on at warning)."""
    text = policy_text(Layout("splits:\n  train: [train/**]\n  test: [test/**]\n", "", (), ()))
    (tmp_path / "leakcheck.yaml").write_text(text)
    got = load(tmp_path / "leakcheck.yaml").detectors
    for d in detectors.registry():
        assert got.of(d) == (d.init_default if d.init_default is not None else d.default), d.name
    for d in detectors.registry():
        assert re.search(rf"^  {d.section}:", text, re.M), d.name


def test_no_module_outside_detectors_names_a_detector_or_its_signals() -> None:
    """Renderers, the report model and the init template ask the registry.  Names that are
    also finding kinds (identical-file, identical-pixels, same-scene) belong to the model as kinds."""
    kinds = {"identical-file", "identical-pixels", "near-duplicate", "same-scene"}
    words = {d.name for d in detectors.registry()} - kinds
    words |= {key for d in detectors.registry() for key in d.signal_text}
    words |= {d.evidence_key for d in detectors.registry() if d.evidence_key}
    readers = [*sorted((PACKAGE / "render").glob("*.py")), PACKAGE / "report/model.py",
               PACKAGE / "init/recognise.py"]
    named = {}
    for path in readers:
        # String literals only: a docstring or comment may mention a detector as an example.
        found = {w for w in words if re.search(rf"""["']{re.escape(w)}["']""", path.read_text(encoding="utf-8"))}
        if found:
            named[path.name] = sorted(found)
    assert named == {}
