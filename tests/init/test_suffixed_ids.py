"""Ids before a shot, frame or view suffix, with no separator to split on (probe 2, problem 3).

`apple001S(3).JPG` is the third side shot of portion `apple001`; `30_sequence30_12_jpg.rf.<hash>.jpg`
is frame 12 of video `30_sequence30` in a Roboflow export.  `init` proposed no group for the first and
only the per-frame Roboflow source for the second, so portions and videos in two splits went unsaid.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_leakcheck.init import groupids, nameids
from pytest_leakcheck.policy import userregex

RF = "0123456789abcdef0123456789abcdef"


def _splits(paths: list[str]) -> dict[str, str]:
    return {p: p.split("/")[0] for p in paths}


def _rf(source: str, n: int, ext: str = "jpg") -> str:
    return f"{source}_{ext}.rf.{RF[n % 32:] + RF[:n % 32]}.jpg"


def _regexes(yaml: str) -> list[str]:
    return re.findall(r"- regex: '(.*)'", yaml)


def _groups(regex: str, paths: list[str]) -> dict[str, str | None]:
    """What the check reads with the policy's regex: RE2, as `dataset/groups.py` runs it."""
    program = userregex.compile(regex)
    return {p: userregex.search_group(program, p) for p in paths}


def _portions() -> list[str]:
    """Food portions shot from the side (S, or s) and the top (T), shots numbered per view; shots of
    portions 1 and 3 in train and val, as the dataset's own lists put them, portions 5 and 6 in test."""
    out = []
    for food in ("apple", "egg", "fired_dough_twist"):
        for portion in range(1, 7):
            view = "s" if food == "egg" else "S"
            for shot in range(1, 5):
                split = "test" if portion > 4 else "val" if shot == 4 and portion in (1, 3) else "train"
                out.append(f"{split}/{food}{portion:03d}{view}({shot}).JPG")
            out.append(f"{'test' if portion > 4 else 'train'}/{food}{portion:03d}T(1).JPG")
    return out


def test_a_portion_id_before_a_view_and_shot_is_proposed() -> None:
    paths = _portions()
    proposal = groupids.propose(_splits(paths), {}, {})
    (regex,) = _regexes(proposal.yaml)
    found = _groups(regex, paths)
    assert found["train/apple001S(1).JPG"] == found["val/apple001S(4).JPG"] == "apple001"
    assert found["train/egg002s(3).JPG"] == "egg002" and found["test/fired_dough_twist006T(1).JPG"] == (
        "fired_dough_twist006")
    assert set(found.values()) == {f"{food}{k:03d}" for food in ("apple", "egg", "fired_dough_twist")
                                   for k in range(1, 7)}
    assert "6 ids appear in more than one split (train and val), e.g. apple001" in proposal.found[0]
    assert proposal.found[1].startswith("files per group: 18 of 2-5 files")
    assert "ungrouped: own-group" in proposal.yaml


def _frames() -> list[str]:
    """Frames of cow videos (`<n>_sequence<n>_<frame>`) cut at random into splits, each exported with
    Roboflow's augmented copies in train; beside them a few photos uploaded under UUID names."""
    out = []
    for video in range(30, 42):
        for frame in range(1, 13):
            split = "test" if frame == 5 and video % 2 == 0 else "valid" if frame == 3 and video % 3 == 0 else "train"
            copies = 3 if split == "train" else 1
            out += [f"{split}/{_rf(f'{video}_sequence{video}_{frame}', video + frame + k)}" for k in range(copies)]
    for n in range(12):
        uuid = f"{n:08x}-b25a-41ce-927b-cc183858af{n:02d}"
        out += [f"train/{_rf(uuid, n + k)}" for k in range(3)]
    return out


def test_the_video_of_roboflow_frames_comes_before_each_frames_source() -> None:
    """Each frame is an upload of its own, so Roboflow sources never cross splits; the video does."""
    paths = _frames()
    proposal = groupids.propose(_splits(paths), {}, {})
    (regex,) = _regexes(proposal.yaml)
    assert proposal.yaml.index("- regex:") < proposal.yaml.index("- source_name: roboflow")
    found = _groups(regex, paths)
    assert {g for p, g in found.items() if "sequence" in p} == {f"{v}_sequence{v}" for v in range(30, 42)}
    assert all(g is None for p, g in found.items() if "sequence" not in p)  # the UUIDs: their source groups them
    assert "8 ids appear in more than one split (test and train and valid), e.g. 30_sequence30" in proposal.found[0]
    assert "then Roboflow source names" in proposal.found[0]


