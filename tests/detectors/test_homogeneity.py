"""Levels held against the dataset itself: a fixed camera, look-alike objects, a turned copy in a small set.

Issue 37: on a fixed camera every detector linked different shots (one error of all
289 photos), on candled eggs ``aligned`` made errors of different eggs, and a
mirrored copy whose pHash is 0 stayed a warning in a small set.  Each dataset here
is built from numpy and Pillow; each test fails on the code before the change.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageFilter

from pytest_leakcheck import check
from pytest_leakcheck.detectors import homogeneity
from pytest_leakcheck.render.text import render as render_text
from pytest_leakcheck.search.kernels import Match
from pytest_leakcheck.testing import photo, save

from ..conftest import write_policy


def _split(k: int) -> str:
    return "test" if k % 5 == 0 else "train"


def test_a_row_with_one_copy_among_random_partners_is_not_a_homogeneous_dataset() -> None:
    """Each sampled row's nearest random partner is left out: a copy drawn by chance does not count,
    a dataset where every partner passes does."""
    s = homogeneity.Sample(np.repeat(np.arange(100), 5), np.arange(500), 5)
    one_copy = np.zeros(500)
    one_copy[::5] = 1.0  # each row's first partner is its copy
    said = homogeneity.verdict(s, lambda idx: one_copy[idx] > 0.5, one_copy)
    assert said == {"random_pairs": 400, "random_passing": 0, "inseparable": False}
    every = np.ones(500)
    assert homogeneity.verdict(s, lambda idx: every[idx] > 0.5, every)["inseparable"]
    # Two coincidences in a small set say nothing.
    two = np.zeros(500)
    two[[1, 6]] = 1.0
    assert not homogeneity.verdict(s, lambda idx: two[idx] > 0.5, two)["inseparable"]


def test_sample_draws_distinct_partners_from_the_other_split() -> None:
    rows = {"train": np.arange(0, 30), "test": np.arange(30, 33)}
    split_of = ["train"] * 30 + ["test"] * 3
    s = homogeneity.sample(rows, [("train", "test")], split_of, [bytes([k]) * 8 for k in range(33)])
    pairs = s.i.reshape(-1, s.per_row), s.j.reshape(-1, s.per_row)
    assert len(pairs[0]) == 3  # the train rows cannot draw 5 distinct partners from 3 test rows
    assert all(len(set(js)) == s.per_row for js in pairs[1].tolist())
    assert all(split_of[int(i)] == "test" and split_of[int(j)] == "train" for i, j in zip(s.i, s.j))


@pytest.fixture
def fixed_camera(tmp_path: Path) -> Path:
    """60 shots of one board by one camera, a small piece moved between shots: no two are copies."""
    board, piece = photo(900, (320, 240)), photo(901, (28, 28))
    rng = np.random.default_rng(1)
    for k in range(60):
        shot = board.copy()
        shot.paste(piece, (int(rng.integers(10, 280)), int(rng.integers(10, 200))))
        save(shot, tmp_path / _split(k) / f"shot_{k:03d}.jpg", quality=90)
    write_policy(tmp_path)
    return tmp_path


def test_a_fixed_camera_gives_no_error_and_says_why(fixed_camera: Path) -> None:
    report = check(fixed_camera / "leakcheck.yaml")
    assert report.exit_code == 0, [(f.kind, f.severity, len(f.members)) for f in report.findings]
    assert not [f for f in report.findings if f.severity == "error"]
    for name in ("phash", "thumbnail"):  # aligned's neighbours put its error level above every shot
        assert report.stats[name]["inseparable"], name
    text = render_text(report)
    assert "phash cannot tell copies from other images of this dataset" in text
    # Matches already weak (inseparable hashes) are not looked at again at 96 px: the look
    # could only make them weak, and on a fixed camera it was most of the check's time.
    assert report.stats["aligned"].get("fine_judged", 0) == 0
    # So no pair needs the fine level, and its impostors are not paid for (0.7 s of 9 s on chess).
    assert "fine_threshold" not in report.stats["aligned"] and report.stats["aligned"]["fine_images"] == 60
    # Nor are they scored at 32 px where aligned's own search covers the view: they are no
    # evidence, could only be warnings, and the report counts them instead of listing them.
    left = {name: report.stats[name].get("left_to_aligned", 0) for name in ("phash", "thumbnail")}
    assert left["phash"] > 0 and left["thumbnail"] > 0, left
    assert not [p for f in report.findings for p in f.pairs
                if p.detector in ("phash", "thumbnail") and p.orientation in ("identity", "hflip")]
    assert (f"; {left['phash']} of its matches, upright or mirrored, were not reported: aligned searches "
            "those views itself") in text


def test_a_fixed_camera_hash_search_makes_pairs_per_image_not_per_pair(
        fixed_camera: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The matches left to ``aligned`` are counted where the Hamming kernel finds them, never made.

    On a fixed camera every pair of shots is a pHash hit: made into arrays only to be counted,
    they grew the pHash search with the square of the set (``benchmarks/photos2mp.py --n 1200``:
    0.7 s at 289 shots, 27 s at 1,200).  What the kernel hands back must stay within a few
    pairs per image, and the count the report gives must be the same as before.
    """
    import inspect

    from pytest_leakcheck.search import kernels

    made: list[int] = []
    real = kernels.hamming_pairs

    def counting(*args, **kw):  # type: ignore[no-untyped-def]
        found = real(*args, **kw)
        if inspect.stack()[1].function == "hash_matches":
            made.append(len(found[0]))
        return found

    monkeypatch.setattr(kernels, "hamming_pairs", counting)
    report = check(fixed_camera / "leakcheck.yaml")
    assert report.stats["phash"]["inseparable"]
    left = report.stats["phash"].get("left_to_aligned", 0)
    assert left >= 12 * 48, left  # every shot in test is within reach of every shot in train
    assert made and sum(made) <= 60, (sum(made), left)


