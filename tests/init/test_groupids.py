"""Which group ids `init` proposes, and why it proposes none (issue 25)."""

from __future__ import annotations

import re

import pytest

from pytest_leakcheck.init import groupids


def _splits(paths: list[str]) -> dict[str, str]:
    return {p: p.split("/")[0] for p in paths}


def _ids(regex: str, paths: list[str]) -> set[str]:
    return {m.group("group") for p in paths if (m := re.search(regex, p))}


@pytest.mark.parametrize("paths, ids", [
    ([f"{'train' if s < 8 else 'test'}/patient_{s:04d}_slice{k}.jpg" for s in range(10) for k in range(3)],
     {f"patient_{s:04d}" for s in range(10)}),
    ([f"{'train' if s < 8 else 'test'}/subject-{s:02d}_frame{k:03d}.jpg" for s in range(10) for k in range(2)],
     {f"subject-{s:02d}" for s in range(10)}),
    ([f"{'train' if s < 8 else 'test'}/P{s}/visit{k}/img.png" for s in range(10) for k in range(3)],
     {f"P{s}" for s in range(10)}),
    # Most subjects have one image, some two or three.
    ([f"{'train' if s < 30 else 'test'}/s{s:04d}_{k}.jpg" for s in range(40) for k in range(1 if s % 3 else 2 + s % 2)],
     {f"s{s:04d}" for s in range(40)}),
])
def test_ids_anywhere_in_names_are_proposed(paths: list[str], ids: set[str]) -> None:
    proposal = groupids.propose(_splits(paths), {}, {})
    regex = re.search(r"regex: '(.*)'", proposal.yaml).group(1)
    assert _ids(regex, paths) == ids
    assert "no id appears in two splits yet" in proposal.found[0]


def test_an_id_column_is_proposed_over_names() -> None:
    paths = [f"{'train' if n < 12 else 'test'}/{n:05d}.jpg" for n in range(16)]
    extra = {p: {"subject_id": f"S{n // 2}", "width": "64"} for n, p in enumerate(paths)}
    extra[paths[-1]]["subject_id"] = "S0"  # subject 0 in test too
    proposal = groupids.propose(_splits(paths), {}, extra)
    assert proposal.column == "subject_id" and "groups:" not in proposal.yaml
    # A subject id names a person: init counts such ids and shows none (the check shows pseudonyms).
    assert "1 id appears in more than one split (test and train)" in proposal.found[0]
    assert "S0" not in " ".join(proposal.found)


def test_classes_are_never_groups() -> None:
    """ImageNet: the synset is the class folder and the name's first token; it is in every split."""
    paths = [f"{split}/n0{c}/n0{c}_{k}.JPEG" for split in ("train", "val") for c in range(4) for k in range(3)]
    labels = {p: p.split("/")[1] for p in paths}
    proposal = groupids.propose(_splits(paths), labels, {})
    assert proposal.yaml == "" and proposal.column is None
    assert "classes" in proposal.note


def test_a_label_column_is_never_a_group() -> None:
    paths = [f"{'train' if n < 12 else 'test'}/img{n}.jpg" for n in range(16)]
    extra = {p: {"label": f"c{n % 3}", "class_id": f"{n % 3}"} for n, p in enumerate(paths)}
    assert groupids.propose(_splits(paths), {p: e["label"] for p, e in extra.items()}, extra).yaml == ""


def test_shard_folders_every_split_has_are_never_groups() -> None:
    paths = [f"{split}/{shard:03d}/img_{split}{shard}{k}.jpg" for split in ("train", "test") for shard in range(4)
             for k in range(3)]
    proposal = groupids.propose(_splits(paths), {p: p.split("/")[1] for p in paths}, {})
    assert proposal.yaml == "" and "shard" in proposal.note


def test_unique_names_give_a_reason_not_a_rule() -> None:
    paths = [f"{'train' if n < 12 else 'test'}/item{n:05d}_x.jpg" for n in range(16)]
    proposal = groupids.propose(_splits(paths), {}, {})
    assert proposal.yaml == "" and "too few repeat" in proposal.note


