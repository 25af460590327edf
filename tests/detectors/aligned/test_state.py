"""The aligned detector incremental: stored pairs and levels, searched around what changed, re-estimated when enough did."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from pytest_leakcheck import check
from pytest_leakcheck.detectors.aligned import pairs, state
from pytest_leakcheck.search import lists, multiview
from pytest_leakcheck.report.model import report_dict
from pytest_leakcheck.render.text import render as render_text
from pytest_leakcheck.store.db import open_store
from pytest_leakcheck.testing import photo, save

from ...conftest import write_policy
from .test_detector import ALIGNED, _disguised
from .test_hires import photos  # noqa: F401 (a fixture)


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """60 distinct train images, 10 distinct test images, two disguised copies (one within train)."""
    for i in range(60):
        save(photo(i), tmp_path / f"train/img_{i:03d}.jpg", quality=92)
    for i in range(10):
        save(photo(2000 + i), tmp_path / f"test/distinct_{i}.jpg", quality=92)
    save(_disguised(photo(3)), tmp_path / "test/disguised.jpg", quality=90)
    save(_disguised(photo(7)), tmp_path / "train/disguised7.jpg", quality=90)
    write_policy(tmp_path, ALIGNED)
    return tmp_path


def _findings(report) -> list:
    data = report_dict(report)
    return data["findings"]


def _edit(root: Path) -> None:
    """A new copy, a changed file, a deleted file and a file moved across splits: 4 of 72 rows."""
    save(_disguised(photo(11)), root / "test/new_copy.jpg", quality=90)
    save(photo(777), root / "train/img_010.jpg", quality=92)
    (root / "test/distinct_2.jpg").unlink()
    shutil.move(root / "train/img_030.jpg", root / "test/img_030.jpg")


def _drop_pairs(root: Path) -> None:
    with open_store(root / ".leakcheck/cache.sqlite") as store, store.conn:
        store.conn.execute("DELETE FROM snapshots WHERE key LIKE 'aligned-pairs:%'")


@pytest.mark.parametrize("lists", [False, True], ids=["exact", "inverted-file"])
def test_incremental_search_equals_a_full_search_with_the_same_levels(
        dataset: Path, monkeypatch: pytest.MonkeyPatch, lists: bool) -> None:
    """After edits below the re-estimation share, the stored pairs plus a search around the changed
    rows report exactly what a full search with the same index and levels reports; with the
    inverted file too (forced on this small dataset)."""
    if lists:
        monkeypatch.setattr(multiview, "IVF_MIN", 0)
        monkeypatch.setattr(multiview, "LIST_SIZE", 4)
        monkeypatch.setattr(multiview, "NPROBE", 3)
    monkeypatch.setattr(state, "LEVELS_AFTER", 0.2)
    policy = dataset / "leakcheck.yaml"
    first = check(policy)
    _edit(dataset)
    focused: list[int] = []
    real = pairs.focus_search

    def spy(data, p, focus):
        assert (data.lists is not None) == lists
        focused.append(int(focus.sum()))
        return real(data, p, focus)

    monkeypatch.setattr(pairs, "focus_search", spy)
    monkeypatch.setattr(pairs, "search", lambda *a: pytest.fail("an incremental check searched everything"))
    warm = check(policy)
    assert focused == [3]  # the new, the changed and the moved file
    assert warm.stats["aligned"]["levels_at"] == first.stats["aligned"]["levels_at"]
    assert warm.stats["aligned"]["changed_since"] == 6  # 3 rows gone (deleted, changed, moved), 3 new
    paths = {m.path for f in warm.findings for m in f.members}
    assert {"test/new_copy.jpg", "train/img_011.jpg", "test/disguised.jpg", "train/disguised7.jpg"} <= paths
    monkeypatch.undo()
    if lists:
        monkeypatch.setattr(multiview, "IVF_MIN", 0)
        monkeypatch.setattr(multiview, "LIST_SIZE", 4)
        monkeypatch.setattr(multiview, "NPROBE", 3)
    monkeypatch.setattr(state, "LEVELS_AFTER", 0.2)
    _drop_pairs(dataset)  # a full search, with the stored index and levels
    full = check(policy)
    assert _findings(warm) == _findings(full)
    assert warm.stats["aligned"]["threshold"] == full.stats["aligned"]["threshold"]


def test_an_unchanged_check_searches_nothing(dataset: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    policy = dataset / "leakcheck.yaml"
    first = check(policy)
    monkeypatch.setattr(pairs, "search", lambda *a: pytest.fail("searched everything"))
    monkeypatch.setattr(pairs, "focus_search", lambda *a: pytest.fail("searched around a row"))
    again = check(policy)
    assert _findings(again) == _findings(first) != []
    assert again.stats["aligned"] == first.stats["aligned"]


def test_levels_are_estimated_again_past_the_share(dataset: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Below LEVELS_AFTER the levels are kept; above it they are estimated again on the current data
    (the same as a fresh check's, whose index is the same); above INDEX_AFTER everything is, as on a first check."""
    policy = dataset / "leakcheck.yaml"
    first = check(policy)
    cal = first.stats["aligned"]
    assert cal["levels_at"] == cal["index_at"] and cal["levels_on"] == cal["index_on"] == 72
    save(photo(5000), dataset / "train/one.jpg", quality=92)  # 1 of 72: below 5 %
    kept = check(policy).stats["aligned"]
    assert kept["levels_on"] == 72 and kept["changed_since"] == 1
    for i in range(4):  # 5 of 72 since the estimate: above 5 %
        save(photo(5001 + i), dataset / f"train/more_{i}.jpg", quality=92)
    monkeypatch.setattr(state, "now", lambda: "2030-01-01T00:00:00Z")
    again = check(policy).stats["aligned"]
    assert again["levels_on"] == 77 and again["changed_since"] == 0
    assert again["levels_at"] == "2030-01-01T00:00:00Z" != again["index_at"]
    for i in range(40):  # 40 of 77 since the index was fitted: above 50 %
        save(photo(6000 + i), dataset / f"test/many_{i}.jpg", quality=92)
    monkeypatch.setattr(state, "now", lambda: "2031-01-01T00:00:00Z")
    refit = check(policy)
    assert refit.stats["aligned"]["index_at"] == "2031-01-01T00:00:00Z" and refit.stats["aligned"]["index_on"] == 117
    fresh = check(policy, use_cache=False)
    assert _findings(refit) == _findings(fresh)
    strip = ("index_at", "levels_at")
    assert ({k: v for k, v in refit.stats["aligned"].items() if k not in strip}
            == {k: v for k, v in fresh.stats["aligned"].items() if k not in strip})