def _egg(seed: int) -> Image.Image:
    """A candled egg on a dark stand: one shape, one light, a faint texture of its own."""
    rng = np.random.default_rng(500 + seed)
    yy, xx = np.mgrid[0:200, 0:200].astype(np.float32)
    cx, cy, ax, ay = 100 + rng.normal(0, 3), 100 + rng.normal(0, 3), 55 + rng.normal(0, 3), 75 + rng.normal(0, 3)
    glow = np.clip(1.2 - ((xx - cx) / ax) ** 2 - ((yy - cy) / ay) ** 2, 0, 1)
    noise = rng.normal(0, 1, (5, 5)).astype(np.float32)
    texture = np.asarray(Image.fromarray(noise).resize((200, 200), Image.Resampling.BICUBIC))
    grey = 30 + glow * (170 + 8 * texture)
    rgb = np.stack([grey, grey * 0.75, grey * 0.35], -1) + rng.normal(0, 3, (200, 200, 3))
    return Image.fromarray(np.clip(rgb, 0, 255).astype(np.uint8), "RGB").filter(ImageFilter.GaussianBlur(1))


@pytest.mark.slow
def test_look_alike_objects_give_no_error(tmp_path: Path) -> None:
    """100 different eggs: upside-down impostors put aligned's error level under what two different
    eggs score; their retrieved neighbours do not."""
    for k in range(100):
        save(_egg(k), tmp_path / _split(k) / f"egg_{k:03d}.jpg", quality=90)
    report = check(write_policy(tmp_path))
    assert not [f for f in report.findings if f.severity == "error"]
    aligned = report.stats["aligned"]
    assert aligned["error_threshold"] == aligned["neighbour_level"] > aligned["threshold"]