# --------------------------------------------------------------------------
# Issue 37: only groups init can defend


def _day_names(make, days: int = 6, per_day: int = 4) -> list[str]:
    """Names made from (day, shot); days alternate between train and test, so a day-long group crosses splits."""
    return [f"{'train' if (d + k) % 3 else 'test'}/{make(d, k)}" for d in range(days) for k in range(per_day)]


@pytest.mark.parametrize("make", [
    lambda d, k: f"Screenshot-2023-{10 + d // 3:02d}-{11 + d:02d}-{1 + k:02d}{18 + d:02d}45.png",
    lambda d, k: f"IMG_202207{11 + d:02d}_{k:02d}{17 + d:02d}09_x.jpg",
    lambda d, k: f"202207{11 + d:02d}_{k:02d}07{10 + d:02d}_a.jpg",
    lambda d, k: f"2023-07-{11 + d:02d}_{k:02d}-07-{10 + d:02d}_cam.jpg",
    lambda d, k: f"frame{d:04d}_{k}_x.jpg",
], ids=["screenshot", "phone", "capture-time", "iso-date", "frame-counter"])
def test_dates_times_and_generic_words_are_never_ids(make) -> None:
    """`Screenshot-2023-10-25-011845`, `IMG_20220723_…`, `20220709_000708`: a day or a device, not a subject."""
    paths = _day_names(make)
    proposal = groupids.propose(_splits(paths), {}, {})
    assert proposal.yaml == "", proposal.yaml
    assert "dates, times or generic words" in proposal.note


def test_token_kinds_read_the_whole_name() -> None:
    from pytest_leakcheck.init import nametokens

    assert nametokens.kinds(nametokens.tokens("Screenshot-2023-10-25-011845.png")) == [
        "generic", "date", "date", "date", "time"]
    assert nametokens.kinds(nametokens.tokens("IMG_20220723_011709.jpg")) == ["generic", "date", "time"]
    # Not calendar days: a PCB id, a VOC id, a patient number.
    assert nametokens.not_an_id("20085000", "20085000_temp.jpg") is None
    assert nametokens.not_an_id("2008_000008", "2008_000008_x.jpg") is None
    assert nametokens.not_an_id("patient_0001", "patient_0001_slice1.jpg") is None
    assert nametokens.not_an_id("IMG_20220723", "IMG_20220723_011709.jpg") == "a date"



@pytest.mark.parametrize("exported", [False, True], ids=["plain", "roboflow"])
def test_a_six_digit_day_shared_by_the_ids_is_no_id(exported: bool) -> None:
    """``<class>_<DDMMYY>_<shot>`` (a held-out export of skin photos: ``Leprosy_210823_57``,
    ``Non_Leprosy_210823_51``): the ids before the shot number share the day 210823, so each is a class
    and a day; init proposed them and warned of a group of 459 of 1,598 files.  Ids that merely hold
    six digits (``case_123456``, no calendar day, different in every id) stay ids."""
    words = ["Leprosy", "Non_Leprosy", "Non-lep", "Leprosy150963"]
    names = [f"{w}_210823_{k}" for w in words for k in range(12)]
    paths = [f"{'train' if n % 4 else 'test'}/{_rf(name, n % 5) if exported else name + '.jpg'}"
             for n, name in enumerate(names)]
    proposal = groupids.propose(_splits(paths), {}, {})
    assert "210823" not in proposal.yaml and "regex" not in proposal.yaml, proposal.yaml
    if exported:
        assert "source_name: roboflow" in proposal.yaml
    else:
        assert "hold the day 210823" in proposal.note
    cases = [f"{'train' if s < 8 else 'test'}/case_{123456 + 7 * s}_{k}.jpg" for s in range(10) for k in range(3)]
    regex = re.search(r"regex: '(.*)'", groupids.propose(_splits(cases), {}, {}).yaml).group(1)
    assert _ids(regex, cases) == {f"case_{123456 + 7 * s}" for s in range(10)}