def test_report_says_which_levels_and_when(dataset: Path) -> None:
    policy = dataset / "leakcheck.yaml"
    check(policy)
    save(photo(5000), dataset / "train/one.jpg", quality=92)
    report = check(policy)
    cal = report.stats["aligned"]
    assert set(cal) >= {"threshold", "error_threshold", "levels_at", "levels_on", "index_at", "index_on",
                        "changed_since", "reestimate_after"}
    assert json.loads(json.dumps(report_dict(report)))["stats"]["aligned"]["levels_on"] == 72
    when = cal["levels_at"].replace("T", " ").rstrip("Z")
    assert f"levels estimated {when} UTC on 72 images, 1 changed since" in render_text(report, verbose=True)


def test_a_saved_report_with_odd_levels_renders_without_them() -> None:
    from pytest_leakcheck.detectors.aligned import _estimated

    assert _estimated({"levels_at": "\x1b[31m", "levels_on": 3}) == ""
    assert _estimated({"levels_at": "2026-01-01T00:00:00Z", "levels_on": "many"}) == ""


def test_focus_check_uses_the_stored_model_and_writes_nothing(dataset: Path) -> None:
    policy = dataset / "leakcheck.yaml"
    check(policy)
    store_path = dataset / ".leakcheck/cache.sqlite"
    with open_store(store_path) as store:
        before = store.conn.execute("SELECT key, length(data) FROM snapshots ORDER BY key").fetchall()
    save(_disguised(photo(12)), dataset / "test/staged.jpg", quality=90)
    report = check(policy, focus=["test/staged.jpg"])
    assert {m.path for f in report.findings for m in f.members} == {"test/staged.jpg", "train/img_012.jpg"}
    with open_store(store_path) as store:
        after = store.conn.execute("SELECT key, length(data) FROM snapshots ORDER BY key").fetchall()
    assert [k for k, _ in after if k.startswith("aligned")] == [k for k, _ in before if k.startswith("aligned")]


def test_samples_are_keyed_by_content() -> None:
    """Adding 1 % of rows replaces about 1 % of the sample; row order and splits do not matter."""
    rng = np.random.default_rng(0)
    digests = [rng.bytes(32) for _ in range(20_000)]
    base = pairs.by_content(digests, np.arange(19_800), 2000)
    grown = pairs.by_content(digests, np.arange(20_000), 2000)
    assert len(base) == len(grown) == 2000
    assert len(np.intersect1d(base, grown)) >= 2000 - 60
    shuffled = rng.permutation(20_000)
    again = pairs.by_content([digests[i] for i in shuffled], np.arange(20_000), 2000)
    assert sorted(shuffled[again]) == sorted(grown)


