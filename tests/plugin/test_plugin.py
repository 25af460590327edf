"""``pytest --leakcheck``: items, options, fixture, errors and xdist, run through pytester."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_leakcheck.render import render
from pytest_leakcheck.testing import photo, save

POLICY = "version: 1\nsplits:\n  train: [train/**]\n  test: [test/**]\n"
SIZE = (64, 48)


def make_dataset(root: Path, *, copies: int = 1, policy: str = POLICY) -> Path:
    """4 train and 2 test images, plus ``copies`` byte copies of train images in test."""
    for i in range(4 + max(0, copies - 4)):
        save(photo(i, SIZE), root / f"train/img_{i}.jpg", quality=90)
    for i in range(2):
        save(photo(100 + i, SIZE), root / f"test/own_{i}.jpg", quality=90)
    for i in range(copies):
        shutil.copyfile(root / f"train/img_{i}.jpg", root / f"test/copy_{i}.jpg")
    (root / "leakcheck.yaml").write_text(policy)
    return root


@pytest.fixture(scope="module", autouse=True)
def _load_check_modules(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Run one check here first: pytester's in-process runs drop modules first
    imported inside them, and numpy's C extensions cannot be loaded twice."""
    from pytest_leakcheck import check

    check(make_dataset(tmp_path_factory.mktemp("warm")) / "leakcheck.yaml", use_cache=False)


@pytest.fixture
def leaky(pytester: pytest.Pytester) -> Path:
    """A pytester folder with one train image copied into test."""
    return make_dataset(pytester.path)


@pytest.fixture
def clean(pytester: pytest.Pytester) -> Path:
    """A pytester folder without leaks."""
    return make_dataset(pytester.path, copies=0)


HEAVY_CHECK = """
import sys

def test_no_heavy_imports():
    assert not {"numpy", "PIL", "imagehash"} & set(sys.modules)
"""


@pytest.mark.slow
def test_off_imports_no_heavy_module(pytester: pytest.Pytester, clean: Path) -> None:
    """Without --leakcheck the plugin pulls in neither numpy nor Pillow nor imagehash."""
    pytester.makepyfile(test_heavy=HEAVY_CHECK)
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    # The same probe fails once the check is on, so it really sees those imports.
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--leakcheck").assert_outcomes(passed=3, failed=1)


def test_items_listed_in_verbose_output(pytester: pytest.Pytester, leaky: Path) -> None:
    """Each split pair, groups and files is an item; the leaking pair fails, the rest pass."""
    result = pytester.runpytest("--leakcheck", "-v")
    result.stdout.fnmatch_lines([
        "leakcheck.yaml::train~test FAILED*",
        "leakcheck.yaml::groups PASSED*",
        "leakcheck.yaml::files PASSED*",
    ])
    result.assert_outcomes(failed=1, passed=2)


@pytest.mark.slow
def test_failure_shows_the_cli_text_and_writes_the_report(pytester: pytest.Pytester, leaky: Path) -> None:
    """The failing item prints the finding as the CLI does; the full JSON report is on disk."""
    result = pytester.runpytest("--leakcheck")
    result.stdout.fnmatch_lines([
        "*_ leakcheck train~test _*",
        "ERROR identical-file  train~test  [[]*[]]",
        # Each member after the first says how it joined the cluster.
        "    train/img_0.jpg  (train)",
        "    test/copy_0.jpg  (test)   linked by identical-file to train/img_0.jpg",
        "    evidence: same bytes",
        f"full report: {leaky / '.leakcheck' / 'report.json'}",
    ])
    data = json.loads((leaky / ".leakcheck/report.json").read_text())
    assert [f["split_pair"] for f in data["findings"]] == ["train~test"]
    assert "Traceback" not in result.stdout.str()


@pytest.mark.slow
def test_long_failure_is_cut_and_report_keeps_everything(pytester: pytest.Pytester) -> None:
    """With more findings than an item shows, the rest are counted; the report file has all."""
    from pytest_leakcheck.plugin import ITEM_MAX_FINDINGS

    copies = ITEM_MAX_FINDINGS + 2
    make_dataset(pytester.path, copies=copies)
    result = pytester.runpytest("--leakcheck", "--leakcheck-format", "text",
                                "--leakcheck-report", "out/leaks.txt")
    result.stdout.fnmatch_lines(["2 more errors, one line each *"])
    text = (pytester.path / "out/leaks.txt").read_text()
    assert text.count("ERROR identical-file") == copies


def test_warnings_go_to_the_summary_not_to_failures(pytester: pytest.Pytester, clean: Path) -> None:
    """An unassigned image is a warning: shown in the leakcheck section, no item fails."""
    save(photo(7, SIZE), clean / "stray/extra.jpg")
    result = pytester.runpytest("--leakcheck")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines([
        "*= leakcheck =*",
        "WARNING unassigned-file  [[]*[]]",
        "    stray/extra.jpg*",
        "leakcheck: 0 errors, 1 warning; full report: *",
    ])


