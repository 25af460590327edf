"""pytest_leakcheck.integrations.gx with real Great Expectations 1.x: expectations, validate(), Data Docs.

GX takes seconds to import, so these tests share one ephemeral context per
module.  Every result is checked for exceptions as well as for success: GX
records an expectation that raised as ``success=False``, which reads like a leak.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

# Imported, not skipped when missing: the test extra installs GX, and a skip would hide its absence.
import great_expectations as gx
import pandas as pd
import pytest

from pytest_leakcheck import check
from pytest_leakcheck.integrations import gx as lgx

from ..conftest import expected_leaks

ROOT = Path(__file__).resolve().parents[2]
#: Planted in examples/ by examples/make_example.py: copy -> original.
PLANTED = {
    "data/test/scene_31.jpg": "data/train/scene_03.jpg",
    "data/test/scene_32.jpg": "data/train/scene_07.jpg",
    "data/val/scene_33.jpg": "data/train/scene_11.jpg",
    "data/test/scene_34.jpg": "data/train/scene_14.jpg",
    "data/test/scene_35.png": "data/train/scene_05.jpg",
}
COPIES, GROUPS = "expect_no_copies_across_splits", "expect_groups_in_one_split"


def _raised(info: dict) -> bool:
    """Whether an exception_info records a raised exception, in either of GX's two shapes."""
    if "raised_exception" in info:
        return bool(info["raised_exception"])
    return any(_raised(v) for v in info.values() if isinstance(v, dict))


def _results(result) -> dict:
    """Results by expectation type, after checking that none of them raised."""
    for r in result.results:
        assert not _raised(r.exception_info), r.exception_info
    return {r.expectation_config.type: r for r in result.results}


def _paths(r, column: str = "path") -> set[str]:
    return {row[column] for row in r.result["unexpected_list"]}


@pytest.fixture(scope="module")
def context():
    ctx = gx.get_context(mode="ephemeral")
    ctx.variables.progress_bars = gx.data_context.types.base.ProgressBarsConfig(globally=False)
    return ctx


def _copy_example(root: Path, policy_extra: str = "") -> Path:
    shutil.copytree(ROOT / "examples/data", root / "data")
    policy = root / "leakcheck.yaml"
    policy.write_text((ROOT / "examples/leakcheck.yaml").read_text() + policy_extra)
    return policy


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _copy_example(tmp_path_factory.mktemp("example"))


def test_planted_example_fails_with_the_leaking_paths(context, example: Path) -> None:
    result = lgx.validate(example, context)
    assert not result.success
    by_type = _results(result)
    copies = by_type[COPIES]
    assert not copies.success
    assert _paths(copies) == set(PLANTED) | set(PLANTED.values())
    # The duplicate inside train stays in one split: a warning for leakcheck, no leak here.
    assert "data/train/scene_02_copy.jpg" not in _paths(copies)
    assert by_type[GROUPS].success  # the example has no group rules


def test_clean_dataset_passes(context, tmp_path_factory: pytest.TempPathFactory) -> None:
    policy = _copy_example(tmp_path_factory.mktemp("clean"))
    for copy in PLANTED:
        (policy.parent / copy).unlink()
    result = lgx.validate(policy, context)
    by_type = _results(result)
    assert result.success
    assert [r.result["unexpected_count"] for r in by_type.values()] == [0, 0]


def test_a_group_split_is_caught_by_expect_groups_in_one_split(context, tmp_path_factory) -> None:
    # Scenes 20-29 and 30-35 are groups with files in val and test (docs/policy-groups.md, `regex`).
    policy = _copy_example(tmp_path_factory.mktemp("groups"),
                           "groups:\n  - regex: 'scene_(?P<group>\\d)\\d'\n")
    by_type = _results(lgx.validate(policy, context))
    groups = by_type[GROUPS]
    assert not groups.success
    spread = {p.relative_to(policy.parent).as_posix() for p in policy.parent.glob("data/*/scene_[23]*")}
    assert _paths(groups) == spread
    assert {row["group"] for row in groups.result["unexpected_list"]} == {"2", "3"}
    assert not by_type[COPIES].success


@pytest.mark.slow
def test_validate_takes_a_report(context, leaky_dataset: Path) -> None:
    report = check(leaky_dataset / "leakcheck.yaml")
    by_type = _results(lgx.validate(report, context))
    assert _paths(by_type[COPIES]) == set(expected_leaks()) | set(expected_leaks().values())


