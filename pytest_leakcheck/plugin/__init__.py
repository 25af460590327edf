"""``pytest --leakcheck``: every split pair of the policy becomes a test item.

The plugin only translates: options to a policy, the core's report to items,
a fixture and a terminal summary.  The check itself is the same core call the
CLI makes, run once per session.  Everything heavier than the policy module
(numpy, Pillow, imagehash) is imported inside hooks that run only with
``--leakcheck``, so having the plugin installed costs nothing when it is off.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import LeakcheckError

if TYPE_CHECKING:
    from ..report.model import Report
    from ..policy.load import Policy
    from .items import Section

#: Key of the pickled report in xdist's ``workerinput``.
WORKER_INPUT_KEY = "leakcheck_report"
#: Findings a failing item shows in full; the report file has them all.
ITEM_MAX_FINDINGS = 10
#: Warning-level findings the terminal summary shows in full.
SUMMARY_MAX_FINDINGS = 20
DEFAULT_FORMAT = "json"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("leakcheck", "train/test leakage in image datasets (pytest-leakcheck)")
    # default=None tells "not given" from "given", so the ini key applies only when absent.
    group.addoption("--leakcheck", action="store_true", default=None,
                    help="check the dataset for leaks; each split pair is a test item")
    group.addoption("--leakcheck-policy", metavar="PATH", default=None,
                    help="policy file (default: leakcheck.yaml in the rootdir or a parent, up to the repo root)")
    group.addoption("--leakcheck-only", action="store_true", default=None,
                    help="run only the leak checks, not the test suite (implies --leakcheck)")
    group.addoption("--leakcheck-format", metavar="FORMAT", default=None,
                    help=f"format of the report file: json or text (default: {DEFAULT_FORMAT})")
    group.addoption("--leakcheck-report", metavar="PATH", default=None,
                    help="where to write the full report (default: .leakcheck/report.<format> in the rootdir)")
    parser.addini("leakcheck", type="bool", default=False, help="always run the leak checks (--leakcheck)")
    parser.addini("leakcheck_policy", default="",
                  help="policy file, relative to the ini file (--leakcheck-policy)")
    parser.addini("leakcheck_only", type="bool", default=False, help="run only the leak checks (--leakcheck-only)")
    parser.addini("leakcheck_format", default=DEFAULT_FORMAT, help="format of the report file (--leakcheck-format)")
    parser.addini("leakcheck_report", default="",
                  help="where to write the full report, relative to the ini file (--leakcheck-report)")


def _setting(config: pytest.Config, name: str) -> Any:
    """The command-line option if given, else the ini key of the same name."""
    value = config.getoption(name)
    return value if value is not None else config.getini(name)


def _ini_base(config: pytest.Config) -> Path:
    return config.inipath.parent if config.inipath else config.rootpath


def _path_setting(config: pytest.Config, name: str) -> Path | None:
    """A path from the command line (relative to where pytest runs) or the ini file (relative to it)."""
    value = config.getoption(name)
    if value:
        return Path(config.invocation_params.dir, value)
    value = config.getini(name)
    return Path(_ini_base(config), value) if value else None


@dataclass
class LeakcheckSession:
    """What one pytest session knows about the leak check; kept in ``config.stash``."""

    config: pytest.Config
    policy: Policy
    sections: tuple[Section, ...]
    report_path: Path
    fmt: str
    only: bool
    _report: Report | None = None
    _error: LeakcheckError | None = None

    @property
    def ran(self) -> bool:
        return self._report is not None

    def report(self) -> Report:
        """The session's one report: computed on first use, or received from the xdist controller."""
        if self._error is not None:
            raise self._error
        if self._report is None:
            received = getattr(self.config, "workerinput", {}).get(WORKER_INPUT_KEY)
            try:
                self._report = pickle.loads(received) if received else self._run()
            except LeakcheckError as exc:
                self._error = exc
                raise
        return self._report

    def _run(self) -> Report:
        from ..files.atomic import write_atomic
        from ..pipeline.run import check
        from ..render import render

        report = check(policy=self.policy)
        write_atomic(self.report_path, render(report, self.fmt, root=self.policy.root))
        return report


_KEY = pytest.StashKey[LeakcheckSession]()


def _usage_error(exc: LeakcheckError) -> pytest.UsageError:
    return pytest.UsageError(f"leakcheck: {exc}")


def _find_policy(config: pytest.Config) -> Path:
    path = _path_setting(config, "leakcheck_policy")
    if path is not None:
        if not path.is_file():
            raise pytest.UsageError(
                f"leakcheck: {path}: policy file not found (fix --leakcheck-policy or the "
                "leakcheck_policy ini key, or run `leakcheck init` to write one)"
            )
        return path
    from ..policy.locate import find_policy

    try:
        return find_policy(config.rootpath)
    except LeakcheckError as exc:
        raise pytest.UsageError(
            f"leakcheck: {exc.problem} (run `leakcheck init` to write one, pass --leakcheck-policy PATH, "
            "or set leakcheck_policy in the ini file)"
        ) from None


