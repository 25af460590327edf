"""same-scene: other shots of one scene, found by ORB keypoints (real OpenCV) and a homography."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pytest_leakcheck import check
from pytest_leakcheck.detectors import same_scene
from pytest_leakcheck.detectors.same_scene import features, find
from pytest_leakcheck.errors import PolicyError
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.render import render
from pytest_leakcheck.testing import brighter, photo, save, scene, view

ON = "version: 1\nsplits: {train: [train/**], test: [test/**]}\ndetectors:\n  same_scene: {severity: error}\n"


@pytest.fixture(scope="module")
def reshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two shots of one scene (a step aside, other light) across splits, and unrelated photos."""
    root = tmp_path_factory.mktemp("reshots")
    place = scene(42)
    save(view(place, 40, 30), root / "train/shot_1.jpg", quality=90)
    save(brighter(view(place, 120, 70, tilt=40), 1.2), root / "test/shot_2.jpg", quality=85)
    for k in range(6):
        save(scene(100 + k).resize((640, 480)), root / f"{'test' if k % 3 == 0 else 'train'}/other_{k}.jpg",
             quality=90)
    (root / "leakcheck.yaml").write_text(ON)
    return root


def _scene_pairs(report) -> set[frozenset[str]]:
    return {frozenset((p.a, p.b)) for f in report.findings for p in f.pairs if p.detector == "same-scene"}


def test_a_reshot_is_linked_and_nothing_else(reshots: Path) -> None:
    report = check(reshots / "leakcheck.yaml", use_cache=False)
    assert _scene_pairs(report) == {frozenset(("train/shot_1.jpg", "test/shot_2.jpg"))}
    finding = next(f for f in report.findings if f.kind == "same-scene")
    assert finding.severity == "error" and finding.evidence["scene_inliers"] >= 15
    stats = report.stats["same_scene"]
    assert stats["images"] == 8 and stats["skipped"] == 0
    assert stats["threshold"] >= same_scene.SceneSettings().min_inliers
    assert stats["points"][0]["points"] and all(0 <= v <= 1 for p in stats["points"][0]["points"] for v in p)


