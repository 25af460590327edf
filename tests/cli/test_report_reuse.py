"""`leakcheck report --html` after a check reuses its findings (issue 37): from the store while
the files and the policy are unchanged, or from a saved JSON report with --from."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from PIL import Image

from pytest_leakcheck.cli.main import main
from pytest_leakcheck.errors import EXIT_LEAKS
from pytest_leakcheck.pipeline.run import RunOptions, last_or_check
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.report.model import load_report
from pytest_leakcheck.testing import photo, save

POLICY = "version: 1\nsplits:\n  train: [train/**]\n  test: [test/**]\n"


def _leaky(root: Path) -> Path:
    for k in range(6):
        save(photo(300 + k), root / f"train/img_{k}.jpg", quality=90)
    save(photo(350), root / "test/distinct.jpg", quality=90)
    shutil.copyfile(root / "train/img_0.jpg", root / "test/copy.jpg")
    save(photo(301).transpose(Image.Transpose.FLIP_LEFT_RIGHT), root / "test/hflip.jpg", quality=90)
    (root / "leakcheck.yaml").write_text(POLICY)
    return root / "leakcheck.yaml"


def _ids(page: str) -> set[str]:
    return set(re.findall(r'<article [^>]*\bid="f-([0-9a-f]+)"', page))


def test_report_after_a_check_reuses_its_findings_without_decoding_again(tmp_path: Path, capsys) -> None:
    """The report's stats are those of the check before it (which decoded every file): a second
    check would have decoded none.  The page holds the same findings, and the exit code is check's."""
    policy_file = _leaky(tmp_path / "data")
    json_out = tmp_path / "check.json"
    assert main(["check", "--policy", str(policy_file), "-q", "--format", "json", "-o", str(json_out)]) == EXIT_LEAKS
    checked = load_report(json_out)
    assert checked.stats["decoded"] > 0

    found, reused = last_or_check(load(policy_file), RunOptions(jobs=1))
    assert reused
    assert found.stats["decoded"] == checked.stats["decoded"]
    assert [f.id for f in found.findings] == [f.id for f in checked.findings]

    capsys.readouterr()
    html = tmp_path / "review.html"
    assert main(["report", "--html", str(html), "--policy", str(policy_file), "-q"]) == EXIT_LEAKS
    assert "from the findings of the last check" in capsys.readouterr().err
    assert _ids(html.read_text(encoding="utf-8")) == {f.id for f in checked.findings}


def test_a_file_changed_since_the_check_makes_the_report_check_again(tmp_path: Path) -> None:
    """A test image replaced by a copy of a train image after the check: the report sees it."""
    policy_file = _leaky(tmp_path / "data")
    assert main(["check", "--policy", str(policy_file), "-q"]) == EXIT_LEAKS
    data = tmp_path / "data"
    shutil.copyfile(data / "train/img_5.jpg", data / "test/distinct.jpg")
    st = os.stat(data / "test/distinct.jpg")
    os.utime(data / "test/distinct.jpg", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    found, reused = last_or_check(load(policy_file), RunOptions(jobs=1))
    assert not reused
    assert any({m.path for m in f.members} == {"train/img_5.jpg", "test/distinct.jpg"} for f in found.errors)


def test_report_from_a_saved_json_report_needs_no_image(tmp_path: Path, capsys) -> None:
    """--from renders the saved findings: with every image gone, the page still lists them all."""
    policy_file = _leaky(tmp_path / "data")
    json_out = tmp_path / "check.json"
    main(["check", "--policy", str(policy_file), "-q", "--format", "json", "-o", str(json_out)])
    for sub in ("train", "test"):
        shutil.rmtree(tmp_path / "data" / sub)
    html = tmp_path / "review.html"
    code = main(["report", "--html", str(html), "--policy", str(policy_file), "--from", str(json_out)])
    assert code == EXIT_LEAKS
    assert _ids(html.read_text(encoding="utf-8")) == {f.id for f in load_report(json_out).findings}