def _start(config: pytest.Config) -> LeakcheckSession:
    """Load and check the policy up front, so a mistake in it stops pytest with its message."""
    from ..policy.load import load
    from ..render import extension, formats
    from .items import resolved, sections

    fmt = _setting(config, "leakcheck_format") or DEFAULT_FORMAT
    if fmt not in formats():
        raise pytest.UsageError(
            f"leakcheck: unknown report format {fmt!r} (--leakcheck-format / leakcheck_format: "
            f"use one of {', '.join(formats())})"
        )
    try:
        policy = resolved(load(_find_policy(config)))
        names = sections(policy)
    except LeakcheckError as exc:
        raise _usage_error(exc) from None
    report_path = _path_setting(config, "leakcheck_report") or (
        config.rootpath / ".leakcheck" / f"report.{extension(fmt)}"
    )
    only = bool(_setting(config, "leakcheck_only"))
    return LeakcheckSession(config, policy, names, report_path, fmt, only)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "leakcheck: a train/test leakage check added by --leakcheck")
    if _setting(config, "leakcheck") or _setting(config, "leakcheck_only"):
        config.stash[_KEY] = _start(config)


def pytest_report_header(config: pytest.Config) -> str | None:
    state = config.stash.get(_KEY, None)
    return f"leakcheck: policy {state.policy.path}, report {state.report_path}" if state else None


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    state = config.stash.get(_KEY, None)
    # Not even importing the test modules is what makes --leakcheck-only quick.
    return True if state is not None and state.only else None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    # tryfirst: our items must exist before -k and -m deselect.
    state = config.stash.get(_KEY, None)
    if state is None:
        return
    # A policy above the rootdir would otherwise get a bare "::" node id.
    nodeid = os.path.relpath(state.policy.path, config.rootpath).replace(os.sep, "/")
    policy_file = PolicyFile.from_parent(session, path=state.policy.path, nodeid=nodeid)
    items[:0] = list(session.genitems(policy_file))


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    # The xdist controller runs the check once, before any worker starts, and
    # hands each worker the result (pytest_configure_node below).  Without
    # xdist the check runs lazily, when the first leak item or fixture needs it.
    config = session.config
    state = config.stash.get(_KEY, None)
    if state is not None and config.pluginmanager.has_plugin("dsession"):
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line("leakcheck: checking the dataset once, before the workers start")
        try:
            state.report()
        except LeakcheckError as exc:
            raise _usage_error(exc) from None


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    state = node.config.stash.get(_KEY, None)
    if state is not None and state.ran:
        # execnet carries only builtin types; the report (frozen dataclasses)
        # travels pickled, from this process to the workers it starts.
        node.workerinput[WORKER_INPUT_KEY] = pickle.dumps(state.report())


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = config.stash.get(_KEY, None)
    if state is None or not state.ran:
        return
    from ..files.names import log_line
    from ..render import finding_lines
    from .items import with_severity

    report = state.report()
    warnings = with_severity(report, "warning").findings
    lines: list[str] = []
    for f in warnings[:SUMMARY_MAX_FINDINGS]:
        lines += finding_lines(f)
    if len(warnings) > SUMMARY_MAX_FINDINGS:
        lines.append(f"... and {len(warnings) - SUMMARY_MAX_FINDINGS} more warnings")
    lines += [f"warning: {w}" for w in report.warnings]
    errors = len(report.errors)
    lines.append(f"leakcheck: {errors} error{'s' * (errors != 1)}, {len(warnings)} "
                 f"warning{'s' * (len(warnings) != 1)}; full report: {state.report_path}")
    terminalreporter.section("leakcheck")
    for line in lines:
        terminalreporter.line(log_line(line))  # warnings quote paths from the policy


@pytest.fixture(scope="session")
def leakcheck(pytestconfig: pytest.Config) -> Report:
    """The session's leak-check report, for your own assertions on ``report.findings``."""
    state = pytestconfig.stash.get(_KEY, None)
    try:
        if state is None:
            # Without --leakcheck the fixture still works; it reads the same settings.
            state = pytestconfig.stash[_KEY] = _start(pytestconfig)
        return state.report()
    except pytest.UsageError as exc:
        pytest.fail(str(exc), pytrace=False)
    except LeakcheckError as exc:
        pytest.fail(f"leakcheck: {exc}", pytrace=False)


class LeakcheckFailure(Exception):
    """An item's findings; shown as plain text, without a traceback."""


class PolicyFile(pytest.File):
    """The policy file as a collector: one item per section."""

    def collect(self) -> Iterator[LeakcheckItem]:
        for section in self.config.stash[_KEY].sections:
            yield LeakcheckItem.from_parent(self, name=section.name, section=section)


class LeakcheckItem(pytest.Item):
    """One section of the report (``train~test``, ``groups``, ``files``); fails on its errors."""

    def __init__(self, *, section: Section, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.section = section
        self.add_marker("leakcheck")

    def runtest(self) -> None:
        from ..render import render
        from .items import failing

        state = self.config.stash[_KEY]
        try:
            report = state.report()
        except LeakcheckError as exc:
            raise LeakcheckFailure(f"leakcheck could not run: {exc}") from None
        errors = failing(report, self.section.name, state.sections)
        if errors.findings:
            text = render(errors, "text", max_findings=ITEM_MAX_FINDINGS)
            raise LeakcheckFailure(f"{text}full report: {state.report_path}")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, LeakcheckFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"leakcheck {self.section.name}"
