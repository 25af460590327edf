"""Leakage checks as Great Expectations (GX 1.x) expectations, for the suites teams already run.

Importing this module registers two expectations with GX, usable in any
suite over a table with one row per image (``leakcheck export`` writes one,
or bring your own manifest):

- :class:`ExpectGroupsInOneSplit`, ``column_list=[group, split, ...]``: every
  row of a group that has rows in two or more splits is unexpected;
- :class:`ExpectNoCopiesAcrossSplits`, ``column_list=[cluster, split, ...]``:
  every row of a copy cluster that spans two or more splits is unexpected.

The first column is the key, the second the split; further columns (the
default adds ``path``) ride along, so the unexpected values, and the Data
Docs built from them, name the leaking files.  An empty or missing key means
"no group" / "no copy" and is never unexpected.  The Pandas engine is the one
implemented.

:func:`validate` does the whole round: table, suite, validation, Data Docs.
The core never imports this module: GX costs seconds to import.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import great_expectations as gx
import pandas as pd
from great_expectations.compatibility import pydantic
from great_expectations.compatibility.pydantic import StrictStr
from great_expectations.core.expectation_validation_result import ExpectationSuiteValidationResult
from great_expectations.data_context.types.base import ProgressBarsConfig
from great_expectations.execution_engine import PandasExecutionEngine
from great_expectations.expectations.expectation import MulticolumnMapExpectation
from great_expectations.expectations.metrics.map_metric_provider import (
    MulticolumnMapMetricProvider,
    multicolumn_condition_partial,
)
from great_expectations.render import LegacyRendererType, RenderedStringTemplateContent
from great_expectations.render.renderer.renderer import renderer

from . import export
from ..errors import LeakcheckError
from ..report.model import Report
from ..policy.load import Policy

if TYPE_CHECKING:
    from ..pipeline.options import RunOptions

__all__ = ["ExpectGroupsInOneSplit", "ExpectNoCopiesAcrossSplits", "ExpectationCrashed",
           "build_docs", "expectations", "raised", "validate", "validate_table"]

_METRIC = "leakcheck.key_in_one_split"
#: Names of what validate() adds to a context; a second run reuses them.
DATASOURCE = "leakcheck"
ASSET = "images"
#: The Data Docs site build_docs() configures while it builds.
DOCS_SITE = "leakcheck"


class ExpectationCrashed(LeakcheckError):
    """An expectation raised inside GX: its result says nothing about leakage."""

    def __init__(self, problem: str, result: ExpectationSuiteValidationResult) -> None:
        super().__init__(problem, fix="check the column names; if they are right, report this with the "
                                      "traceback in the result's exception_info")
        self.result = result


class KeyInOneSplit(MulticolumnMapMetricProvider):
    """Row-wise: does the row's key (first column) have rows in at most one split (second column)?"""

    condition_metric_name = _METRIC
    condition_domain_keys = ("batch_id", "table", "column_list", "row_condition", "condition_parser",
                             "ignore_row_if")

    @multicolumn_condition_partial(engine=PandasExecutionEngine)
    def _pandas(cls, column_list: pd.DataFrame, **kwargs: Any) -> pd.Series:
        key, split = column_list.iloc[:, 0], column_list.iloc[:, 1]
        # CSV readers give NaN for an empty cell, our own table gives "": both mean no key.
        present = key.notna() & (key.astype(str).str.len() > 0)
        spread = split.groupby(key.where(present)).transform("nunique")
        return ~present | (spread <= 1)


class _KeyInOneSplitExpectation(MulticolumnMapExpectation):
    """Shared by both expectations: only the default columns and the wording differ."""

    map_metric = _METRIC
    _sentence: ClassVar[str] = ""

    @classmethod
    @renderer(renderer_type=LegacyRendererType.PRESCRIPTIVE)
    def _prescriptive_renderer(
        cls,
        configuration: Any = None,
        result: Any = None,
        runtime_configuration: dict | None = None,
        **kwargs: Any,
    ) -> list[RenderedStringTemplateContent]:
        # Without this, Data Docs print the raw kwargs instead of a sentence.
        columns = (configuration.kwargs.get("column_list") if configuration else None) \
            or cls.__fields__["column_list"].default
        return [RenderedStringTemplateContent(
            content_block_type="string_template",
            string_template={
                "template": cls._sentence,
                "params": {"key": columns[0], "split": columns[1]},
                "styling": (runtime_configuration or {}).get("styling"),
            },
        )]


class ExpectGroupsInOneSplit(_KeyInOneSplitExpectation):
    """Each group's rows are all in one split; rows of groups spanning splits are unexpected.

    ``column_list``: the group column, the split column, then any columns to
    show with the unexpected rows (default ``["group", "split", "path"]``).
    """

    column_list: list[StrictStr] = pydantic.Field(
        default=["group", "split", "path"],
        description="group column, split column, then columns shown with unexpected rows",
    )
    _sentence: ClassVar[str] = "Rows sharing a $key value (a group) are all in one $split."


class ExpectNoCopiesAcrossSplits(_KeyInOneSplitExpectation):
    """No copy cluster spans splits; rows of clusters in two or more splits are unexpected.

    ``column_list``: the cluster column (empty: not a copy), the split column,
    then any columns to show with the unexpected rows (default
    ``["cluster", "split", "path"]``).
    """

    column_list: list[StrictStr] = pydantic.Field(
        default=["cluster", "split", "path"],
        description="cluster column, split column, then columns shown with unexpected rows",
    )
    _sentence: ClassVar[str] = "Rows sharing a $key value (a copy cluster) are all in one $split."