RF = "0123456789abcdef0123456789abcdef"


def _rf(source: str, n: int, ext: str = "jpg") -> str:
    return f"{source}_{ext}.rf.{RF[n:] + RF[:n]}.jpg"


def test_roboflow_source_names_are_groups_and_phone_edits_fold() -> None:
    """`IMG_E2447` is an edit of `IMG_2447`: one photograph in two splits; augmented copies share a source."""
    paths = [f"train/{_rf(f'IMG_{2440 + s}', k)}" for s in range(8) for k in range(3)]
    paths += [f"test/{_rf('IMG_E2447', 5)}", f"test/{_rf('IMG_2460', 1)}", f"test/{_rf('IMG_2461', 2)}"]
    proposal = groupids.propose(_splits(paths), {}, {})
    assert "  - source_name: roboflow\n" in proposal.yaml and "regex" not in proposal.yaml
    assert "1 id appears in more than one split (test and train), e.g. IMG_2447" in proposal.found[0]
    assert proposal.found[1].startswith("files per group: ")


def test_roboflow_bare_numbers_are_not_ids() -> None:
    """`25_jpg.rf.…` in val and in train are two different X-rays: numbered uploads reuse numbers."""
    paths = [f"{'train' if n % 4 else 'test'}/{_rf(str(n % 30), n % 7)}" for n in range(90)]
    proposal = groupids.propose(_splits(paths), {}, {})
    assert proposal.yaml == "" and "bare numbers" in proposal.note


def test_roboflow_capture_times_are_photographs() -> None:
    """A source that is a capture time to the second (`20220709_000708`) names one photo: a group of its copies."""
    paths = [f"train/{_rf(f'20220709_0007{s:02d}', k)}" for s in range(10) for k in range(2)]
    paths.append(f"test/{_rf('20220709_000703', 3)}")
    proposal = groupids.propose(_splits(paths), {}, {})
    assert "source_name: roboflow" in proposal.yaml
    assert "e.g. 20220709_000703" in proposal.found[0]


def test_a_named_id_column_is_proposed_when_few_ids_repeat() -> None:
    """One image per subject and split: the subject in two splits is the only repeat, and the leak."""
    paths = [f"{'train' if n < 40 else 'test'}/{n:05d}.png" for n in range(51)]
    extra = {p: {"subject_id": f"sub{n}"} for n, p in enumerate(paths)}
    extra[paths[-1]]["subject_id"] = "sub3"
    proposal = groupids.propose(_splits(paths), {}, extra)
    assert proposal.column == "subject_id"
    assert "1 id appears in more than one split" in proposal.found[0] and "sub3" not in " ".join(proposal.found)


def test_the_proposal_says_group_sizes_and_warns_on_a_large_group() -> None:
    paths = [f"{'train' if n < 72 else 'test'}/subj{0 if n < 30 else n // 3:03d}_{n}.jpg" for n in range(90)]
    proposal = groupids.propose(_splits(paths), {}, {})
    assert "files per group: " in proposal.found[1] and "largest: subj000 30" in proposal.found[1]
    assert len(proposal.warnings) == 1 and "subj000 would hold 30 of 90 files (33%)" in proposal.warnings[0]
    even = [f"{'train' if n < 72 else 'test'}/subj{n // 3:03d}_{n}.jpg" for n in range(90)]
    assert groupids.propose(_splits(even), {}, {}).warnings == ()


def test_a_lone_dated_name_does_not_hide_real_ids_and_units_are_ids() -> None:
    """One stray `IMG_20220723_…` (a group of one) leaves patient ids proposed; `video12` is a video, not a word."""
    paths = [f"{'train' if s < 8 else 'test'}/patient_{s:04d}_slice{k}.jpg" for s in range(10) for k in range(3)]
    proposal = groupids.propose(_splits([*paths, "test/IMG_20220723_011709_x.jpg"]), {}, {})
    assert "regex" in proposal.yaml and "patient_0001" in proposal.found[0]
    videos = [f"{'train' if v < 6 else 'test'}/video{v}_frame{k:03d}.jpg" for v in range(8) for k in range(4)]
    assert "e.g. video0, video1" in groupids.propose(_splits(videos), {}, {}).found[0]


