"""The text report people act on (issue 37): a summary line under 200 characters that says what
failed and what to do, calibration details only under --verbose, and every error finding shown."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_leakcheck.files import lfs
from pytest_leakcheck.render import render
from pytest_leakcheck.report.model import Finding, Member, Report, finding_id

#: A calibration as the aligned and same-scene detectors record it in ``stats``.
STATS = {
    "files": 289, "decoded": 289, "reused": 0, "seconds": 71.9,
    "checked": {"identical-file": [], "identical-pixels": [], "phash": ["identity", "hflip"],
                "thumbnail": ["identity", "hflip"], "aligned": ["identity", "hflip"], "same-scene": []},
    "not_searched": ["vflip", "rot90", "rot180", "rot270", "transpose", "transverse"],
    "aligned": {"threshold": 0.7123, "error_threshold": 0.7811, "false_alarms_per_10k": 0.0,
                "asked_false_alarms_per_10k": 5.0, "calibrated_on": 289, "resolution_per_10k": 34.6,
                "small_sample": True, "images": 289, "error_false_alarms_per_10k": 2.0},
    "same_scene": {"threshold": 24, "error_threshold": 48, "calibrated_on": 289, "too_few_for_rate": True},
}


def _copy(k: int, kind: str = "near-duplicate", severity: str = "error") -> Finding:
    members = (Member(f"train/img_{k:04d}.jpg", "train", f"{k:064x}"),
               Member(f"test/img_{k:04d}.jpg", "test", f"{k + 10_000:064x}"))
    return Finding(id=finding_id(kind, [m.digest for m in members]), kind=kind, severity=severity,
                   members=members, evidence={"phash_distance": 3.0})


def _report(errors: int, warnings: int = 0, kinds: tuple[str, ...] = ("near-duplicate",)) -> Report:
    found = [_copy(k, kinds[k % len(kinds)]) for k in range(errors)]
    found += [_copy(10_000 + k, "same-scene", "warning") for k in range(warnings)]
    return Report(policy_path="leakcheck.yaml", findings=tuple(found), stats=json.loads(json.dumps(STATS)))


def _summary(text: str) -> str:
    (line,) = [ln for ln in text.splitlines() if ln.startswith("leakcheck:") and "details:" not in ln]
    return line


def test_the_summary_line_says_what_failed_and_what_to_do_in_under_200_characters() -> None:
    line = _summary(render(_report(3, 2), "text"))
    assert len(line) < 200, line
    assert line.startswith("leakcheck: 3 errors, 2 warnings in 289 images")
    assert "failed: near-duplicate 3" in line and "leakcheck split" in line
    assert "threshold" not in line and "checked:" not in line


def test_copies_and_groups_failing_together_get_one_fix() -> None:
    line = _summary(render(_report(4, 0, ("near-duplicate", "group-split")), "text"))
    assert "failed: near-duplicate 2, group-split 2" in line
    assert "fix: keep each cluster of copies and each group in one split" in line and len(line) < 200


def test_a_summary_of_many_kinds_still_fits() -> None:
    kinds = ("identical-file", "near-duplicate", "same-scene", "group-split", "unreadable-image",
             "missing-file", "unassigned-file", "outside-root", "ambiguous-file", "split-share")
    line = _summary(render(_report(40, 5, kinds), "text"))
    assert len(line) < 200, line
    assert line.startswith("leakcheck: 40 errors, 5 warnings")


def test_calibration_and_what_was_searched_are_under_verbose() -> None:
    report = _report(1)
    plain, verbose = render(report, "text"), render(report, "text", verbose=True)
    assert "aligned threshold 0.712" not in plain and "not searched" not in plain
    (details,) = [ln for ln in verbose.splitlines() if ln.startswith("leakcheck: details:")]
    assert "aligned threshold 0.712" in details and "same-scene 24/48 inliers" in details
    assert "not searched: copies after vflip" in details and "checked: identical-file" in details


def test_every_error_finding_is_shown_past_max_findings() -> None:
    """120 errors and 30 warnings with the default 50 in full: the other 70 errors each get a line
    with their id; the warnings past the limit are counted, with how to see them."""
    report = _report(120, 30)
    text = render(report, "text")
    for f in report.errors:
        assert f.id in text
    assert "70 more errors" in text
    assert "30 more warnings" in text and "--max-findings 0" in text


def test_a_cluster_shows_its_held_out_member_however_many_train_copies_come_first() -> None:
    """Four augmented train versions, then the test image: the one line and the full listing
    (which stop at 4 and 10 members) both show the test image, the leak a reviewer must see."""
    from pytest_leakcheck.render._common import headline

    members = (*(Member(f"train/img_{k:02d}.jpg", "train", f"{k:064x}") for k in range(12)),
               Member("test/held_out.jpg", "test", f"{99:064x}"))
    f = Finding(id=finding_id("near-duplicate", [m.digest for m in members]), kind="near-duplicate",
                severity="error", members=members, evidence={"phash_distance": 3.0})
    line = headline(f)
    assert "test/held_out.jpg (test)" in line and "and 9 more" in line
    assert line.index("train/img_00.jpg") < line.index("test/held_out.jpg")  # report order kept
    text = render(Report(policy_path="leakcheck.yaml", findings=(f,), stats=json.loads(json.dumps(STATS))), "text")
    assert "test/held_out.jpg" in text and "... and 3 more files in this cluster" in text


def _pointer(k: int) -> Finding:
    member = (Member(f"train/field/field{k:02d}.tif", "train", f"{k:064x}"),)
    return Finding(id=finding_id("unreadable-image", [member[0].digest]), kind="unreadable-image",
                   severity="error", members=member, message=lfs.why("image"))


def test_a_clone_without_git_lfs_is_told_to_pull_not_to_replace_damaged_files() -> None:
    """Held-out probe (issue 37): a UC Merced copy cloned without git-lfs is 2,100 pointer files; the
    summary said "see the Fix lines below" and the Fix line "replace or delete the damaged file"."""
    report = Report(policy_path="leakcheck.yaml", findings=tuple(_pointer(k) for k in range(3)),
                    stats=json.loads(json.dumps(STATS)))
    text = render(report, "text")
    line = _summary(text)
    assert "git lfs pull" in line and len(line) < 200, line
    (fix,) = [ln for ln in text.splitlines() if ln.startswith("Fix (unreadable-image)")]
    assert "git lfs pull" in fix and "damaged" not in fix


def test_damaged_files_beside_pointers_keep_the_general_fix() -> None:
    damaged = Finding(id=finding_id("unreadable-image", ["f" * 64]), kind="unreadable-image", severity="error",
                      members=(Member("test/broken.jpg", "test", "f" * 64),), message="truncated image")
    report = Report(policy_path="leakcheck.yaml", findings=(_pointer(1), damaged), stats=json.loads(json.dumps(STATS)))
    (fix,) = [ln for ln in render(report, "text").splitlines() if ln.startswith("Fix (unreadable-image)")]
    assert "replace or delete the damaged file" in fix and "git lfs pull" in fix


def test_many_git_lfs_pointers_are_one_block_naming_a_few_and_counting_the_rest() -> None:
    """Held-out probe (issue 37): 2,100 pointers printed 2,256 lines that all said the same thing."""
    damaged = Finding(id=finding_id("unreadable-image", ["f" * 64]), kind="unreadable-image", severity="error",
                      members=(Member("test/broken.jpg", "test", "f" * 64),), message="truncated image")
    report = Report(policy_path="leakcheck.yaml", findings=(*(_pointer(k) for k in range(40)), damaged),
                    stats=json.loads(json.dumps(STATS)))
    lines = render(report, "text").splitlines()
    assert sum("train/field/field" in ln for ln in lines) == 5
    assert any("40 files are Git LFS pointers" in ln for ln in lines)
    assert any("... and 35 more" in ln for ln in lines)
    assert any("test/broken.jpg" in ln for ln in lines)  # a damaged file keeps its own finding
    every = render(report, "text", max_findings=0).splitlines()
    assert sum("train/field/field" in ln for ln in every) == 40  # asked for all: one finding per file