def test_inverted_file_finds_what_the_exact_search_finds(monkeypatch: pytest.MonkeyPatch) -> None:
    """On clustered vectors, the inverted file's top-k holds 95 % of the exact top-k (and never the query
    itself), and whether a reference is seen does not depend on the other references."""
    monkeypatch.setattr(multiview, "IVF_MIN", 0)  # off by default (docs/scale.md)
    rng = np.random.default_rng(1)
    centres = rng.normal(size=(60, 16))
    x = centres[rng.integers(0, 60, 6000)] + rng.normal(scale=0.7, size=(6000, 16))
    x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    cent = multiview.fit_lists(x, len(x) * 1024 // 100)
    assert cent is not None
    row_lists = lists.assign(x, cent)
    q = np.arange(0, 6000, 7)
    exact, _ = multiview.topk([x[q]], x, 8, q)
    got, _ = multiview.ivf_topk([x[q]], x, row_lists, cent, 8, q)
    assert not (got == q[:, None]).any()
    recall = np.mean([len(set(a) & set(b)) / 8 for a, b in zip(exact, got)])
    assert recall >= 0.95
    # A query's top-1 seen among half the references is still its top-1 there (if it was kept).
    half = np.arange(0, 6000, 2)
    sub, _ = multiview.ivf_topk([x[q]], x[half], row_lists[half], cent, 1, np.where(q % 2 == 0, q // 2, -1))
    full1, _ = multiview.ivf_topk([x[q]], x, row_lists, cent, 2, q)
    for n, row in enumerate(q):
        kept = [c for c in full1[n] if c >= 0 and c % 2 == 0 and c != row]
        if kept and kept[0] == full1[n][0]:
            assert half[sub[n][0]] == kept[0]


def test_the_fine_verdict_is_the_same_incremental_or_fresh(photos: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Large photos: a lookalike and a copy added after the first check are judged at 96 px by the
    search around them exactly as a full search with the same levels judges them (stored pairs,
    ``focus_search``, and hash matches through ``pair_scores``)."""
    root = tmp_path / "data"
    shutil.copytree(photos, root)
    held = tmp_path / "held"
    held.mkdir()
    for name in ("test/look_1.jpg", "test/crop.jpg"):
        shutil.move(root / name, held / Path(name).name)
    monkeypatch.setattr(state, "LEVELS_AFTER", 0.2)
    policy = root / "leakcheck.yaml"
    first = check(policy)
    for name in ("test/look_1.jpg", "test/crop.jpg"):
        shutil.move(held / Path(name).name, root / name)
    focused: list[int] = []
    real = pairs.focus_search

    def spy(data, p, focus):
        focused.append(int(focus.sum()))
        return real(data, p, focus)

    monkeypatch.setattr(pairs, "focus_search", spy)
    monkeypatch.setattr(pairs, "search", lambda *a: pytest.fail("an incremental check searched everything"))
    warm = check(policy)
    assert focused == [2]
    assert warm.stats["aligned"]["levels_at"] == first.stats["aligned"]["levels_at"]
    monkeypatch.undo()
    monkeypatch.setattr(state, "LEVELS_AFTER", 0.2)
    _drop_pairs(root)
    full = check(policy)
    assert _findings(warm) == _findings(full)
    fine = ("fine_threshold", "fine_pairs", "fine_judged", "fine_demoted", "fine_calibrated_on")
    assert {k: warm.stats["aligned"][k] for k in fine} == {k: full.stats["aligned"][k] for k in fine}
    judged = {(a, b): v for a, b, v in warm.stats["aligned"]["fine_pairs"]}
    level = warm.stats["aligned"]["fine_threshold"]
    assert judged[("test/look_1.jpg", "train/img_001.jpg")] < level <= judged[("test/crop.jpg", "train/img_003.jpg")]
    errors = {frozenset(m.path for m in f.members) for f in warm.findings if f.severity == "error"}
    assert any({"test/crop.jpg", "train/img_003.jpg"} <= e for e in errors)
    assert not any({"test/look_1.jpg", "train/img_001.jpg"} <= e for e in errors)


def test_hash_matches_are_scored_once_and_the_next_check_scores_only_new_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``refine`` remembers each hash match's aligned score by content and orientation: a check
    after a change scores only the matches it has not seen, and reports what a fresh check does."""
    for i in range(30):
        save(photo(i), tmp_path / f"train/img_{i:03d}.jpg", quality=92)
    for i in (3, 8):  # re-encoded copies: pHash matches that aligned judges
        save(photo(i), tmp_path / f"test/copy_{i}.jpg", quality=70)
    write_policy(tmp_path, ALIGNED)
    scored: list[int] = []
    real = pairs.pair_scores

    def counted(data, i, j, *args, **kwargs):  # type: ignore[no-untyped-def]
        if kwargs.get("turned") is not None:  # refine's calls (the search's own pairs pass none)
            scored.append(len(i))
        return real(data, i, j, *args, **kwargs)

    monkeypatch.setattr(pairs, "pair_scores", counted)
    first = check(write_policy(tmp_path, ALIGNED))
    assert sum(scored) >= 2
    save(photo(13), tmp_path / "test/copy_13.jpg", quality=70)  # one more copy
    scored.clear()
    again = check(write_policy(tmp_path, ALIGNED))
    assert sum(scored) == 1  # the new copy's pair only (found by phash and thumbnail: one score)
    assert len(_findings(again)) == len(_findings(first)) + 1
    # The same report as a check that remembers nothing.
    fresh = tmp_path.parent / "fresh"
    shutil.copytree(tmp_path, fresh, ignore=shutil.ignore_patterns(".leakcheck"))
    assert _findings(check(write_policy(fresh, ALIGNED))) == _findings(again)
