"""The aligned near-duplicate detector: finds what hashes miss, calibrated, symmetric, cached, on by default."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageFilter

from pytest_leakcheck import check
from pytest_leakcheck.detectors import aligned
from pytest_leakcheck.detectors.aligned import alignment, descriptors, pairs
from pytest_leakcheck.errors import PolicyError
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.render.text import render as render_text
from pytest_leakcheck.store.db import open_store
from pytest_leakcheck.testing import photo, save

from ...conftest import POLICY, expected_leaks, write_policy
from ..test_detection import _leak_pairs

ALIGNED = POLICY + "detectors:\n  aligned: {severity: error}\n"
HASHES = POLICY + "detectors:\n  aligned: {severity: off}\n"


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


@pytest.mark.slow
def test_planted_copies_found_and_no_distinct_pair(leaky_dataset: Path) -> None:
    """With aligned on, every planted copy is still found and no distinct pair is flagged."""
    write_policy(leaky_dataset, ALIGNED)
    report = check(leaky_dataset / "leakcheck.yaml", use_cache=False)
    planted = {tuple(sorted(p)) for p in expected_leaks().items()}
    assert _leak_pairs(report) == planted
    assert report.stats["aligned"]["calibrated_on"] > 0


@pytest.mark.slow
def test_disguised_copy_found_only_by_aligned(disguised: Path) -> None:
    """A shifted, zoomed, recoloured copy escapes the hash detectors but not aligned."""
    pair = ("test/disguised.jpg", "train/img_003.jpg")
    write_policy(disguised, HASHES)
    assert pair not in _leak_pairs(check(disguised / "leakcheck.yaml", use_cache=False))
    write_policy(disguised, ALIGNED)
    report = check(disguised / "leakcheck.yaml", use_cache=False)
    assert _leak_pairs(report) == {pair}
    (finding,) = report.findings
    assert finding.kind == "near-duplicate" and finding.pairs[0].detector == "aligned"
    assert finding.evidence["aligned_score"] >= report.stats["aligned"]["threshold"]
    text = render_text(report, verbose=True)
    assert "aligned score" in text and f"aligned threshold {report.stats['aligned']['threshold']:.3f}" in text


@pytest.mark.slow
def test_focus_searches_only_around_the_focus(disguised: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A focus check reuses the last full check's calibration and never runs the full search."""
    write_policy(disguised, ALIGNED)
    full = check(disguised / "leakcheck.yaml")
    save(_disguised(photo(5)), disguised / "test/disguised5.jpg", quality=90)

    def refuse(*args, **kwargs):
        raise AssertionError("a focus check ran the full aligned search")

    monkeypatch.setattr(pairs, "search", refuse)
    focus = check(disguised / "leakcheck.yaml", focus=["test/disguised5.jpg"])
    # Which pairs were judged at 96 px is each run's own: a focus check judges those around its files
    # (160 x 120 JPEGs keep a fine square since their draft stops at 80 px).
    own = ("changed_since", "fine_pairs")
    assert {k: v for k, v in focus.stats["aligned"].items() if k not in own} == \
        {k: v for k, v in full.stats["aligned"].items() if k not in own}
    assert {m.path for f in focus.findings for m in f.members} == {"test/disguised5.jpg", "train/img_005.jpg"}