def test_the_roboflow_source_stays_when_the_number_after_a_word_is_a_running_count() -> None:
    """`rice_bug_97_dataset_0339`: the count runs on over the whole set, so `rice_bug_97` is a batch of
    different pictures, not one subject photographed again; the sources, which repeat, stay the rule."""
    paths = [f"{'test' if n % 5 == 0 else 'train'}/{_rf(f'{bug}_dataset_{n:04d}', n + k)}"
             for bug, first in (("rice_bug_97", 0), ("planthopper_16", 40), ("green_leafhopper_35", 80))
             for n in range(first, first + 40) for k in range(1 if n % 5 == 0 else 2)]
    proposal = groupids.propose(_splits(paths), {}, {})
    assert "  - source_name: roboflow\n" in proposal.yaml and "regex" not in proposal.yaml
    (suffixed,) = [c for c in groupids.candidates(_splits(paths), {}) if c.suffixed]
    assert suffixed.refused.startswith("the part after the id is a running number")


@pytest.mark.parametrize("make, why", [
    (lambda n, k: f"{n:03d}({k}).jpg", "a bare number"),
    (lambda n, k: f"DSC{n:04d}({k}).JPG", "a generic word"),
    (lambda n, k: f"IMG_{n:04d}({k}).JPG", "a generic word and a number"),
    (lambda n, k: f"frame{n:04d}v{k}.png", "a generic word"),
    (lambda n, k: f"202307{n + 10:02d}({k}).jpg", "a date"),
    (lambda n, k: f"Screenshot-2023-07-{n + 10:02d}({k}).png", "a date"),
    # After a separator, frames numbered in turn make a bare number a track (GTSRB), but not these:
    (lambda n, k: _rf(f"{n}_{k}", n + k), "a bare number"),  # Roboflow uploads reuse numbers
    (lambda n, k: f"image_{n + 10}_{k}.png", "a generic word and a number"),
    (lambda n, k: f"IMG_{n:04d}_{k}.jpg", "a generic word and a number"),
    (lambda n, k: f"202307{n + 10:02d}_{k}.jpg", "a date"),
], ids=["number", "camera-counter", "phone-counter", "frame-counter", "day", "screenshot-day",
        "roboflow-number", "image-counter", "phone-counter-frame", "day-frame"])
def test_numbers_dates_and_camera_counters_before_a_suffix_are_never_ids(make, why: str) -> None:
    """`001(2).jpg`, `DSC0001(2).JPG`, `20230711(2).jpg`: a counter, a camera's count or a day, not a subject."""
    paths = [f"{'train' if (n + k) % 3 else 'test'}/{make(n, k)}" for n in range(8) for k in range(1, 5)]
    proposal = groupids.propose(_splits(paths), {}, {})
    assert proposal.yaml == "", proposal.yaml
    assert f"is {why})" in proposal.note


def test_suffix_shapes_skip_hashes_and_long_tails() -> None:
    assert nameids.stem("a/apple001S(3).JPG") == (nameids.PLAIN_TAIL, "apple001S(3)")
    assert nameids.stem(f"t/{_rf('30_sequence30_12', 1)}") == (nameids.ROBOFLOW_TAIL, "30_sequence30_12")
    assert nameids.stem(f"t/{_rf('11_PNG', 1)}") == (nameids.ROBOFLOW_TAIL, "11")  # converted upload: two extensions
    assert nameids._suffix_shapes("apple001S(3)") == [("L", "(", "D", ")")]
    assert nameids._suffix_shapes("30_sequence30_12") == [("_", "D")]
    # A UUID's letters and digits are no id and suffix; a suffix of three words and numbers is no shot.
    assert nameids._suffix_shapes("008e087f-b25a-41ce-927b-cc183858af13") == []
    assert nameids._suffix_shapes("patient_0001_visit2_slice3") == [("_", "L", "D")]


@pytest.mark.parametrize("mark", ["'", "\\", "\n", '"'])
def test_a_suffix_from_a_hostile_name_never_reaches_the_policy(mark: str) -> None:
    """The regex is written in single quotes: a quote, a backslash or a line break in the names
    would end it and add keys of the pull request's choosing (docs/security.md)."""
    paths = [f"{'val' if shot == 4 and portion < 3 else 'train'}/plum{portion:03d}S{mark}({shot}).JPG"
             for portion in range(1, 9) for shot in range(1, 5)]
    assert not [c for c in nameids.candidates(paths) if mark in c.regex or mark in c.suffix]
    assert mark not in groupids.propose(_splits(paths), {}, {}).yaml