def test_files_item_fails_on_an_unreadable_image(pytester: pytest.Pytester, clean: Path) -> None:
    """A corrupt image fails the files item and only that one."""
    (clean / "train/broken.jpg").write_bytes(b"\xff\xd8\xff not really a jpeg")
    result = pytester.runpytest("--leakcheck", "-v")
    result.stdout.fnmatch_lines(["leakcheck.yaml::files FAILED*", "ERROR unreadable-image  [[]*[]]"])
    result.assert_outcomes(passed=2, failed=1)


def test_within_split_items_when_duplicates_inside_a_split_are_errors(pytester: pytest.Pytester) -> None:
    """within_split: error adds one item per split, which fails on a duplicate inside it."""
    make_dataset(pytester.path, copies=0, policy=POLICY + "pairs: {within_split: error}\n")
    shutil.copyfile(pytester.path / "train/img_0.jpg", pytester.path / "train/img_0_again.jpg")
    result = pytester.runpytest("--leakcheck", "-v")
    result.stdout.fnmatch_lines([
        "leakcheck.yaml::train~test PASSED*",
        "leakcheck.yaml::train~train FAILED*",
        "leakcheck.yaml::test~test PASSED*",
    ])


def test_collect_only_lists_items_without_checking(pytester: pytest.Pytester, leaky: Path) -> None:
    """--co shows the items and never runs the check (no report, no store)."""
    result = pytester.runpytest("--leakcheck", "--co", "-q")
    result.stdout.fnmatch_lines(["leakcheck.yaml::train~test", "leakcheck.yaml::groups",
                                 "leakcheck.yaml::files"])
    assert not (leaky / ".leakcheck").exists()


def test_k_and_x_select_and_stop(pytester: pytest.Pytester, leaky: Path) -> None:
    """-k picks items by name; -x stops after the first failing item."""
    (leaky / "train/broken.jpg").write_bytes(b"not an image")
    pytester.runpytest("--leakcheck", "-k", "files").assert_outcomes(failed=1, deselected=2)
    pytester.runpytest("--leakcheck", "-m", "leakcheck", "-k", "not files").assert_outcomes(
        failed=1, passed=1, deselected=1)
    pytester.runpytest("--leakcheck", "-x").assert_outcomes(failed=1)


def test_leakcheck_only_skips_the_test_suite(pytester: pytest.Pytester, leaky: Path) -> None:
    """--leakcheck-only runs the leak items and does not even import the test modules."""
    pytester.makepyfile(test_broken="def test_x(:\n    pass\n", test_fails="def test_y():\n    assert 0\n")
    result = pytester.runpytest("--leakcheck-only", "-v")
    result.assert_outcomes(failed=1, passed=2)
    assert "test_broken" not in result.stdout.str()


def test_ini_keys(pytester: pytest.Pytester) -> None:
    """Every option has an ini key; ini paths are relative to the ini file."""
    make_dataset(pytester.path / "data")
    pytester.makeini(
        "[pytest]\nleakcheck = true\nleakcheck_policy = data/leakcheck.yaml\n"
        "leakcheck_format = text\nleakcheck_report = reports/leaks.txt\nleakcheck_only = true\n"
    )
    pytester.makepyfile(test_fails="def test_y():\n    assert 0\n")
    result = pytester.runpytest("-v")
    result.stdout.fnmatch_lines(["data/leakcheck.yaml::train~test FAILED*"])
    result.assert_outcomes(failed=1, passed=2)
    assert "ERROR identical-file" in (pytester.path / "reports/leaks.txt").read_text()


def test_manifest_policy_items(pytester: pytest.Pytester) -> None:
    """With a manifest, items come from the split names it uses."""
    make_dataset(pytester.path, copies=0)
    rows = [f"{p.relative_to(pytester.path).as_posix()},{p.parent.name}"
            for p in sorted(pytester.path.glob("*/*.jpg"))]
    (pytester.path / "splits.csv").write_text("path,split\n" + "\n".join(rows) + "\n")
    (pytester.path / "leakcheck.yaml").write_text("version: 1\nsplits: {manifest: splits.csv}\n")
    result = pytester.runpytest("--leakcheck", "-v")
    result.stdout.fnmatch_lines(["leakcheck.yaml::test~train PASSED*"])


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        (POLICY + "pairs: {compare: [train~tset]}\n",
         "ERROR: leakcheck: *leakcheck.yaml:*: `pairs.compare.0`: unknown split 'tset' (splits are: train, test)"),
        (POLICY + "detector: {}\n", "ERROR: leakcheck: *`detector`: unknown key (did you mean `detectors`?)"),
    ],
)
def test_policy_error_is_a_usage_error(pytester: pytest.Pytester, policy: str, message: str) -> None:
    """A policy mistake stops pytest with the core's message, not a traceback."""
    make_dataset(pytester.path, copies=0, policy=policy)
    result = pytester.runpytest("--leakcheck")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_missing_policy_is_a_usage_error(pytester: pytest.Pytester) -> None:
    """No policy anywhere: a usage error naming the option and the ini key."""
    pytester.makepyfile(test_ok="def test_ok():\n    pass\n")
    result = pytester.runpytest("--leakcheck", "--leakcheck-policy", "nowhere.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: leakcheck: *nowhere.yaml: policy file not found (fix --leakcheck-policy*"])


