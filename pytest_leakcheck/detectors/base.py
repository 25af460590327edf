"""The protocol every detector follows, and the helpers detectors share.

A detector is one way of deciding that two images are copies.  It lives in
one module of this package that sets ``DETECTOR = MyDetector()``; the
registry (``__init__.py``) finds it.  It owns:

- its policy section (``detectors: {section: ...}``): :meth:`Detector.parse`
  validates it into a frozen settings value with at least ``severity``;
- the signal families it needs from the one decode (:meth:`families`);
- how it finds matches in a :class:`~pytest_leakcheck.search.run.SearchRun`
  (:meth:`find`; full, focused and incremental searches all go through it);
- how strong a match is and what evidence it adds to a pair
  (:meth:`strength`, :meth:`pair_signals`, ``evidence_key``).

Detectors import ``config``, ``signals``, ``kernels``, ``context`` and
``decode``, never the policy, the inventory or the pipeline above them: the
policy object arrives as an argument and is read through :class:`PolicyView`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from ..validate import SEVERITIES, Ctx

if TYPE_CHECKING:  # numpy-backed types: loading a policy must not import numpy (tests/cli/test_lean.py)
    from ..search.kernels import Match
    from ..search.run import SearchRun
    from ..signals.families import Family, Signatures


class Pending(Protocol):
    """A search begun (:meth:`Detector.begin`), used as a context: leaving it stops what still runs."""

    #: Whether ``result()`` may still have to wait (for the progress shown meanwhile).
    running: bool

    def result(self) -> list[Match]: ...

    def __enter__(self) -> Pending: ...

    def __exit__(self, *exc: object) -> None: ...


@dataclass
class Done:
    """A search that ended when it began."""

    matches: list[Match]
    running: bool = False

    def result(self) -> list[Match]:
        return self.matches

    def __enter__(self) -> Done:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class PolicyView(Protocol):
    """The parts of a policy a detector may read."""

    @property
    def orientations(self) -> tuple[str, ...]: ...

    @property
    def detectors(self) -> Any: ...


@dataclass(frozen=True)
class Severity:
    """Settings of a detector that has nothing to set but its severity."""

    severity: str = "error"


class Detector:
    """Subclass, set the class attributes, override what differs from the defaults."""

    #: Name in matches and reports (``phash``, ``identical-file``).
    name: ClassVar[str]
    #: Its key under ``detectors:`` in the policy.
    section: ClassVar[str]
    #: Kind of finding its matches make: ``identical-file``, ``identical-pixels`` or ``near-duplicate``.
    kind: ClassVar[str] = "near-duplicate"
    #: Order of strength, strongest first: members are linked by their strongest matches, and a
    #: cluster's kind is that of its weakest link (findings.py).
    rank: ClassVar[int]
    #: Whether matches between two unchanged files can be reused from the last full search.
    incremental: ClassVar[bool] = True
    #: Whether :meth:`begin` may leave work running in worker processes: such a detector's
    #: search is begun before the others', so that they all search while it works.
    begins_first: ClassVar[bool] = False
    #: Key of the evidence this detector's matches give a finding, and whether lower is stronger.
    evidence_key: ClassVar[str | None] = None
    lower_is_stronger: ClassVar[bool] = False
    #: Its matches carry a zoom and shift (the review page's heatmap follows them).
    aligns: ClassVar[bool] = False
    #: Whether its error-level matches are copies even inside a web over most of the dataset (a
    #: ``shared-scene`` note, ``pipeline/clusters.py``): its verdict rules out another shot of a fixed
    #: scene by itself, so such links are not folded into the note however many files they touch.
    stands_out_of_scene: ClassVar[bool] = False
    #: Settings when the policy does not mention the detector.
    default: ClassVar[Any] = Severity()

    # How reports and ``leakcheck init`` show it: the renderers and the template read these
    # through the registry, so none of them names a detector.
    #: Its match value after its name in a member's link (``aligned 0.555``); None: no value to show.
    link_value: ClassVar[str | None] = "{:g}"
    #: Its match value on the evidence line of a cluster whose best pair it found (``aligned score {:.3f}``).
    evidence_value: ClassVar[str | None] = None
    #: Its :meth:`pair_signals` as the evidence line states them; a signal without one reads ``name value``.
    signal_text: ClassVar[dict[str, str]] = {}
    #: The keys of its section ``leakcheck init`` spells out (values from ``default``), each with a
    #: comment.  A section of severity only is written bare (``identical_file: error``) when the detector
    #: reads that form, as the protocol's :meth:`parse` does.
    init_keys: ClassVar[tuple[tuple[str, str], ...]] = (("severity", ""),)
    #: Comment lines ``leakcheck init`` writes above its section, and what it tells the user afterwards.
    init_comment: ClassVar[str] = ""
    init_notice: ClassVar[str] = ""
    #: Settings ``leakcheck init`` writes when they differ from ``default`` (a detector off
    #: unless a policy names it, proposed on by init); None: the defaults.
    init_default: ClassVar[Any] = None

    def parse(self, ctx: Ctx, raw: Any, at: tuple[str, ...]) -> Any:
        """Validate this detector's section: ``error``, or ``{severity: error}``."""
        return Severity(simple_severity(ctx, raw, at, self.default.severity))

    def families(self, settings: Any, policy: PolicyView) -> tuple[Family, ...]:
        """Signal families this detector needs computed for every file."""
        return ()

    def find(self, run: SearchRun, settings: Any) -> list[Match]:
        """Every match in ``run`` (only pairs touching ``run.focus`` when it is set)."""
        raise NotImplementedError

    def begin(self, run: SearchRun, settings: Any) -> Pending:
        """The search of :meth:`find`, begun; its ``result()`` is what ``find`` returns.

        The default searches at once.  A detector whose search can go on in worker
        processes while the next detectors search (``same_scene``) returns before it ends.
        """
        return Done(self.find(run, settings))

    def refine(self, run: SearchRun, settings: Any, matches: list[Match]) -> list[Match]:
        """A second look at every detector's matches (e.g. verification); default: keep all."""
        return matches

    def strength(self, match: Match, settings: Any) -> float:
        """How sure a match is, on one 0..1 scale for every detector (1: identical)."""
        return 1.0

    def weak(self, match: Match, sigs: Signatures, policy: PolicyView) -> bool:
        """Whether ``match`` is only a warning-level link ("probably the same shot,
        please look"): it never merges clusters (findings.py).  Default: its flag."""
        return match.weak

    def orientations(self, settings: Any, policy: PolicyView) -> tuple[str, ...]:
        """The orientations this detector searched, for the summary; () if it has none to search."""
        from ..signals.families import search_orientations

        return search_orientations(policy.orientations)

    def pair_signals(self, sigs: Signatures, i: int, j: int, orientation: str, settings: Any) -> dict[str, float]:
        """Cheap signals this detector can measure for any pair, shown beside the one that fired."""
        return {}

    def threshold(self, settings: Any) -> float | None:
        """The value a match must reach (or stay under, ``lower_is_stronger``); None if fixed or calibrated."""
        return None

    def summary(self, stats: Any) -> str:
        """What the text summary line says of ``report.stats[name]`` (filled by :meth:`find`); "" for nothing."""
        return ""

    def calibrated(self, stats: Any) -> float | None:
        """The threshold :meth:`find` calibrated on the data (from ``report.stats[name]``), for score charts."""
        return None

    def params(self, settings: Any) -> str:
        """Everything its matches depend on, for the incremental cache's key."""
        return f"{self.name}:{settings!r}"