def test_init_writes_a_portion_rule_the_check_reads(tmp_path: Path) -> None:
    """End to end: the rule init writes compiles under RE2 and makes one group-split per portion."""
    from pytest_leakcheck.dataset import groups, inventory
    from pytest_leakcheck.init import recognise
    from pytest_leakcheck.policy.load import load

    from ..conftest import write_policy

    for path in _portions():
        (tmp_path / path).parent.mkdir(exist_ok=True)
        (tmp_path / path).touch()
    layout = recognise.detect(tmp_path)
    write_policy(tmp_path, recognise.policy_text(layout))
    inv = groups.resolve(inventory.scan(load(tmp_path / "leakcheck.yaml")))
    split_groups = sorted(f.message.split("'")[1] for f in groups.findings(inv) if f.kind == "group-split")
    assert split_groups == ["apple001", "apple003", "egg001", "egg003", "fired_dough_twist001", "fired_dough_twist003"]


def test_a_suffixed_id_holding_a_large_share_is_warned_about_and_a_column_comes_first() -> None:
    """One portion shot 30 times of 66 files: said before the first check, as for any proposed rule."""
    paths = [f"{'test' if portion > 6 else 'train'}/plum{portion:03d}S({shot}).JPG"
             for portion in range(1, 10) for shot in range(1, 5)]
    paths += [f"{'val' if shot % 7 == 0 else 'train'}/plum010S({shot}).JPG" for shot in range(1, 31)]
    proposal = groupids.propose(_splits(paths), {}, {})
    assert "largest: plum010 30" in proposal.found[1]
    assert len(proposal.warnings) == 1 and "plum010 would hold 30 of 66 files (45%)" in proposal.warnings[0]
    # A subject column the table names is never second-guessed by a name id.
    extra = {p: {"subject_id": f"S{n % 5}"} for n, p in enumerate(paths)}
    assert groupids.propose(_splits(paths), {}, extra).column == "subject_id"


def _tracks(root: Path | None = None) -> list[str]:
    """GTSRB's names, `<class>/<track>_<frame>.png`: 3 classes of 3 tracks of 12 frames, frames split at
    random (a third in test).  Track 00038 is a track of class 00001 and another of class 00003: GTSRB
    numbers tracks per class."""
    out = []
    for c, ts in ((1, (5, 38, 49)), (2, (12, 17, 27)), (3, (38, 60, 61))):
        for t in ts:
            out += [f"{'test' if (7 * f + t) % 3 == 0 else 'train'}/{c:05d}/{t:05d}_{f:05d}.png" for f in range(12)]
    for path in out if root else ():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).touch()
    return out


def test_track_numbers_before_frames_are_ids_read_with_their_class_folder(tmp_path: Path) -> None:
    """GTSRB (held out, stop 50): `00038_00011.png` is frame 11 of track 38.  The track was refused as
    "a bare number", and every track in both splits is the leak, not a sign of classes.  Frames
    numbered in turn after a separator make the number a track; one number under two class folders
    is two tracks, so the rule reads the folder too, and the check makes one group-split per track."""
    from pytest_leakcheck.dataset import groups, inventory
    from pytest_leakcheck.init import recognise
    from pytest_leakcheck.policy.load import load

    from ..conftest import write_policy

    paths = _tracks(tmp_path)
    layout = recognise.detect(tmp_path)
    (regex,) = _regexes(layout.groups_yaml)
    found = {p.split("/", 1)[1]: g for p, g in _groups(regex, paths).items()}  # by class, track and frame
    assert found["00001/00038_00000.png"] == found["00001/00038_00011.png"] == "00001/00038"
    assert found["00003/00038_00000.png"] == "00003/00038"
    assert len(set(found.values())) == 9
    write_policy(tmp_path, recognise.policy_text(layout))
    inv = groups.resolve(inventory.scan(load(tmp_path / "leakcheck.yaml")))
    assert len([f for f in groups.findings(inv) if f.kind == "group-split"]) == 9


def test_track_numbers_in_one_folder_are_ids_without_it() -> None:
    """Without class folders (or when no number recurs under two), the track number alone is the id."""
    paths = [f"{p.split('/')[0]}/{p.split('/')[-1]}" for p in _tracks() if "/00003/" not in p]
    proposal = groupids.propose(_splits(paths), {}, {})
    (regex,) = _regexes(proposal.yaml)
    assert set(_groups(regex, paths).values()) == {f"{t:05d}" for t in (5, 38, 49, 12, 17, 27)}