def expectations(*, group: str = "group", cluster: str = "cluster", split: str = "split",
                 show: Sequence[str] = ("path",)) -> list[MulticolumnMapExpectation]:
    """Both expectations over the given column names, ready for ``suite.add_expectation``."""
    return [
        ExpectNoCopiesAcrossSplits(column_list=[cluster, split, *show]),
        ExpectGroupsInOneSplit(column_list=[group, split, *show]),
    ]


def validate(
    source: Policy | Report | str | Path,
    context: Any = None,
    *,
    suite_name: str = "leakcheck",
    data_docs: str | Path | None = None,
    result_format: str | dict = "COMPLETE",
    opts: RunOptions | None = None,
) -> ExpectationSuiteValidationResult:
    """Build the image table for a policy (running a check) or a report, and validate it.

    Runs in ``context`` or an ephemeral one.  With ``data_docs`` (a folder),
    Data Docs are built there too; open ``data_docs/index.html``.  ``opts``
    (``pytest_leakcheck.pipeline.run.RunOptions``): its ``jobs`` and
    ``use_cache`` are the check's.
    """
    jobs, use_cache = (None, True) if opts is None else (opts.jobs, opts.use_cache)
    if isinstance(source, Report):
        table = export.table(report=source, jobs=jobs, use_cache=use_cache)
    else:
        table = export.table(source, jobs=jobs, use_cache=use_cache)
    return validate_table(table, context, suite_name=suite_name, data_docs=data_docs, result_format=result_format)


def validate_table(
    table: export.Table | pd.DataFrame,
    context: Any = None,
    *,
    suite_name: str = "leakcheck",
    data_docs: str | Path | None = None,
    result_format: str | dict = "COMPLETE",
) -> ExpectationSuiteValidationResult:
    """Validate a table with the export's columns (or a DataFrame with them) as :func:`validate` does.

    Raises :class:`ExpectationCrashed` when an expectation raised inside GX:
    GX reports that as ``success=False``, which would read as a leak.
    """
    # Only the columns the expectations read: GX fingerprints every column of the batch,
    # and column-wise construction is several times faster than from row tuples.
    frame = table if isinstance(table, pd.DataFrame) else pd.DataFrame(
        {name: table.column(name) for name in ("path", "split", "group", "cluster")})
    if context is None:
        context = gx.get_context(mode="ephemeral")
        # Progress bars on stderr are noise in a test run; a user's context keeps its own setting.
        context.variables.progress_bars = ProgressBarsConfig(globally=False)
    suite = context.suites.add_or_update(gx.ExpectationSuite(name=suite_name, expectations=expectations()))
    definition = context.validation_definitions.add_or_update(
        gx.ValidationDefinition(name=suite_name, data=_batch_definition(context), suite=suite)
    )
    result = definition.run(batch_parameters={"dataframe": frame}, result_format=result_format)
    for r in result.results:
        messages = raised(r.exception_info)
        if messages:
            raise ExpectationCrashed(f"{r.expectation_config.type} raised inside Great Expectations: "
                                     f"{messages[0]}", result)
    if data_docs is not None:
        build_docs(context, data_docs)
    return result


def raised(exception_info: dict | None) -> list[str]:
    """Messages of the exceptions an expectation result records; empty when none was raised.

    GX 1.x uses two shapes: ``{"raised_exception": ..., "exception_message": ...}``
    and, when a metric fails, one such dict per metric keyed by its id, with no
    top-level ``raised_exception`` at all; a check of the top level alone
    misses the second.
    """
    if not exception_info:
        return []
    if "raised_exception" in exception_info:
        if not exception_info["raised_exception"]:
            return []
        return [str(exception_info.get("exception_message") or "an exception without a message")]
    return [m for v in exception_info.values() if isinstance(v, dict) for m in raised(v)]


def _batch_definition(context: Any) -> Any:
    """The whole-DataFrame batch of our pandas datasource, made once per context."""
    try:
        source = context.data_sources.get(DATASOURCE)
    except KeyError:
        source = context.data_sources.add_pandas(DATASOURCE)
    try:
        asset = source.get_asset(ASSET)
    except LookupError:
        asset = source.add_dataframe_asset(ASSET)
    try:
        return asset.get_batch_definition(ASSET)
    except KeyError:
        return asset.add_batch_definition_whole_dataframe(ASSET)


def build_docs(context: Any, folder: str | Path) -> Path:
    """Build Data Docs of ``context``'s suites and results into ``folder``; returns its index page.

    The site is configured only while it builds: the context's own sites
    (a ``leakcheck`` one included) are as they were afterwards.
    """
    folder = Path(folder).absolute()
    config: dict[str, Any] = {
        "class_name": "SiteBuilder",
        "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(folder)},
        "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
    }
    previous = copy.deepcopy(context.list_data_docs_sites().get(DOCS_SITE))
    if previous is None:
        context.add_data_docs_site(DOCS_SITE, config)
    else:
        context.update_data_docs_site(DOCS_SITE, config)
    try:
        context.build_data_docs(site_names=[DOCS_SITE])
    finally:
        if previous is None:
            context.delete_data_docs_site(DOCS_SITE)
        else:
            context.update_data_docs_site(DOCS_SITE, previous)
    return folder / "index.html"