def test_phone_edits_copied_off_the_phone_are_one_photograph() -> None:
    """`IMG_E2447.JPG` in test, `IMG_2447.JPG` in train: one photo, proposed as `source_name: phone`."""
    paths = [f"train/IMG_{2440 + n}.JPG" for n in range(12)] + ["test/IMG_E2447.JPG", "test/IMG_2470.HEIC"]
    proposal = groupids.propose(_splits(paths), {}, {})
    assert "  - source_name: phone\n" in proposal.yaml
    assert "1 id appears in more than one split (test and train), e.g. IMG_2447" in proposal.found[0]
    # Without any edit beside its photo, the counter names each photo once: nothing to group.
    plain = [f"{'train' if n < 9 else 'test'}/IMG_{2440 + n}.JPG" for n in range(12)]
    assert "source_name" not in groupids.propose(_splits(plain), {}, {}).yaml


def test_a_subject_column_comes_before_export_names() -> None:
    paths = [f"{'train' if n < 12 else 'test'}/{_rf(f'IMG_{2440 + n}', n % 5)}" for n in range(16)]
    extra = {p: {"subject_id": f"S{n // 4}"} for n, p in enumerate(paths)}
    assert groupids.propose(_splits(paths), {}, extra).column == "subject_id"


def test_frames_of_a_video_are_grouped_by_their_video() -> None:
    """Roboflow's frames of a video (`<video>-mp4-t-<s>`) each have a source of their own: the video is
    the group, and every video in both splits is said before the first check."""
    paths = [f"{'test' if t % 5 == 0 else 'train'}/{_rf(f'{video}-mp4-t-{t}', t % 7)}"
             for video in ("menu", "match1", "match2") for t in range(20)]
    proposal = groupids.propose(_splits(paths), {}, {})
    assert "  - source_name: video\n" in proposal.yaml
    assert "3 ids appear in more than one split (test and train), e.g. match1" in proposal.found[0]
    # A dataset cut mostly from one recording gets no video rule: it would hold most of every split.
    one = [f"{'test' if t % 5 == 0 else 'train'}/{_rf(f'{video}-mp4-t-{t}', t % 7)}"
           for video, n in (("drone", 50), ("walk", 10)) for t in range(n)]
    proposal = groupids.propose(_splits(one), {}, {})
    assert "  - source_name: roboflow\n" in proposal.yaml and "  - source_name: video\n" not in proposal.yaml
    assert groupids._video(list(_splits(one))).refused == "one video (drone) holds 50 of 60 frames"
    # Photos in a Roboflow export are still grouped by their source photograph.
    photos = [f"train/{_rf(f'IMG_{2440 + s}', k)}" for s in range(8) for k in range(3)]
    assert "source_name: roboflow" in groupids.propose(_splits(photos), {}, {}).yaml


def test_frames_of_recordings_split_at_random_are_grouped_by_recording() -> None:
    """A microscopy time-lapse export (held out): frames `DR-WT-561-0321_<n>` of a few recordings, split
    at random by frame, beside files named by bare numbers.  Every recording is in both splits, which
    is the leak, not a sign of classes: the frames are numbered in turn.  The bare numbers stay
    ungrouped (the rule reads 70 % of the files)."""
    paths = [f"{'valid' if (7 * k + r) % 5 == 0 else 'train'}/images/{_rf(f'DR-WT-561-03{r:02d}_{k}', k)}"
             for r in range(4) for k in range(1, 50)]
    paths += [f"train/images/{n:06d}.jpg" for n in range(80)]
    proposal = groupids.propose(_splits(paths), {}, {})
    regex = re.search(r"regex: '(.*)'", proposal.yaml).group(1)
    assert _ids(regex, paths) == {f"DR-WT-561-03{r:02d}" for r in range(4)}
    assert "4 ids appear in more than one split (train and valid)" in proposal.found[0]