@pytest.mark.slow
def test_warm_check_reuses_matches_until_data_changes(disguised: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Unchanged data: the stored pairs and calibration are reused; a new file is searched alone."""
    write_policy(disguised, ALIGNED)
    first = check(disguised / "leakcheck.yaml")
    calls: list[int] = []
    real, real_focus = pairs.search, pairs.focus_search

    def counted(*args, **kwargs):
        calls.append(-1)
        return real(*args, **kwargs)

    def focused(data, p, focus):
        calls.append(int(focus.sum()))
        return real_focus(data, p, focus)

    monkeypatch.setattr(pairs, "search", counted)
    monkeypatch.setattr(pairs, "focus_search", focused)
    second = check(disguised / "leakcheck.yaml")
    assert not calls
    assert [f.id for f in second.findings] == [f.id for f in first.findings] != []
    assert second.stats["aligned"] == first.stats["aligned"]
    save(photo(4321), disguised / "train/new.jpg", quality=92)
    third = check(disguised / "leakcheck.yaml")
    assert calls == [1]  # the new file, against everything; no full search
    assert third.stats["aligned"]["threshold"] == first.stats["aligned"]["threshold"]
    assert third.stats["aligned"]["changed_since"] == 1


@pytest.mark.slow
def test_verdicts_do_not_depend_on_which_split_a_file_is_in(disguised: Path) -> None:
    """Swapping the split of every file gives the same aligned pairs, scores and levels."""
    def aligned_links(text: str) -> set[tuple[frozenset[str], float, bool]]:
        write_policy(disguised, text)
        report = check(disguised / "leakcheck.yaml", use_cache=False)
        return {(frozenset((p.a, p.b)), round(p.value, 4), p.value >= report.stats["aligned"]["error_threshold"])
                for f in report.findings for p in f.pairs if p.detector == "aligned"}

    swapped = ALIGNED.replace("train: [train/**]\n  test: [test/**]", "train: [test/**]\n  test: [train/**]")
    assert swapped != ALIGNED
    links = aligned_links(ALIGNED)
    assert links and links == aligned_links(swapped)


@pytest.mark.slow
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
        ("aligned: {error_false_alarms_per_10k: 0}", "detectors.aligned.error_false_alarms_per_10k"),
        ("aligned: {candidate: 8}", "detectors.aligned.candidate"),
    ],
)
def test_policy_errors(tmp_path: Path, body: str, key: str) -> None:
    """Bad aligned settings name the key."""
    path = write_policy(tmp_path, POLICY + "detectors:\n  " + body + "\n")
    with pytest.raises(PolicyError) as err:
        load(path)
    assert err.value.key == key


def test_on_by_default_and_in_what_init_writes(tmp_path: Path) -> None:
    """The schema default and the policy `leakcheck init` writes both turn aligned on, with descriptors."""
    from pytest_leakcheck.detectors import families
    from pytest_leakcheck.init.recognise import detect, policy_text

    policy = load(write_policy(tmp_path, POLICY))
    assert policy.detectors.aligned.severity == "error"
    assert "desc" in [f.name for f in families(policy)]
    for split in ("train", "test"):
        save(photo(1 if split == "train" else 2, (64, 48)), tmp_path / split / "a.jpg")
    init = load(write_policy(tmp_path, policy_text(detect(tmp_path))))
    assert init.detectors.aligned == aligned.AlignedSettings()
    off = load(write_policy(tmp_path, HASHES))
    assert "desc" not in [f.name for f in families(off)]


def test_orientations_state_identity_and_mirror_only(tmp_path: Path) -> None:
    """Aligned says what it covers: identity and hflip, never the policy's rotations."""
    policy = load(write_policy(tmp_path, POLICY))
    assert "rot90" in policy.orientations
    assert aligned.DETECTOR.orientations(policy.detectors.aligned, policy) == ("identity", "hflip")


@pytest.mark.slow
def test_hash_hits_that_do_not_line_up_are_dropped(leaky_dataset: Path) -> None:
    """With aligned on, a hash match between two distinct images is dropped, a real copy kept."""
    from pytest_leakcheck.dataset.inventory import scan
    from pytest_leakcheck.search.kernels import Match
    from pytest_leakcheck.pipeline.matches import new_run
    from pytest_leakcheck.pipeline.run import RunOptions
    from pytest_leakcheck.pipeline.signatures import compute

    write_policy(leaky_dataset, ALIGNED)
    policy = load(leaky_dataset / "leakcheck.yaml")
    inv = scan(policy)
    with open_store(None) as store:
        sigs = compute(inv.records, policy, store, RunOptions(jobs=1))
        run = new_run(inv, sigs, policy, store, RunOptions(jobs=1))
        aligned.DETECTOR.find(run, policy.detectors.aligned)  # the calibration refine judges by
        row = {r.path: i for i, r in enumerate(inv.records)}
        real = Match(row["test/jpeg_q40.jpg"], row["train/img_001.jpg"], "phash", 2.0)
        false = Match(row["test/distinct_03.jpg"], row["train/img_040.jpg"], "phash", 8.0)
        rotated = Match(row["test/distinct_04.jpg"], row["train/img_041.jpg"], "phash", 8.0, "rot90")
        # Inside the store's block: refine remembers its scores there.
        kept = aligned.DETECTOR.refine(run, policy.detectors.aligned, [real, false, rotated])
    # A rotated hit is judged too, the first image turned as the hash found it.
    assert kept == [real]


@pytest.mark.slow
def test_pair_verdict_does_not_depend_on_which_file_is_in_which_split(tmp_path: Path) -> None:
    """The original in train and its disguised copy in test, or the other way round: one score, one level.

    (Retrieval used to be one-sided, the test split asking the train split:
    the same pair scored 0.693 one way and 0.722 the other.)"""
    def pair(original: str, copy: str) -> list[tuple[str, float, bool]]:
        root = tmp_path / original.split("/")[0]
        for i in range(30):
            if i != 3:
                save(photo(i), root / f"train/img_{i:03d}.jpg", quality=92)
        for i in range(6):
            save(photo(2000 + i), root / f"test/distinct_{i}.jpg", quality=92)
        save(photo(3), root / original, quality=92)
        save(_disguised(photo(3)), root / copy, quality=90)
        write_policy(root, ALIGNED)
        report = check(root / "leakcheck.yaml", use_cache=False)
        err = report.stats["aligned"]["error_threshold"]
        return [(p.detector, round(p.value, 4), p.value >= err) for f in report.findings for p in f.pairs]

    one = pair("train/img_003.jpg", "test/disguised.jpg")
    assert one and one == pair("test/img_003.jpg", "train/disguised.jpg")


def _grey(img: Image.Image) -> np.ndarray:
    """The cached grey descriptor of an image, as the decode computes it from its 32 px colour square."""
    square = np.asarray(img.convert("RGB").resize((alignment.S, alignment.S), Image.Resampling.BOX))
    return descriptors.describe(square)["grey32"].astype(np.float32)[None]


def _detail_score(query: Image.Image, reference: Image.Image) -> float:
    q, r = _grey(query), _grey(reference)
    tmpl2 = alignment.mirrored_templates(alignment.templates(r, coarse=True))
    return float(alignment.verify(q, np.zeros((1, 1), np.int64), np.zeros((1, 1), bool), alignment.References(r, tmpl2),
                                  always=1)[0, 0])


def _lookalike(img: Image.Image, other: Image.Image) -> Image.Image:
    """``img``'s light and dark (its low frequencies) with ``other``'s detail: the same layout, another picture."""
    def low(im: Image.Image) -> np.ndarray:
        return np.asarray(im.filter(ImageFilter.GaussianBlur(10)), np.float32)

    mixed = low(img) + np.asarray(other, np.float32) - low(other)
    return Image.fromarray(np.clip(mixed, 0, 255).astype(np.uint8))


def test_detail_tells_a_copy_from_a_lookalike() -> None:
    """The verdict is the correlation of detail at the best alignment: a cropped, zoomed, tinted copy
    lines up; a picture with the same layout and other detail does not, though its plain grey
    correlates with the original better than the (unaligned) copy's does."""
    original = photo(3)
    copy, look = _disguised(original), _lookalike(original, photo(7))
    grey = [np.corrcoef(_grey(x).ravel(), _grey(original).ravel())[0, 1] for x in (copy, look)]
    assert grey[1] > 0.75 and grey[1] > grey[0]  # plain grey prefers the lookalike
    assert _detail_score(copy, original) >= 0.85
    assert _detail_score(look, original) < 0.5
    # Both directions: the original is also found in the copy.
    assert _detail_score(original, copy) >= 0.85


def test_fine_alignment_finds_a_shift_the_coarse_search_only_approximates() -> None:
    """A copy moved by 3 px at 32 px: the fine search around the 16 px estimate lands on it exactly."""
    rng = np.random.default_rng(5)
    big = rng.uniform(0, 255, (1, 40, 40)).astype(np.float32)
    ref, moved = big[:, 4:36, 4:36], big[:, 4:36, 7:39]  # ``moved``'s content sits 3 px to the left
    tmpl2 = alignment.mirrored_templates(alignment.templates(ref, coarse=True))
    _, best = alignment.coarse(moved, np.zeros((1, 1), np.int64), tmpl2)
    n = alignment.COARSE_SHIFTS
    score, zoom, shift = alignment.fine(moved, ref, np.zeros(1, bool), best[0] // n * alignment.COARSE_STEP, best[0] % n)
    side = alignment.S - alignment.T + 1
    centre = (alignment.S - alignment.T) // 2
    assert alignment.SCALES[int(zoom[0])] == 1.0
    assert (int(shift[0]) // side, int(shift[0]) % side) == (centre, centre - 3)
    assert score[0] > 0.99


def test_hash_hits_take_the_aligned_levels(monkeypatch: pytest.MonkeyPatch) -> None:
    """A hash or thumbnail hit, in any orientation, is held to aligned's levels: below the warning
    level dropped, below the error level weak, within a split by the within levels; exact copies
    are left as they are, and the rotated hit is judged with its first image turned."""
    from types import SimpleNamespace

    from pytest_leakcheck.search.kernels import Match

    scores = np.array([0.5, 0.8, 0.95, 0.85, 0.75])
    seen: list[list[str]] = []

    def pair_scores(data, i, j, flip, always=0, turned=None):  # type: ignore[no-untyped-def]
        seen.append(list(turned))
        return scores[:len(i)]

    monkeypatch.setattr(pairs, "prepare", lambda *args, **kwargs: None)
    monkeypatch.setattr(pairs, "pair_scores", pair_scores)
    run = SimpleNamespace(
        stats={"aligned": {"threshold": 0.7, "error_threshold": 0.9, "within_threshold": 0.8,
                           "within_error_threshold": 0.92}},
        sigs=SimpleNamespace(valid=np.ones(6, bool), digests=tuple(bytes([k]) * 32 for k in range(6))),
        orientations=("identity", "hflip"), split_of=("train", "test", "train", "test", "train", "test"),
        focus=None, memo={}, groups=None)
    hits = [Match(0, 1, "phash", 4.0), Match(2, 1, "thumbnail", 0.97), Match(0, 3, "phash", 2.0, "hflip"),
            Match(0, 2, "phash", 1.0), Match(4, 5, "phash", 3.0, "rot90"), Match(4, 5, "identical_file", 0.0)]
    with open_store(None) as run.store:  # refine remembers its scores there
        got = aligned.DETECTOR.refine(run, aligned.AlignedSettings(), hits)  # type: ignore[arg-type]
    assert [(m.i, m.j, m.detector, m.weak) for m in got] == [
        (2, 1, "thumbnail", True), (0, 3, "phash", False), (0, 2, "phash", True),
        (4, 5, "phash", True), (4, 5, "identical_file", False)]
    assert seen == [["identity", "identity", "identity", "identity", "rot90"]]


def test_rotated_copy_kept_and_rotated_lookalike_dropped(tmp_path: Path) -> None:
    """With rotations searched, a turned copy is found at error level; hash hits between distinct
    photographs in a turned orientation do not survive alignment."""
    for i in range(30):
        save(photo(i), tmp_path / f"train/img_{i:03d}.jpg", quality=92)
    for i in range(6):
        save(photo(2000 + i), tmp_path / f"test/distinct_{i}.jpg", quality=92)
    save(photo(3).transpose(Image.Transpose.ROTATE_90), tmp_path / "test/turned.jpg", quality=90)
    write_policy(tmp_path, ALIGNED)  # searches rot90 (conftest.POLICY)
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    assert _leak_pairs(report) == {("test/turned.jpg", "train/img_003.jpg")}
    (finding,) = report.findings
    assert finding.severity == "error" and finding.pairs[0].orientation in ("rot90", "rot270")