@pytest.mark.slow
def test_a_turned_copy_in_a_small_set_fails_the_build(tmp_path: Path) -> None:
    """300 photos of 32 px (CIFAR's size); a train photo blurred and mirrored, another blurred and turned
    90 degrees, in test.  pHash finds both within 2 bits; aligned scores them under the small set's floor,
    which may demote only evidence that is itself weak."""
    for k in range(300):
        save(photo(7000 + k, (32, 32)), tmp_path / _split(k) / f"{k:03d}.jpg", quality=90)
    for name, turn, src in (("mirror", Image.Transpose.FLIP_LEFT_RIGHT, 1), ("turned", Image.Transpose.ROTATE_90, 2)):
        copy = photo(7000 + src, (32, 32)).transpose(turn).filter(ImageFilter.GaussianBlur(2.0))
        save(copy, tmp_path / "test" / f"{name}.jpg", quality=90)
    report = check(write_policy(tmp_path))
    assert report.exit_code == 1
    errors = [{m.path for m in f.members} for f in report.findings if f.severity == "error"]
    assert {"train/001.jpg", "test/mirror.jpg"} in errors
    assert {"train/002.jpg", "test/turned.jpg"} in errors
    assert report.stats["aligned"]["small_sample"]


def _shelves(root: Path, per_class: int = 25, others: int = 400) -> None:
    """Two foods, each shot again and again on its own shelf with its own plate (one fixed background,
    a small object moved), among ``others`` unrelated photos: a random pair is rarely of one shelf."""
    for k in range(others):
        save(photo(3000 + k, (96, 72)), root / _split(k) / f"{k:03d}.jpg", quality=90)
    rng = np.random.default_rng(2)
    for name, seed in (("plum", 910), ("litchi", 920)):
        shelf, food = photo(seed, (320, 240)), photo(seed + 1, (28, 28))
        for k in range(per_class):
            shot = shelf.copy()
            shot.paste(food, (int(rng.integers(10, 280)), int(rng.integers(10, 200))))
            save(shot, root / _split(k) / f"{name}{k:03d}S(1).jpg", quality=90)


def test_a_part_shot_in_one_fixed_setup_gives_no_error_and_says_why(tmp_path: Path) -> None:
    """The whole dataset is separable (a random pair is rarely of one shelf), each shelf is not: its
    look-alikes are warnings, said once per detector; a copy of one shot across splits still fails."""
    _shelves(tmp_path)
    copy = Image.open(tmp_path / "train" / "plum001S(1).jpg")
    save(copy.convert("RGB"), tmp_path / "test" / "copy_of_plum001.png")
    report = check(write_policy(tmp_path))
    errors = [{m.path for m in f.members} for f in report.findings if f.severity == "error"]
    assert errors == [{"train/plum001S(1).jpg", "test/copy_of_plum001.png"}], errors
    for name in ("phash", "thumbnail"):
        stats = report.stats[name]
        # Each food is a part twice over: its name's letters, and its name with the numbers left out.
        assert not stats["inseparable"] and set(stats["inseparable_parts"]) == {
            "plum*", "litchi*", "plum#s(#)", "litchi#s(#)"}, stats
    text = render_text(report)
    assert "phash cannot tell copies from other images within 4 parts of this dataset (" in text
    # Checked again with nothing changed, the stored matches are reused: still weak, still said why.
    again = check(tmp_path / "leakcheck.yaml")
    assert [f.id for f in again.findings] == [f.id for f in report.findings]
    assert again.stats["phash"]["inseparable_parts"] == report.stats["phash"]["inseparable_parts"]
    assert "phash cannot tell copies from other images within 4 parts" in render_text(again)