#: Closest non-matching pairs a detector records for the review page (``stats["near_misses"]``).
NEAR_MISSES = 200


def record_near_misses(run: SearchRun, name: str, values: Sequence[float], level: float, lower: bool) -> None:
    """Keep the ``NEAR_MISSES`` values closest to ``level`` among pairs that did not match.

    The review page draws them beside the matched pairs, on the other side of
    the level, so a reviewer sees how much room separates copies from the rest.
    A focused search adds to what the same run recorded already.
    """
    near = run.stats.setdefault("near_misses", {})
    old = near.get(name, {}).get("values", []) if isinstance(near, dict) else []
    kept = sorted([*old, *map(float, values)], reverse=not lower)[:NEAR_MISSES]
    near[name] = {"values": kept, "level": float(level), "lower_is_stronger": lower}


def simple_severity(ctx: Ctx, raw: Any, at: tuple[str, ...], default: str) -> str:
    """``severity`` written bare (``phash: warning``) or as ``{severity: warning}``."""
    value = raw if raw is not None else default
    if isinstance(value, dict):
        value = ctx.mapping(value, at, ("severity",)).get("severity", default)
        return ctx.choice(value, (*at, "severity"), SEVERITIES)
    return ctx.choice(value, at, SEVERITIES)


def section(ctx: Ctx, raw: Any, at: tuple[str, ...], keys: Sequence[str]) -> dict:
    """A detector's mapping section, unknown keys refused with a suggestion."""
    return ctx.mapping(raw, at, tuple(keys))