def test_the_report_carries_points_of_the_strongest_matches_only(reshots: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A fixed camera's thousands of matches would fill the report with points: the strongest
    ``REPORTED_POINTS`` keep them."""
    import shutil

    root = tmp_path / "data"
    shutil.copytree(reshots, root)
    place = scene(42)
    save(view(place, 60, 40), root / "test/shot_3.jpg", quality=88)  # a second, closer re-shot
    full = check(root / "leakcheck.yaml", use_cache=False).stats["same_scene"]["points"]
    assert len(full) >= 2
    monkeypatch.setattr(find, "REPORTED_POINTS", 1)
    kept = check(root / "leakcheck.yaml", use_cache=False).stats["same_scene"]["points"]
    assert len(kept) == 1
    scores = {frozenset((p.a, p.b)): p.value for f in check(root / "leakcheck.yaml", use_cache=False).findings
              for p in f.pairs if p.detector == "same-scene"}
    assert scores[frozenset((kept[0]["a"], kept[0]["b"]))] == max(scores.values())


def test_a_reshot_inside_one_split_is_no_finding(reshots: Path, tmp_path: Path) -> None:
    """Same-scene compares different splits only: bursts inside train leak nothing."""
    import shutil

    root = tmp_path / "data"
    shutil.copytree(reshots, root)
    (root / "test/shot_2.jpg").rename(root / "train/shot_2.jpg")
    report = check(root / "leakcheck.yaml", use_cache=False)
    assert _scene_pairs(report) == set()
    assert report.stats["same_scene"]["images"] == 8  # searched, across splits, and nothing found


def test_the_page_draws_the_matched_points(reshots: Path) -> None:
    report = check(reshots / "leakcheck.yaml", use_cache=False)
    page = render(report, "html", root=reshots)
    assert '<svg class="points"' in page and 'aria-label="matched points"' in page and "<line " in page


def test_it_is_on_at_warning_when_the_policy_does_not_name_it(reshots: Path, tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "data"
    shutil.copytree(reshots, root)
    (root / "leakcheck.yaml").write_text("version: 1\nsplits: {train: [train/**], test: [test/**]}\n")
    assert load(root / "leakcheck.yaml").detectors.of(same_scene.DETECTOR).severity == "warning"
    report = check(root / "leakcheck.yaml", use_cache=False)
    assert _scene_pairs(report) == {frozenset(("train/shot_1.jpg", "test/shot_2.jpg"))}
    assert {f.severity for f in report.findings if f.kind == "same-scene"} == {"warning"}


def test_small_images_never_reach_the_keypoint_search(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CIFAR-sized images (32 px) take the small draft and leave the 6-byte head: no ORB, no second decode."""
    def refuse(*args, **kwargs):
        raise AssertionError("keypoints sought in an image under MIN_SIDE")

    monkeypatch.setattr(features, "extract", refuse)
    monkeypatch.setattr(find, "detail_grey", refuse)
    for k in range(6):
        save(photo(k, (32, 32)), tmp_path / f"{'test' if k < 2 else 'train'}/{k}.png")
    (tmp_path / "leakcheck.yaml").write_text("version: 1\nsplits: {train: [train/**], test: [test/**]}\n")
    report = check(tmp_path / "leakcheck.yaml", use_cache=False, jobs=1)
    assert report.stats["same_scene"] == {"images": 0, "skipped": 6}


def test_images_too_small_for_keypoints_are_skipped(tmp_path: Path) -> None:
    for k in range(4):
        save(photo(k, (80, 60)), tmp_path / f"{'test' if k == 0 else 'train'}/{k}.jpg", quality=90)
    (tmp_path / "leakcheck.yaml").write_text(ON)
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    assert report.stats["same_scene"] == {"images": 0, "skipped": 4}
    # Not examined is said, by default: "checked: same-scene" alone would read as if they were searched.
    text = render(report, "text")
    assert "note: same-scene searched 0 of 4 images" in text and f"under {features.MIN_SIDE} px" in text


def test_small_crops_of_one_scene_are_linked_across_splits(tmp_path: Path) -> None:
    """150 px crops (coins cut from phone photos) are enlarged for the keypoint search: a crop of a
    scene shot again, a step aside, is found; crops of other scenes are not linked."""
    place = scene(7, (600, 450), (3, 3))
    save(view(place, 20, 15, size=(150, 150), extent=(300, 300)), tmp_path / "train/a.jpg", quality=90)
    save(view(place, 50, 30, tilt=10, size=(150, 150), extent=(300, 300)), tmp_path / "test/a.jpg", quality=90)
    for k in range(6):
        other = scene(200 + k, (600, 450), (3, 3))
        save(view(other, 20, 15, size=(150, 150), extent=(300, 300)),
             tmp_path / f"{'test' if k % 3 == 0 else 'train'}/other_{k}.jpg", quality=90)
    (tmp_path / "leakcheck.yaml").write_text(ON)
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    assert report.stats["same_scene"]["images"] == 8
    assert _scene_pairs(report) == {frozenset(("train/a.jpg", "test/a.jpg"))}


def test_rows_are_compact_and_keep_only_what_was_found() -> None:
    grey = np.asarray(scene(7).convert("L").resize((256, 194)))
    row = features.extract(grey)
    n = int(np.frombuffer(row[:2], "<u2")[0])
    assert 24 <= n <= features.FEATURES and len(row) == features.HEAD + 36 * n
    assert len(features.extract(np.full((194, 256), 128, np.uint8))) == features.HEAD  # flat: no keypoints
    feats = features.parse([row, row], np.array([0, 1]), 2)
    assert features.verify(feats, 0, 1)[0] >= n // 2  # an image matches itself
    assert features.verify(feats, 0, 1, impostor=True)[0] < 12  # without its geometry, chance only


def test_levels_fall_back_to_the_floor_when_the_sample_is_small() -> None:
    det = same_scene.SceneSettings()
    small = find.levels(np.array([3, 5, 7]), det)
    assert small["threshold"] == det.min_inliers and small["error_threshold"] == det.min_inliers + 3
    assert small["too_few_for_rate"] and small["floor"]
    big = find.levels(np.r_[np.zeros(30_000, int), np.full(30, 20)], det)  # 10 per 10k at 20 inliers
    assert big["threshold"] == 21 and not big["too_few_for_rate"]


def test_a_focused_check_reuses_the_calibration(reshots: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    root = tmp_path / "data"
    shutil.copytree(reshots, root)
    check(root / "leakcheck.yaml")
    save(view(scene(42), 60, 40, tilt=20), root / "test/shot_3.jpg", quality=88)

    def refuse(*args, **kwargs):
        raise AssertionError("calibrated again on an incremental check")

    monkeypatch.setattr(features, "impostors", refuse)
    report = check(root / "leakcheck.yaml")
    assert frozenset(("train/shot_1.jpg", "test/shot_3.jpg")) in _scene_pairs(report) or \
        frozenset(("test/shot_2.jpg", "test/shot_3.jpg")) in _scene_pairs(report)


def test_section_is_validated(tmp_path: Path) -> None:
    (tmp_path / "leakcheck.yaml").write_text(ON.replace("{severity: error}", "{severity: error, min_inliers: 3}"))
    with pytest.raises(PolicyError, match="min_inliers"):
        load(tmp_path / "leakcheck.yaml")


def test_loading_a_policy_does_not_import_opencv(reshots: Path) -> None:
    code = (f"import sys; from pytest_leakcheck.policy.load import load; load({str(reshots / 'leakcheck.yaml')!r}); "
            "import pytest_leakcheck.detectors; print('cv2' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_verifying_in_worker_processes_gives_the_report_of_verifying_inline(
        reshots: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The background path (forked workers verify the calibration's impostors, then the pairs while
    aligned searches) changes nothing."""
    from pytest_leakcheck.report.model import report_dict
    from pytest_leakcheck.signals.pool import Running

    started = []

    class Counted(Running):
        def __init__(self, *args, **kwargs) -> None:
            started.append(args[1])
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(find, "Running", Counted)
    monkeypatch.setattr(find, "BACKGROUND_FROM", 10**9)
    inline = report_dict(check(reshots / "leakcheck.yaml", use_cache=False, jobs=2))
    assert not started
    monkeypatch.setattr(find, "BACKGROUND_FROM", 1)
    background = report_dict(check(reshots / "leakcheck.yaml", use_cache=False, jobs=2))
    # The calibration's impostor pairs went to the workers, then the candidate pairs.
    assert len(started) == 2 and all(len(items) >= 4 for items in started), [len(i) for i in started]
    for report in (inline, background):  # times and when the levels were estimated: the clock, not the search
        report["stats"] = {k: v for k, v in report["stats"].items() if not k.startswith("seconds")}
        report["stats"]["aligned"] = {k: v for k, v in report["stats"]["aligned"].items() if not k.endswith("_at")}
    assert background == inline
    assert any(p["detector"] == "same-scene" for f in background["findings"] for p in f["pairs"])


def test_a_sigterm_while_workers_verify_stops_them_and_exits_143(reshots: Path, tmp_path: Path) -> None:
    """Workers left verifying while the next detector searches are killed when the check stops."""
    import shutil
    import time

    root = tmp_path / "data"
    shutil.copytree(reshots, root)
    pids = tmp_path / "pids"
    code = f"""
import os, signal, sys, threading, time
from pytest_leakcheck.detectors.same_scene import find
from pytest_leakcheck.signals import pool
find.BACKGROUND_FROM = 1
real = find._verify_shared
def slow(pair):  # the workers are forked after this is set: they verify for a minute
    time.sleep(60)
    return real(pair)
find._verify_shared = slow
start = pool.Running.__init__
def started(self, *a, **k):
    start(self, *a, **k)
    if a[0] is not slow:  # the calibration's impostors, verified and waited for before the pairs
        return
    open({str(pids)!r}, "w").write(" ".join(str(p.pid) for p, _ in self.workers))
    threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()
pool.Running.__init__ = started
from pytest_leakcheck.detectors import aligned
search = aligned.Aligned.find
def searching(self, run, settings):  # the SIGTERM comes while aligned searches, the workers busy
    time.sleep(5)
    return search(self, run, settings)
aligned.Aligned.find = searching
from pytest_leakcheck.cli import main
rc = main(["check", "--policy", {str(root / "leakcheck.yaml")!r}, "--jobs", "2"])
# Before this process exits (its exit would end daemonic children anyway): are they gone?
def alive(pid):
    try:
        return "State:\tZ" not in open(f"/proc/{{pid}}/status").read()  # a zombie is dead
    except FileNotFoundError:
        return False
workers = [int(p) for p in open({str(pids)!r}).read().split()]
print("alive", sum(alive(p) for p in workers), len(workers))
sys.exit(rc)
"""
    t = time.monotonic()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 143 and "terminated" in out.stderr, out.stderr
    assert time.monotonic() - t < 30  # it did not wait for the workers' minute
    assert out.stdout.split()[-3:] == ["alive", "0", "2"], out.stdout


def test_a_warm_check_says_what_same_scene_did_not_search(tmp_path: Path) -> None:
    """The note on images too small for keypoints is the same on a warm run as on a cold one
    (held out: 32 px GTSRB signs lost it once their signatures came from the store)."""
    for k in range(4):
        save(photo(k, (32, 32)), tmp_path / f"{'test' if k == 0 else 'train'}/{k}.png")
    (tmp_path / "leakcheck.yaml").write_text(ON)
    cold = check(tmp_path / "leakcheck.yaml", jobs=1)
    warm = check(tmp_path / "leakcheck.yaml", jobs=1)
    assert cold.stats["same_scene"] == warm.stats["same_scene"] == {"images": 0, "skipped": 4}
    assert "note: same-scene searched 0 of 4 images" in render(warm, "text")


def test_thin_strips_are_checked_not_called_corrupt(tmp_path: Path) -> None:
    """A 2000x8 banner is an image like any other: ORB's pyramid would shrink it to nothing and the
    file was once reported as corrupt (held out: a web-scraped logo set)."""
    from PIL import Image

    rng = np.random.default_rng(0)
    save(Image.fromarray(rng.integers(0, 255, (8, 2000, 3), np.uint8)), tmp_path / "test/strip.png")
    save(Image.fromarray(rng.integers(0, 255, (3000, 8, 3), np.uint8)), tmp_path / "test/tall.png")
    save(photo(3, (640, 480)), tmp_path / "train/a.jpg")
    (tmp_path / "leakcheck.yaml").write_text(ON)
    report = check(tmp_path / "leakcheck.yaml", use_cache=False, jobs=1)
    assert [f for f in report.findings if f.kind == "unreadable-image"] == []
    assert report.stats["same_scene"]["images"] + report.stats["same_scene"]["skipped"] == 3