def test_a_part_is_judged_by_every_partner_not_by_five_random_ones() -> None:
    """In a part of 40 rows a coincidence rate of 5 % is two partners per image besides its nearest: the
    part fails.  One copy per row (its nearest) is no coincidence: the part passes."""
    rows = {"train": np.arange(0, 20), "test": np.arange(20, 40)}
    split_of = ["train"] * 20 + ["test"] * 20
    digests = [bytes([k]) * 8 for k in range(40)]
    comparisons = [("train", "test")]
    three = homogeneity.PartJudge(lambda i, j: ((i + j) % 7 < 3, np.zeros(len(i))), 1.0)  # ~40 % pass
    copy = homogeneity.PartJudge(lambda i, j: (j == (i + 20) % 40, np.zeros(len(i))), 1.0)  # its one copy
    assert homogeneity.part_verdict(rows, comparisons, split_of, digests, three)[0] > homogeneity.PART_COINCIDENCES
    assert homogeneity.part_verdict(rows, comparisons, split_of, digests, copy) == (0.0, 0)
    # Two foods of 20 shots each: each is a part; the whole dataset (in one folder) is none.
    paths = [f"JPEGImages/{'plum' if k % 2 else 'litchi'}{k:03d}S(1).JPG" for k in range(40)]
    said, mask = homogeneity.within_parts(rows, comparisons, split_of, digests, paths, three)
    assert said["parts_tested"] == 4 and mask.failed.all()
    assert said["inseparable_parts"].keys() == {"plum*", "litchi*", "plum#s(#)", "litchi#s(#)"}
    said, mask = homogeneity.within_parts(rows, comparisons, split_of, digests, paths, copy)
    assert said == {"parts_tested": 4} and not mask.any()


def test_a_cameras_file_names_make_no_part() -> None:
    """``IMG_20220730_215048.jpg`` names the phone, not what is shown: its shots are no part (a burst of one
    egg is a leak, ``eggs`` of ``benchmarks/field.py``); ``litchi002S(4).JPG`` names a food."""
    rows = {"train": np.arange(0, 30), "test": np.arange(30, 60)}
    paths = ([f"photos/IMG_20220730_2150{k:02d}.jpg" for k in range(30)]
             + [f"photos/litchi{k:03d}S(1).JPG" for k in range(30)])
    assert set(homogeneity.parts(paths, rows)) == {"litchi*", "litchi#s(#)"}