def test_a_class_s_running_numbers_in_every_split_make_no_group() -> None:
    """ImageNet's names in a layout without labels (a YOLO export): the synset before a sparse running
    number is the class, in every split; it is not a subject whose shots are numbered in turn."""
    paths = [f"{split}/images/n0{c}44076{c}_{(7919 * k * (c + 3)) % 40000 + 1}.JPEG"
             for split in ("train", "val") for c in range(5) for k in range(1, 9)]
    proposal = groupids.propose(_splits(paths), {}, {})
    assert proposal.yaml == "" and "every split" in proposal.note


def test_an_id_that_is_its_class_folder_in_another_form_makes_no_group() -> None:
    """Omniglot (brendenlake/omniglot, split at random by file): `Balinese/character01/0108_07.png` is
    drawing 7 of character 0108, and every drawing of 0108 is in `Balinese/character01` and nothing
    else is.  The drawings are numbered in turn, yet the id is the class folder's name in another form,
    in every split by design: grouping by it made 133 group-split errors of 136 characters."""
    paths = [f"{'test' if (7 * c + k) % 5 == 0 else 'train'}/{alphabet}/character{c % 10 + 1:02d}/"
             f"{108 + c:04d}_{k:02d}.png" for c in range(20) for alphabet in [("Balinese", "Korean")[c // 10]]
             for k in range(1, 21)]
    proposal = groupids.propose(_splits(paths), {p: p.split("/")[1] for p in paths}, {})
    assert proposal.yaml == "", proposal.yaml
    assert "class folders" in proposal.note


def test_frames_of_recordings_in_shared_class_folders_are_still_grouped() -> None:
    """Several recordings under one class folder (GTSRB's tracks): no id is its folder, the rule stays."""
    paths = [f"{'test' if (3 * r + k) % 5 == 0 else 'train'}/class{r % 2}/rec{r:02d}_{k:03d}.png"
             for r in range(6) for k in range(1, 30)]
    proposal = groupids.propose(_splits(paths), {p: p.split("/")[1] for p in paths}, {})
    regex = re.search(r"regex: '(.*)'", proposal.yaml).group(1)
    assert _ids(regex, paths) == {f"rec{r:02d}" for r in range(6)}


def _fetuses(train: int, test: int, seconds: range) -> list[str]:
    """HC18's names: `NNN_HC.png`, a second image of fetus NNN as `NNN_2HC.png`, each split numbered from 000."""
    return ([f"training_set/{n:03d}_{'' if k == 1 else k}HC.png" for n in range(train)
             for k in range(1, 3 if n in seconds else 2)] + [f"test_set/{n:03d}_HC.png" for n in range(test)])


def test_numbers_that_restart_in_each_split_are_no_subjects() -> None:
    """HC18 fetal ultrasound (rileyaquilano/Ultrasound_Final, `hc18` of benchmarks/field.py): training_set
    numbers its fetuses 000-805 and test_set numbers its own 000-334.  The leading number read as a subject
    put every test image in a group with another fetus in train: 335 false group-split errors."""
    paths = _fetuses(806, 335, range(0, 806, 4))
    splits = {p: "train" if p.startswith("training") else "test" for p in paths}
    proposal = groupids.propose(splits, {}, {})
    assert proposal.yaml == "", proposal.yaml
    assert "restart in each split (test 0-334, train 0-805)" in proposal.note


def test_numbered_subjects_split_at_random_are_still_groups() -> None:
    """The same names with one numbering over the whole set, images split at random: a subject in two
    splits is the leak, and its number runs to the same end in each split."""
    paths = [p.replace("test_set", "training_set") for p in _fetuses(300, 0, range(0, 300, 2))]
    splits = {p: "test" if i % 4 == 0 else "train" for i, p in enumerate(paths)}
    proposal = groupids.propose(splits, {}, {})
    regex = re.search(r"regex: '(.*)'", proposal.yaml).group(1)
    assert _ids(regex, paths) == {f"{n:03d}" for n in range(300)}
    assert "appear in more than one split (test and train)" in proposal.found[0]