def test_expectations_in_a_users_own_suite_and_manifest(context, tmp_path: Path) -> None:
    (tmp_path / "manifest.csv").write_text(
        "file,fold,video,dup\n"
        "a.jpg,train,v1,\n"
        "b.jpg,train,v1,d1\n"
        "c.jpg,test,v2,d1\n"
        "d.jpg,test,v3,\n"
        "e.jpg,val,v3,\n"
        "f.jpg,val,,\n"
        "g.jpg,test,,\n"
    )
    frame = pd.read_csv(tmp_path / "manifest.csv")  # empty cells become NaN: no group, no copy
    suite = context.suites.add(gx.ExpectationSuite(name="users-own", expectations=[
        gx.expectations.ExpectColumnValuesToNotBeNull(column="file"),
        lgx.ExpectGroupsInOneSplit(column_list=["video", "fold", "file"]),
        lgx.ExpectNoCopiesAcrossSplits(column_list=["dup", "fold", "file"]),
    ]))
    batch = context.data_sources.add_pandas("users-own").add_dataframe_asset("manifest") \
        .add_batch_definition_whole_dataframe("all")
    definition = context.validation_definitions.add(gx.ValidationDefinition(name="users-own", data=batch,
                                                                            suite=suite))
    by_type = _results(definition.run(batch_parameters={"dataframe": frame}, result_format="COMPLETE"))
    assert by_type["expect_column_values_to_not_be_null"].success
    assert _paths(by_type[GROUPS], "file") == {"d.jpg", "e.jpg"}
    assert _paths(by_type[COPIES], "file") == {"b.jpg", "c.jpg"}
    # Registered with GX: a suite saved as JSON comes back with our expectation types.
    again = gx.ExpectationSuite(**suite.to_json_dict())
    assert {type(e) for e in again.expectations} >= {lgx.ExpectGroupsInOneSplit, lgx.ExpectNoCopiesAcrossSplits}


def test_a_crash_inside_gx_is_raised_not_reported_as_a_leak(context) -> None:
    frame = pd.DataFrame({"path": ["a.jpg", "b.jpg"], "split": ["train", "test"], "group": ["", ""]})
    with pytest.raises(lgx.ExpectationCrashed, match=r'expect_no_copies_across_splits.*"cluster"') as caught:
        lgx.validate_table(frame, context)
    # What GX itself returns: a failure whose exception sits one level down in exception_info.
    crashed = {r.expectation_config.type: r for r in caught.value.result.results}[COPIES]
    assert not crashed.success and "raised_exception" not in crashed.exception_info
    assert _raised(crashed.exception_info) and lgx.raised(crashed.exception_info)


@pytest.mark.slow
def test_data_docs_list_the_leaking_files(context, example: Path, tmp_path: Path) -> None:
    result = lgx.validate(example, context, data_docs=tmp_path / "docs")
    _results(result)
    assert (tmp_path / "docs/index.html").is_file()
    pages = [p.read_text() for p in (tmp_path / "docs/validations").rglob("*.html")]
    page = next(p for p in pages if "scene_31.jpg" in p)
    assert all(path in page for path in PLANTED)
    assert "Rows sharing a" in page  # our sentence, not the raw kwargs
    assert lgx.DOCS_SITE not in context.get_site_names()  # configured only while it built


@pytest.mark.slow
def test_the_documented_example_runs(tmp_path: Path) -> None:
    text = (ROOT / "docs/great-expectations.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    shutil.copytree(ROOT / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns(".leakcheck"))
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # the example's Data Docs folder goes with tmp_path
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert all(path in proc.stdout for path in PLANTED)
    # What the page says it prints, but for the temporary folder's name.
    printed = re.search(r"It prints:\n\n```text\n(.*?)```", text, re.S).group(1)
    assert re.sub(r"leakcheck-docs-\w+", "leakcheck-docs-XXXXXXXX", proc.stdout).replace(str(tmp_path), "/tmp") \
        == printed
    index = re.search(r"Data Docs: file://(\S+/index.html)", proc.stdout).group(1)
    assert Path(index).is_file() and Path(index).is_relative_to(tmp_path)
