"""The aligned near-duplicate detector: finds what hashes miss, calibrated, cached, incremental."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pytest_leakcheck import check
from pytest_leakcheck.detectors import _align, aligned
from pytest_leakcheck.errors import PolicyError
from pytest_leakcheck.policy import load
from pytest_leakcheck.render.text import render as render_text
from pytest_leakcheck.store import open_store
from pytest_leakcheck.testing import photo, save

from .conftest import POLICY, expected_leaks, write_policy
from .test_detection import _leak_pairs

ALIGNED = POLICY + "detectors:\n  aligned: {severity: error}\n"


def _disguised(img: Image.Image) -> Image.Image:
    """Cropped off-centre, zoomed back up and tinted: a hard copy for hashes."""
    w, h = img.size
    crop = img.crop((int(w * 0.12), int(h * 0.02), w, int(h * 0.9))).resize((w, h), Image.Resampling.BICUBIC)
    tinted = np.asarray(crop, np.float32) * np.array([1.2, 0.9, 0.7], np.float32) + 10
    return Image.fromarray(np.clip(tinted, 0, 255).astype(np.uint8))


@pytest.fixture
def disguised(tmp_path: Path) -> Path:
    """30 distinct train images, 6 distinct test images and one disguised copy of train/img_003."""
    for i in range(30):
        save(photo(i), tmp_path / f"train/img_{i:03d}.jpg", quality=92)
    for i in range(6):
        save(photo(2000 + i), tmp_path / f"test/distinct_{i}.jpg", quality=92)
    save(_disguised(photo(3)), tmp_path / "test/disguised.jpg", quality=90)
    return tmp_path


def test_planted_copies_found_and_no_distinct_pair(leaky_dataset: Path) -> None:
    """With aligned on, every planted copy is still found and no distinct pair is flagged."""
    write_policy(leaky_dataset, ALIGNED)
    report = check(leaky_dataset / "leakcheck.yaml", use_cache=False)
    planted = {tuple(sorted(p)) for p in expected_leaks().items()}
    assert _leak_pairs(report) == planted
    assert report.stats["aligned"]["calibrated_on"] > 0


def test_disguised_copy_found_only_by_aligned(disguised: Path) -> None:
    """A shifted, zoomed, recoloured copy escapes the hash detectors but not aligned."""
    pair = ("test/disguised.jpg", "train/img_003.jpg")
    write_policy(disguised, POLICY)
    assert pair not in _leak_pairs(check(disguised / "leakcheck.yaml", use_cache=False))
    write_policy(disguised, ALIGNED)
    report = check(disguised / "leakcheck.yaml", use_cache=False)
    assert _leak_pairs(report) == {pair}
    (finding,) = report.findings
    assert finding.kind == "near-duplicate" and finding.pairs[0].detector == "aligned"
    assert finding.evidence["aligned_score"] >= report.stats["aligned"]["threshold"]
    text = render_text(report)
    assert "aligned score" in text and f"aligned threshold {report.stats['aligned']['threshold']:.3f}" in text


def test_calibration_hits_requested_rate() -> None:
    """The threshold lets through the requested share of impostor scores, never below the floor."""
    scores = np.random.default_rng(1).normal(0.5, 0.05, 200_000)
    for per_10k in (20, 50, 400):
        rate = (scores >= _align.calibrate(scores, per_10k)).mean() * 1e4
        assert abs(rate - per_10k) < 0.15 * per_10k
    assert _align.calibrate(np.full(100, 0.1), 50) == _align.MIN_THRESHOLD


def test_focus_verifies_only_focus_rows(disguised: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A focus check reuses the stored threshold and verifies only the focus file's candidates."""
    write_policy(disguised, ALIGNED)
    full = check(disguised / "leakcheck.yaml")
    verified: list[int] = []
    real = aligned.verify

    def counted(q, *args, **kwargs):
        verified.append(len(q.grey))
        return real(q, *args, **kwargs)

    monkeypatch.setattr(aligned, "verify", counted)
    focus = check(disguised / "leakcheck.yaml", focus=["test/disguised.jpg"])
    assert verified and set(verified) == {1}
    assert focus.stats["aligned"] == full.stats["aligned"]
    assert {m.path for f in focus.findings for m in f.members} == {"test/disguised.jpg", "train/img_003.jpg"}


def test_descriptors_cached(disguised: Path) -> None:
    """Descriptors are stored: a second run decodes nothing and finds the same."""
    write_policy(disguised, ALIGNED)
    first = check(disguised / "leakcheck.yaml")
    with open_store(disguised / ".leakcheck/cache.sqlite") as store:
        rows = store.conn.execute("SELECT COUNT(*) FROM signatures WHERE family = 'desc'").fetchone()[0]
    assert rows == first.stats["files"]
    second = check(disguised / "leakcheck.yaml")
    assert second.stats["decoded"] == 0
    assert [f.id for f in second.findings] == [f.id for f in first.findings] != []


@pytest.mark.parametrize(
    "body, key",
    [
        ("aligned: {severity: loud}", "detectors.aligned.severity"),
        ("aligned: {false_alarms_per_10k: 0}", "detectors.aligned.false_alarms_per_10k"),
        ("aligned: {candidates: 0}", "detectors.aligned.candidates"),
        ("aligned: {candidate: 8}", "detectors.aligned.candidate"),
    ],
)
def test_policy_errors(tmp_path: Path, body: str, key: str) -> None:
    """Bad aligned settings name the key."""
    path = write_policy(tmp_path, POLICY + "detectors:\n  " + body + "\n")
    with pytest.raises(PolicyError) as err:
        load(path)
    assert err.value.key == key


def test_off_by_default_computes_no_descriptors(tmp_path: Path) -> None:
    """The default policy leaves aligned off and adds no descriptor families."""
    from pytest_leakcheck.detectors import families

    policy = load(write_policy(tmp_path, POLICY))
    assert policy.detectors.aligned.severity == "off"
    assert "desc" not in [f.name for f in families(policy)]


def test_hash_hits_that_do_not_line_up_are_dropped(leaky_dataset: Path) -> None:
    """With aligned on, a hash match between two distinct images is dropped, a real copy kept."""
    from pytest_leakcheck.inventory import scan
    from pytest_leakcheck.kernels import Match
    from pytest_leakcheck.search import new_run
    from pytest_leakcheck.signatures import compute

    write_policy(leaky_dataset, ALIGNED)
    policy = load(leaky_dataset / "leakcheck.yaml")
    inv = scan(policy)
    with open_store(None) as store:
        sigs = compute(inv.records, policy, store, jobs=1)
        run = new_run(inv, sigs, policy, store, jobs=1)
    run.stats["aligned"] = {"threshold": 0.5}
    row = {r.path: i for i, r in enumerate(inv.records)}
    real = Match(row["test/jpeg_q40.jpg"], row["train/img_001.jpg"], "phash", 2.0)
    false = Match(row["test/distinct_03.jpg"], row["train/img_040.jpg"], "phash", 8.0)
    rotated = Match(row["test/distinct_04.jpg"], row["train/img_041.jpg"], "phash", 8.0, "rot90")
    kept = aligned.DETECTOR.refine(run, policy.detectors.aligned, [real, false, rotated])
    # Alignment covers identity and mirror only, so a rotated hit is left to the hash.
    assert kept == [real, rotated]
