"""SARIF, Markdown summary and annotation renderers, the render and fingerprint subcommands."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest

from pytest_leakcheck import EXIT_CLEAN
from pytest_leakcheck.cli import main
from pytest_leakcheck.pipeline.run import check
from pytest_leakcheck.report.model import Finding, Member, Report, load_report
from pytest_leakcheck.render import render
from pytest_leakcheck.render.annotations import MAX_PER_TYPE, escape_property

DATA = Path(__file__).parent.parent / "data"


@pytest.fixture(scope="module")
def sarif_schema() -> dict:
    return json.loads((DATA / "sarif-schema-2.1.0.json").read_text())


def _leak(n: int, path: str = "test/x.jpg", severity: str = "error", status: str = "new") -> Finding:
    members = (Member(f"train/{n}.jpg", "train", "ab"), Member(path, "test", "cd"))
    return Finding(id=f"{n:012d}", kind="near-duplicate", severity=severity, members=members,
                   evidence={"phash_distance": 2}, status=status)


@pytest.mark.slow
def test_sarif_of_a_real_report_validates(leaky_dataset: Path, sarif_schema: dict) -> None:
    """Every kind the leaky dataset produces renders as schema-valid SARIF, one result per finding."""
    report = check(leaky_dataset / "leakcheck.yaml", use_cache=False)
    report = replace(report, findings=(*report.findings, Finding(
        id="f" * 12, kind="unreadable-image", severity="warning",
        members=(Member("test/bad file,1.jpg", "test"),), message="zero-byte file")))
    sarif = json.loads(render(report, "sarif", prefix="data/"))
    jsonschema.validate(sarif, sarif_schema)
    results = sarif["runs"][0]["results"]
    assert len(results) == len(report.findings)
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results]
    assert all(u.startswith("data/test/") for u in uris)
    assert "data/test/bad%20file%2C1.jpg" in uris
    rules = [r["id"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]]
    assert all(rules[r["ruleIndex"]] == r["ruleId"] for r in results)


def test_sarif_marks_existing_findings_unchanged(sarif_schema: dict) -> None:
    """baselineState tells code scanning which results the pull request brought."""
    report = Report("p", (_leak(1), _leak(2, status="existing")))
    sarif = json.loads(render(report, "sarif"))
    jsonschema.validate(sarif, sarif_schema)
    assert [r["baselineState"] for r in sarif["runs"][0]["results"]] == ["new", "unchanged"]


def test_annotations_escape_and_cap_per_type() -> None:
    """At most 10 per type, new first; `%`, newlines, `:` and `,` are escaped in properties."""
    odd = "test/a,b:c%d.jpg"
    found = [_leak(i, status="existing") for i in range(12)] + [_leak(99, odd)]
    found += [_leak(100 + i, severity="warning") for i in range(3)]
    lines = render(Report("p", tuple(found)), "annotations", prefix="ds/").splitlines()
    errors = [x for x in lines if x.startswith("::error ")]
    assert len(errors) == MAX_PER_TYPE
    assert len([x for x in lines if x.startswith("::warning ")]) == 3
    assert errors[0].startswith("::error file=ds/test/a%2Cb%3Ac%25d.jpg,title=leakcheck near-duplicate::")
    assert "test/a,b:c%25d.jpg" in errors[0].split("::", 2)[2]  # the message keeps : and ,
    assert escape_property("a\r\nb%") == "a\\r\\nb%25"  # display() first: no control character travels


def test_markdown_stays_under_the_size_limit() -> None:
    """A huge report is cut before the limit, with a note that points at the artifact."""
    report = Report("p", tuple(_leak(i, f"test/{'long' * 50}_{i}.jpg") for i in range(400)))
    text = render(report, "markdown", blob_url="https://github.com/o/r/blob/abc", max_findings=0,
                  max_bytes=20_000)
    assert len(text.encode()) <= 20_000
    assert "to stay under GitHub's summary size limit" in text
    assert "| near-duplicate | 400 | 0 |" in text
    assert text.count("<img ") >= 2


def test_markdown_escapes_and_skips_thumbnails_without_a_url() -> None:
    """Paths are Markdown-escaped (escape.markdown); no blob URL means no thumbnails."""
    report = Report("p", (_leak(1, "test/<b>|x.jpg"),))
    text = render(report, "markdown")
    assert "<img" not in text and "<b>" not in text and "\\<b\\>\\|x" in text


@pytest.mark.slow
def test_render_subcommand_round_trips_a_saved_report(leaky_dataset: Path, tmp_path: Path, capsys) -> None:
    """`leakcheck render` of a saved JSON report gives what `check` would have printed."""
    policy = str(leaky_dataset / "leakcheck.yaml")
    saved = tmp_path / "r.json"
    main(["check", "--policy", policy, "--format", "json", "-o", str(saved), "--no-cache"])
    capsys.readouterr()
    assert load_report(saved).findings == check(policy, use_cache=False).findings
    assert main(["render", str(saved), "--format", "text"]) == EXIT_CLEAN
    assert "ERROR identical-file" in capsys.readouterr().out


def test_render_rejects_a_file_that_is_not_a_report(tmp_path: Path, capsys) -> None:
    """Exit 2 with a message naming the file and how to make a report."""
    bad = tmp_path / "x.json"
    bad.write_text("{}")
    assert main(["render", str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "--format json" in err


def test_fingerprint_follows_signature_parameters_only(make_policy, capsys) -> None:
    """Thresholds keep the cache key; the hash size changes it."""
    def fp(text: str) -> str:
        path = make_policy(text)
        main(["fingerprint", "--policy", str(path)])
        return capsys.readouterr().out.strip()

    head = "version: 1\nsplits: {train: [train/**], test: [test/**]}\n"
    base = fp(head)
    assert fp(head + "detectors: {phash: {max_distance: 4}}\n") == base
    assert fp(head + "detectors: {phash: {bits: 256}}\n") != base
    assert len(base) == 16