FIXTURE_TESTS = """
def test_nothing_leaks_into_test(leakcheck):
    assert not [f for f in leakcheck.errors if "test" in f.splits]

def test_a_few_leaks_into_val_are_tolerated(leakcheck):
    assert len([f for f in leakcheck.errors if "val" in f.splits]) <= 1
"""


def test_fixture_allows_custom_assertions(pytester: pytest.Pytester) -> None:
    """The leakcheck fixture returns the report, with or without --leakcheck."""
    root = make_dataset(pytester.path, copies=0,
                        policy="version: 1\nsplits: {train: [train/**], val: [val/**], test: [test/**]}\n")
    save(photo(50, SIZE), root / "val/own.jpg", quality=90)
    shutil.copyfile(root / "train/img_1.jpg", root / "val/copy.jpg")
    pytester.makepyfile(test_custom=FIXTURE_TESTS)
    pytester.runpytest().assert_outcomes(passed=2)
    shutil.copyfile(root / "train/img_2.jpg", root / "test/copy.jpg")
    result = pytester.runpytest("--leakcheck", "-k", "custom")
    result.assert_outcomes(passed=1, failed=1, deselected=5)
    result.stdout.fnmatch_lines(["FAILED test_custom.py::test_nothing_leaks_into_test*"])


COUNTING_CONFTEST = """
import os
import pytest_leakcheck.pipeline.run as core

_check = core.check

def counting_check(*args, **kwargs):
    with open({log!r}, "a") as fh:
        fh.write(str(os.getpid()) + "\\n")
    return _check(*args, **kwargs)

core.check = counting_check
"""


@pytest.mark.slow
def test_xdist_runs_the_check_once(pytester: pytest.Pytester, leaky: Path) -> None:
    """With -n 2 and every item on every worker, the check still runs once, in the controller."""
    pytest.importorskip("xdist")
    log = pytester.path / "checks.log"
    pytester.makeconftest(COUNTING_CONFTEST.format(log=str(log)))
    pytester.makepyfile(test_fixture="def test_report(leakcheck):\n    assert leakcheck.errors\n")
    result = pytester.runpytest_subprocess("--leakcheck", "-n", "2", "--dist", "each", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=2, passed=6)
    result.stdout.fnmatch_lines(["ERROR identical-file  train~test  [[]*[]]"])
    assert len(log.read_text().split()) == 1


@pytest.mark.slow
def test_xdist_policy_error_is_a_usage_error(pytester: pytest.Pytester) -> None:
    """Under xdist a policy mistake is the same usage error, raised before workers start."""
    pytest.importorskip("xdist")
    make_dataset(pytester.path, copies=0, policy=POLICY + "pairs: {compare: [train~tset]}\n")
    result = pytester.runpytest_subprocess("--leakcheck", "-n", "2", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: leakcheck: *unknown split 'tset'*"])


def test_item_text_is_the_cli_text(pytester: pytest.Pytester, leaky: Path) -> None:
    """The item's failure text is the text renderer's output for its findings."""
    from pytest_leakcheck import check

    expected = render(check(leaky / "leakcheck.yaml", use_cache=False), "text")
    body = expected.rsplit("leakcheck: ", 1)[0]
    result = pytester.runpytest("--leakcheck")
    assert body.strip() in result.stdout.str()


def test_policy_above_the_rootdir_gets_a_relative_node_id(pytester: pytest.Pytester, clean: Path) -> None:
    """A policy found in a parent of the rootdir is named by its relative path."""
    sub = pytester.mkdir("project")
    (sub / "pytest.ini").write_text("[pytest]\n")
    result = pytester.runpytest(sub, "--rootdir", str(sub), "-c", str(sub / "pytest.ini"),
                                "--leakcheck", "--co", "-q")
    result.stdout.fnmatch_lines(["../leakcheck.yaml::train~test", "../leakcheck.yaml::files"])


def test_findings_in_the_baseline_do_not_fail(pytester: pytest.Pytester, leaky: Path) -> None:
    """After `leakcheck baseline`, the known leak no longer fails its item; a new one does."""
    from pytest_leakcheck.cli import main

    assert main(["baseline", "--policy", str(leaky / "leakcheck.yaml")]) == 0
    pytester.runpytest("--leakcheck").assert_outcomes(passed=3)
    shutil.copyfile(leaky / "train/img_1.jpg", leaky / "test/copy_new.jpg")
    result = pytester.runpytest("--leakcheck")
    result.assert_outcomes(failed=1, passed=2)
    result.stdout.fnmatch_lines(["    test/copy_new.jpg  (test)   linked by identical-file to train/img_1.jpg"])
    assert "copy_0.jpg" not in result.stdout.str().split("= FAILURES =")[1].split("= leakcheck =")[0]