def _families_and_lookalikes(family: bool) -> tuple[float, int] | None:
    """20 test rows and 60 train rows; each test row passes with three train rows.  ``family``: the three
    are versions of one picture (distance 0 to each other, a Roboflow export's brightness versions);
    else three look-alikes (each at the level, 8, from the others)."""
    rows = {"test": np.arange(0, 20), "train": np.arange(20, 80)}
    split_of = ["test"] * 20 + ["train"] * 60
    digests = [k.to_bytes(8, "big") for k in range(80)]

    def distance(i: np.ndarray, j: np.ndarray) -> np.ndarray:
        a, b = np.minimum(i, j), np.maximum(i, j)
        partner = (a < 20) & (b >= 20) & ((b - 20) // 3 == a)
        versions = (a >= 20) & ((a - 20) // 3 == (b - 20) // 3) & (a != b)
        return np.where(partner, 0, np.where(versions, 0 if family else 8, 30))

    judge = homogeneity.PartJudge(lambda i, j: (distance(i, j) <= 8, -distance(i, j).astype(float)), -2.0)
    return homogeneity.part_verdict(rows, [("train", "test")], split_of, digests, judge)


def test_versions_of_one_picture_are_one_partner_look_alikes_are_many() -> None:
    """A part whose test images each have three versions of one picture in train (the held-out
    ``pakcoy``: three brightness versions of each source) is separable: its matches are copies.  Three
    different look-alike partners per image make the part fail, as before."""
    assert _families_and_lookalikes(True) == (0.0, 0)
    # Each test row passes with two look-alikes besides its nearest; a train row only with its test row.
    assert _families_and_lookalikes(False) == (2 * 20 / 80, 40)


def test_pictures_counts_a_family_once_and_caps_the_rows_it_sorts() -> None:
    judge = homogeneity.PartJudge(lambda i, j: (np.ones(len(i), bool), -np.abs(i // 10 - j // 10).astype(float)),
                                  0.0)
    assert homogeneity.pictures(np.array([1, 2, 3, 11, 12, 25]), judge) == 3
    assert homogeneity.pictures(np.zeros(0, np.int64), judge) == 0
    many = np.arange(homogeneity.MAX_FAMILY_PARTNERS + 5) * 10  # every row its own picture
    assert homogeneity.pictures(many, judge) == homogeneity.MAX_FAMILY_PARTNERS + 5


def _scan_part(close_alike: bool):
    """40 slices of scans (20 train, 20 test) whose level passes ~40 % of pairs (adjacent slices are
    alike), each with one copy across splits; ``close_alike``: many pairs as close as versions too
    (one fixed setup), else only each slice's copy."""
    rows = {"train": np.arange(0, 20), "test": np.arange(20, 40)}
    split_of = ["train"] * 20 + ["test"] * 20
    digests = [bytes([k]) * 8 for k in range(40)]
    paths = [f"scans/{'Tr' if k % 2 else 'Te'}-pi_{k:04d}.jpg" for k in range(40)]

    def judge(i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        copy = j == (i + 20) % 40
        alike = (i + j) % 7 < 3
        strength = np.where(copy | (alike & close_alike), 1.0, np.where(alike, 0.5, 0.0))
        return copy | alike, strength

    said, mask = homogeneity.within_parts(rows, [("train", "test")], split_of, digests, paths,
                                          homogeneity.PartJudge(judge, 0.9))
    return said, mask


def test_a_copy_as_close_as_a_version_in_a_part_of_look_alikes_stays_strong() -> None:
    """A part of look-alikes fails at the level (MRI slices of one scan), but at the closeness of versions
    of one picture only each slice's copy passes: a match that close is a copy and stays strong, a match
    only at the level is weak.  ``tumor`` of benchmarks/field.py: pHash-0 copies of 12,887 slices were
    warnings folded into shared-scene notes."""
    said, mask = _scan_part(close_alike=False)
    assert said["inseparable_parts"] and said["close_separable_parts"]
    copy, lookalike = Match(0, 20, "phash", 0.95, "identity"), Match(0, 3, "phash", 0.5, "identity")
    out = homogeneity.weaken([copy, lookalike], False, mask, lambda m: False, lambda m: m.value >= 0.9)
    assert [m.weak for m in out] == [False, True]


def test_a_fixed_setup_keeps_close_matches_weak() -> None:
    """Where many different shots are as close as versions (a small object moved on one shelf), a close
    match is no copy by its closeness: it stays weak."""
    said, mask = _scan_part(close_alike=True)
    assert said["inseparable_parts"] and "close_separable_parts" not in said
    copy = Match(0, 20, "phash", 0.95, "identity")
    assert homogeneity.weaken([copy], False, mask, lambda m: False, lambda m: m.value >= 0.9)[0].weak



def test_a_row_in_two_failed_parts_is_freed_only_if_both_pass_at_the_closeness_of_versions() -> None:
    """A row lies in a folder part and a name part.  Side views (``side*``) in two folders are close to
    one another (one fixed setup), so ``side*`` fails at the closeness of versions while folder ``x/``
    passes it: a close match of a side view in ``x/`` stays weak, one of a top view there is freed."""
    rows = {"train": np.arange(0, 60), "test": np.arange(60, 120)}
    split_of = ["train"] * 60 + ["test"] * 60
    digests = [bytes([k]) * 8 for k in range(120)]
    folder = np.array(["x" if k % 4 < 2 else "y" for k in range(120)])
    side = np.array([k % 2 == 1 for k in range(120)])
    paths = [f"{folder[k]}/{'side' if side[k] else 'top'}{k:03d}.jpg" for k in range(120)]

    def judge(i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        copy = j == (i + 60) % 120
        alike = (i + j) % 7 < 3
        close = alike & side[i] & side[j] & (folder[i] != folder[j])
        return copy | alike, np.where(copy | close, 1.0, np.where(alike, 0.5, 0.0))

    said, mask = homogeneity.within_parts(rows, [("train", "test")], split_of, digests, paths,
                                          homogeneity.PartJudge(judge, 0.9))
    assert {"x/", "side*"} <= set(said["inseparable_parts"]), said
    assert "x/" in said["close_separable_parts"] and "side*" not in said["close_separable_parts"], said
    side_copy, top_copy = Match(1, 61, "phash", 0.95, "identity"), Match(0, 60, "phash", 0.95, "identity")
    out = homogeneity.weaken([side_copy, top_copy], False, mask, lambda m: False, lambda m: m.value >= 0.9)
    assert [m.weak for m in out] == [True, False]
