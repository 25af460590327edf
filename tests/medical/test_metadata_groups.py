"""Groups from inside the files (issue 36): patients from DICOM headers, bursts from capture times,
proposed by init with counts, as keyed pseudonyms stable within a repository."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from pytest_leakcheck import EXIT_CLEAN, EXIT_LEAKS
from pytest_leakcheck.dataset import metagroups

from ..conftest import write_policy
from .conftest import BASE_TIME, SECRET_ID, burst_tree, dicom_tree, exif_photo

FAST = "detectors: {aligned: {severity: 'off'}, same_scene: {severity: 'off'}}\n"
GLOBS = "version: 1\nsplits: {train: [train/**], val: [val/**], test: [test/**]}\n"


def _check(run_cli, root: Path) -> tuple[int, list[dict]]:
    code, out, err = run_cli("check", "--policy", str(root / "leakcheck.yaml"), "--format", "json")
    assert code in (EXIT_CLEAN, EXIT_LEAKS), err
    return code, json.loads(out)["findings"]


@pytest.mark.slow
def test_init_proposes_the_patient_rule_and_check_finds_every_planted_leak(tmp_path: Path, run_cli) -> None:
    planted = dicom_tree(tmp_path)
    code, out, err = run_cli("init", str(tmp_path))
    assert code == EXIT_CLEAN, err
    assert "patients from DICOM PatientID: 7 patients" in out and "2 patients in more than one split" in out
    assert SECRET_ID not in out
    policy = (tmp_path / "leakcheck.yaml").read_text()
    assert "  - dicom: PatientID\n" in policy and SECRET_ID not in policy
    code, findings = _check(run_cli, tmp_path)
    assert code == EXIT_LEAKS
    splits = [f for f in findings if f["kind"] == "group-split"]
    assert len(splits) == 2 and all(f["severity"] == "error" for f in splits)
    assert all(f["message"].split("'")[1].startswith("PatientID-") for f in splits)
    pairs = [sorted(m["path"] for m in f["members"]) for f in findings if f["kind"] != "group-split"]
    for a, b in (planted["rewindowed"], planted["exported"]):
        assert any(a in p and b in p for p in pairs), (a, b, pairs)


def test_patient_groups_follow_the_header_not_the_name(tmp_path: Path, run_cli) -> None:
    dicom_tree(tmp_path)
    write_policy(tmp_path, GLOBS + FAST + "groups: [{dicom: PatientID}]\nungrouped: own-group\n")
    _, findings = _check(run_cli, tmp_path)
    spread = sorted(tuple(sorted(f["evidence"].items())) for f in findings if f["kind"] == "group-split")
    assert spread == [(("test", 1.0), ("train", 3.0))] * 2
    # Another attribute, another grouping: one study per patient here, so the same two.
    write_policy(tmp_path, GLOBS + FAST + "groups: [{dicom: StudyInstanceUID}]\nungrouped: own-group\n")
    _, findings = _check(run_cli, tmp_path)
    assert [f["message"].split("'")[1].split("-")[0] for f in findings if f["kind"] == "group-split"] == [
        "StudyInstanceUID"] * 2


@pytest.mark.slow
def test_pseudonyms_are_stable_within_a_repository_and_differ_across_keys(tmp_path: Path, run_cli) -> None:
    dicom_tree(tmp_path / "a")
    write_policy(tmp_path / "a", GLOBS + FAST + "groups: [{dicom: PatientID}]\nungrouped: own-group\n")
    ids = []
    for root in (tmp_path / "a", tmp_path / "a", tmp_path / "b"):
        if not root.exists():
            shutil.copytree(tmp_path / "a", root, ignore=shutil.ignore_patterns(".leakcheck"))
        _, findings = _check(run_cli, root)
        ids.append(sorted(f["message"].split("'")[1] for f in findings if f["kind"] == "group-split"))
    assert ids[0] == ids[1] != ids[2]
    assert (tmp_path / "a/.leakcheck/pseudonym.key").stat().st_mode & 0o077 == 0


def test_init_proposes_the_burst_rule_and_every_cross_split_burst_is_an_error(tmp_path: Path, run_cli) -> None:
    burst_tree(tmp_path)
    code, out, err = run_cli("init", str(tmp_path))
    assert code == EXIT_CLEAN, err
    assert "5 bursts of 2 or more shots within 1 s of each other (up to 4 shots), 1 in more than one split" in out
    policy = (tmp_path / "leakcheck.yaml").read_text()
    assert "  - burst: {gap: 1s}\n" in policy
    write_policy(tmp_path, GLOBS.replace("val: [val/**], ", "") + FAST + "groups: [{burst: {gap: 1s}}]\n")
    _, findings = _check(run_cli, tmp_path)
    splits = [f for f in findings if f["kind"] == "group-split"]
    assert len(splits) == 1 and splits[0]["severity"] == "error"
    assert sorted(splits[0]["evidence"].items()) == [("test", 1.0), ("train", 3.0)]
    # The two photos of one camera an hour apart, in train and test, are in no group together.
    named = {m["path"] for f in splits for m in f["members"]}
    assert not named & {"train/single_a.jpg", "test/single_b.jpg"}


def test_bursts_are_per_camera_and_cut_at_the_gap(tmp_path: Path, run_cli) -> None:
    other = ("Nikon", "Z6", "9")
    exif_photo(tmp_path / "train/a.jpg", 1, BASE_TIME)
    exif_photo(tmp_path / "test/b.jpg", 2, BASE_TIME + timedelta(milliseconds=300), other)  # another camera
    exif_photo(tmp_path / "test/c.jpg", 3, BASE_TIME + timedelta(seconds=3))  # past the gap
    exif_photo(tmp_path / "train/d.jpg", 4, BASE_TIME + timedelta(hours=1))
    exif_photo(tmp_path / "test/e.jpg", 5, BASE_TIME + timedelta(hours=1, milliseconds=900))
    write_policy(tmp_path, GLOBS.replace("val: [val/**], ", "") + FAST + "groups: [{burst: {gap: 2s}}]\n")
    _, findings = _check(run_cli, tmp_path)
    assert [sorted(m["path"] for m in f["members"]) for f in findings if f["kind"] == "group-split"] == [
        ["test/e.jpg", "train/d.jpg"]]


def test_timestamps_in_file_names_make_bursts_without_exif(tmp_path: Path, run_cli) -> None:
    from pytest_leakcheck.testing import photo, save

    names = ["train/IMG_20240517_101500_100.jpg", "train/IMG_20240517_101500_600.jpg",
             "test/IMG_20240517_101501_100.jpg", "train/IMG_20240517_111501_100.jpg",
             "test/IMG_20240517_121501_100.jpg", "train/IMG_20240517_131500_000.jpg",
             "train/IMG_20240517_131500_500.jpg"]
    for k, name in enumerate(names):
        save(photo(k, (80, 60)), tmp_path / name)
    code, out, err = run_cli("init", str(tmp_path))
    assert code == EXIT_CLEAN, err
    assert "timestamps in 7 file names" in out and "2 bursts of 2 or more shots within 1 s" in out
    assert "  - burst: {gap: 1s}\n" in (tmp_path / "leakcheck.yaml").read_text()
    write_policy(tmp_path, GLOBS.replace("val: [val/**], ", "") + FAST + "groups: [{burst: {gap: 1s}}]\n")
    _, findings = _check(run_cli, tmp_path)
    assert [sorted(m["path"] for m in f["members"]) for f in findings if f["kind"] == "group-split"] == [
        ["test/IMG_20240517_101501_100.jpg", "train/IMG_20240517_101500_100.jpg",
         "train/IMG_20240517_101500_600.jpg"]]


def test_a_copy_without_exif_joins_its_originals_burst(tmp_path: Path, run_cli) -> None:
    """Held-out: ``train/20241202_193940.jpg`` (Galaxy EXIF) and ``test/20241202_193944.jpg`` (no EXIF),
    4 s apart by name, were in no group: a file without EXIF fell under an unknown camera.  It joins
    the burst of the nearest shot of a camera named alike within the gap; one named otherwise does not."""
    from pytest_leakcheck.testing import photo, save

    stamp = BASE_TIME.strftime("%Y%m%d_%H%M%S")
    exif_photo(tmp_path / f"train/{stamp}.jpg", 1, BASE_TIME)
    save(photo(2, (96, 72)), tmp_path / f"test/{(BASE_TIME + timedelta(seconds=4)).strftime('%Y%m%d_%H%M%S')}.jpg")
    save(photo(3, (96, 72)), tmp_path / f"test/IMG_{(BASE_TIME + timedelta(seconds=3)).strftime('%Y%m%d_%H%M%S')}.jpg")
    write_policy(tmp_path, GLOBS.replace("val: [val/**], ", "") + FAST + "groups: [{burst: {gap: 10s}}]\n")
    _, findings = _check(run_cli, tmp_path)
    assert [sorted(m["path"] for m in f["members"]) for f in findings if f["kind"] == "group-split"] == [
        ["test/20240517_101504.jpg", "train/20240517_101500.jpg"]]


def test_a_camera_less_shot_joins_the_nearest_burst_and_chains_none() -> None:
    """Two cameras bursting at once: the camera-less shot goes to the nearer one, and joining it
    neither merges the two cameras nor bridges two bursts of one camera across its gap."""
    pattern, other = "00000000_000000.jpg", "img_00000000_000000.jpg"
    # Shots 0-1 camera A, 2 camera B; 3 no camera between them, nearer B; 4-5 camera A 16 s apart, 6 between.
    times = [0.0, 1.0, 5.0, 4.0, 100.0, 116.0, 108.0, 200.0, 203.0]
    cameras = [b"A", b"A", b"B", b"", b"A", b"A", b"", b"A", b""]
    patterns = [pattern] * 8 + [other]
    named = [False, False, False, True, False, False, True, False, True]
    n = metagroups.bursts(times, cameras, 10.0, patterns, named)
    assert n[3] == n[2] != n[0] == n[1]  # nearer to B's shot (1 s) than A's (3 s)
    assert n[4] != n[5] and n[6] == n[4]  # 8 s from both: the earlier; the two A bursts stay apart
    assert n[8] != n[7]  # named otherwise: not that camera's shot
    # Without patterns the old rule holds: camera-less shots burst among themselves.
    assert metagroups.bursts(times, cameras, 10.0)[3] not in (n[0], n[2])


def test_a_burst_keeps_its_id_when_a_camera_less_copy_joins_it() -> None:
    """Group ids name findings and baseline entries: a burst's id stays its camera's first shot's, a
    camera-less copy shot before it joining or not, and a burst of no camera keeps its zero tag."""
    import numpy as np

    from pytest_leakcheck.policy.grouprules import GroupRule
    from pytest_leakcheck.signals.metadata import WIDTH, pseudonym

    key, cam = b"k" * 32, bytes(range(1, WIDTH + 1))
    paths = ["train/20240517_101500.jpg", "test/20240517_101458.jpg", "test/IMG_20240517_111500.jpg",
             "test/IMG_20240517_111501.jpg"]
    t0 = 1715940900.0  # 2024-05-17 10:15:00 as if UTC, the name's reading too
    times = np.array([[t0], [np.nan], [np.nan], [np.nan]])
    tags = np.array([list(cam)] + [[0] * WIDTH] * 3, dtype=np.uint8)

    def ids(rows: list[int]) -> list[str | None]:
        values = metagroups.Values({paths[r]: n for n, r in enumerate(rows)},
                                   {"meta:burst:time": times[rows], "meta:burst:camera": tags[rows]},
                                   key, np.ones(len(rows), dtype=bool))
        return values.groups(GroupRule("burst", 10.0, "any"), [paths[r] for r in rows])

    def named(tag: bytes, t: float) -> str:
        return "burst-" + pseudonym(key, f"burst:{tag.hex()}:{t!r}").hex()[:metagroups.SHOWN]

    both = ids([0, 1, 2, 3])
    assert both[0] == both[1] == ids([0])[0] == named(cam, t0)
    assert both[2] == both[3] == named(bytes(WIDTH), t0 + 3600)


def test_name_times() -> None:
    assert metagroups.name_time("a/PXL_20230101_101500123.jpg") == metagroups.name_time("2023-01-01 10.15.00.123.jpg")
    assert metagroups.name_time("IMG_0001.jpg") is None and metagroups.name_time("20231399_101500.jpg") is None
    assert metagroups.name_time("1715940900250.jpg") == metagroups.name_time("IMG_20240517_101500_250.jpg")
    assert metagroups.name_time("0000000001.jpg") is None


def test_bad_metadata_rules_are_policy_errors(tmp_path: Path, run_cli) -> None:
    for rule, words in (("{dicom: PatientNmae}", "unknown DICOM keyword"), ("{exif: Camera}", "unknown EXIF field"),
                        ("{burst: {gap: -1}}", "expected a gap"), ("{burst: {}}", "needs `gap`"),
                        ("{burst: {gap: 2s, time: gps}}", "time")):
        write_policy(tmp_path, GLOBS + f"groups: [{rule}]\n")
        code, _, err = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"))
        assert code == 2 and words in err, (rule, err)


@pytest.mark.slow
def test_split_keeps_each_patient_in_one_split(tmp_path: Path, run_cli) -> None:
    """`leakcheck split` reads the patient rule as the check does: no patient spans the manifest's splits."""
    import csv

    import pydicom

    dicom_tree(tmp_path)
    write_policy(tmp_path, GLOBS + FAST + "groups: [{dicom: PatientID}]\nungrouped: own-group\n")
    code, _, err = run_cli("split", "--policy", str(tmp_path / "leakcheck.yaml"), "--test", "0.3", "-o",
                           str(tmp_path / "splits.csv"))
    assert code == 0, err
    rows = list(csv.DictReader((tmp_path / "splits.csv").open()))
    per: dict[str, set[str]] = {}
    for row in rows:
        file = row["path"].split("#")[0]  # the frames of a multi-frame file too
        if file.endswith(".dcm"):
            per.setdefault(str(pydicom.dcmread(tmp_path / file).PatientID), set()).add(row["split"])
    assert len(per) == 7 and all(len(s) == 1 for s in per.values()), per
    assert all(SECRET_ID not in row["group"] for row in rows)
    assert {row["group"].split("-")[0] for row in rows if ".dcm" in row["path"]} == {"PatientID"}


def test_metadata_is_read_once_and_a_new_cross_split_slice_is_found_incrementally(tmp_path: Path, run_cli) -> None:
    from pytest_leakcheck import testing_dicom as td

    from .conftest import patient

    dicom_tree(tmp_path)
    write_policy(tmp_path, GLOBS + FAST + "groups: [{dicom: PatientID}]\nungrouped: own-group\n")

    def check() -> tuple[list[dict], dict]:
        code, out, err = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "--format", "json")
        assert code == EXIT_LEAKS, err
        report = json.loads(out)
        return [f for f in report["findings"] if f["kind"] == "group-split"], report["stats"]

    check()
    found, stats = check()
    before = {f["id"] for f in found}
    assert len(before) == 2 and (stats["decoded"], stats["reused"]) == (0, 25)  # nothing read again
    td.write(tmp_path / "val/late.dcm", td.ct_slice(777), patient(0))  # patient 0 is in train
    found, stats = check()
    assert {f["id"] for f in found} > before and (stats["decoded"], stats["reused"]) == (1, 25)
    new = next(f for f in found if f["id"] not in before)
    assert sorted(new["evidence"].items()) == [("train", 3.0), ("val", 1.0)]


def test_the_owners_key_from_the_environment_wins_over_a_key_file(tmp_path: Path, run_cli, monkeypatch) -> None:
    """A key file beside a committed store is the pull request's; LEAKCHECK_PSEUDONYM_KEY is the owner's."""
    from pytest_leakcheck.store import pseudonyms

    planted = tmp_path / ".leakcheck" / "pseudonym.key"
    planted.parent.mkdir()
    planted.write_bytes(b"k" * pseudonyms.SIZE)
    assert pseudonyms.key(tmp_path / ".leakcheck/cache.sqlite") == b"k" * pseudonyms.SIZE
    monkeypatch.setenv(pseudonyms.ENV, "owner secret")
    owned = pseudonyms.key(tmp_path / ".leakcheck/cache.sqlite")
    assert owned != b"k" * pseudonyms.SIZE and owned == pseudonyms.key(None) and len(owned) == pseudonyms.SIZE


def _written(root: Path, n: int, name: Callable[[int], str] | None = None) -> None:
    """``n`` photos named by the second a script wrote them (``YYYYMMDDHHMMSS.png``), one a second."""
    from pytest_leakcheck.testing import photo, save

    for k in range(n):
        written = f"{(BASE_TIME + timedelta(days=1, seconds=k)).strftime('%Y%m%d%H%M%S')}.png"
        save(photo(k, (48, 36)), root / ("train", "test")[k % 5 == 0] / (name(k) if name else written))


def test_a_chain_of_hundreds_timed_by_names_is_no_burst_rule(tmp_path: Path, run_cli) -> None:
    """A Korean OCR set (held out, stop 50): 510 word crops named `YYYYMMDDHHMMSS`, written a second
    apart, chained into one 510-file group-split.  Init warned but proposed the rule; now it proposes
    none and says why in one line."""
    _written(tmp_path, 120, lambda k: f"IMG_20240517_1015{k // 4:02d}_{250 * (k % 4):03d}.jpg")
    code, out, err = run_cli("init", str(tmp_path))
    assert code == EXIT_CLEAN, err
    assert "burst:" not in (tmp_path / "leakcheck.yaml").read_text()
    assert ("no burst rule proposed: one chain of 120 photos 0.25 s apart over 30 s, timed by their file names: "
            "times a script wrote, not a camera's burst") in out


def test_a_long_session_of_phone_photos_is_no_burst_and_no_script(tmp_path: Path, run_cli) -> None:
    """Phone photos named by their capture second (IMG_YYYYMMDD_HHMMSS) 1 to 3 s apart for minutes (held-out
    probe 11: 335 photos of toys on one mat) chain into no burst, and init does not call them a script's."""
    seconds = [sum(1 + j % 3 for j in range(k)) for k in range(120)]
    _written(tmp_path, 120, lambda k: f"IMG_{(BASE_TIME + timedelta(seconds=seconds[k])).strftime('%Y%m%d_%H%M%S')}.jpg")
    code, out, err = run_cli("init", str(tmp_path))
    assert code == EXIT_CLEAN, err
    assert "burst:" not in (tmp_path / "leakcheck.yaml").read_text()
    assert "timed by their file names: longer than any camera's burst (one session shot without a pause" in out
    assert "a script wrote, not a camera's burst" not in out


def test_write_times_in_names_leave_the_camera_bursts_to_exif(tmp_path: Path, run_cli) -> None:
    """Beside files a script named by the second, photos with EXIF capture times in real bursts: the
    rule reads EXIF only (`time: exif`), and the check finds the one burst across splits."""
    burst_tree(tmp_path)
    _written(tmp_path, 110)
    code, out, err = run_cli("init", str(tmp_path))
    assert code == EXIT_CLEAN, err
    assert "  - burst: {gap: 1s, time: exif}\n" in (tmp_path / "leakcheck.yaml").read_text()
    assert "5 bursts of 2 or more shots within 1 s of each other (up to 4 shots), 1 in more than one split" in out
    assert ("one chain of 110 photos 1 s apart over 109 s, timed by their file names: times a script wrote, not a "
            "camera's burst; the rule reads EXIF times only (110 photos timed by their names alone") in out
    write_policy(tmp_path, GLOBS.replace("val: [val/**], ", "") + FAST
                 + "groups: [{burst: {gap: 1s, time: exif}}]\nungrouped: own-group\n")
    _, findings = _check(run_cli, tmp_path)
    assert [sorted(f["evidence"].items()) for f in findings if f["kind"] == "group-split"] == [
        [("test", 1.0), ("train", 3.0)]]


def test_a_long_chain_at_one_interval_is_no_burst_and_a_camera_s_burst_is() -> None:
    """EXIF times at one interval to the twentieth over hundreds of shots are an export stamping them as it
    goes; a camera's burst of 30 shots, or hundreds timed by EXIF at uneven spacings, stay bursts."""
    from pytest_leakcheck.init import metaprops

    def chains(times: list[float], exif: bool = True) -> list[metaprops._Chain]:
        found = metaprops._Times(tuple(map(str, times)), tuple(times), (exif,) * len(times), (b"",) * len(times))
        return metaprops._not_bursts(found, (0,) * len(times))

    assert [(c.shots, c.named) for c in chains([0.5 * k for k in range(150)])] == [(150, False)]
    assert chains([0.5 * k + 0.3 * (k % 3) for k in range(150)]) == []
    assert chains([0.2 * k for k in range(30)], exif=False) == []
    assert chains([0.2 * k for k in range(101)], exif=False)[0].named


def _git(root: Path, *args: str) -> str:
    import subprocess

    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True,
                          capture_output=True, text=True).stdout


def test_a_key_file_a_commit_added_is_never_used(tmp_path: Path, monkeypatch) -> None:
    """A pull request that force-adds ``.leakcheck/pseudonym.key`` chose the key: whoever holds it can test
    guessed patient ids against the report's pseudonyms. A tracked key is never read (held out, stop 50)."""
    from pytest_leakcheck.store import pseudonyms

    monkeypatch.delenv(pseudonyms.ENV, raising=False)
    _git(tmp_path, "init", "-q")
    planted = tmp_path / ".leakcheck" / "pseudonym.key"
    planted.parent.mkdir()
    planted.write_bytes(b"k" * pseudonyms.SIZE)
    store = tmp_path / ".leakcheck/cache.sqlite"
    assert pseudonyms.key(store) == b"k" * pseudonyms.SIZE  # untracked: this machine's own
    _git(tmp_path, "add", "-f", ".leakcheck/pseudonym.key")
    _git(tmp_path, "commit", "-qm", "a key")
    assert pseudonyms.key(store) == pseudonyms.key(None) != b"k" * pseudonyms.SIZE
    assert planted.read_bytes() == b"k" * pseudonyms.SIZE  # and never overwritten: it is the user's file


def test_a_store_in_the_dataset_root_keeps_its_key_out_of_git(tmp_path: Path, monkeypatch) -> None:
    """``cache: cache.sqlite`` puts the store in the root, a folder leakcheck did not make: the key goes to a
    folder of its own that git ignores, so `git add .` never commits it."""
    from pytest_leakcheck.store import pseudonyms

    monkeypatch.delenv(pseudonyms.ENV, raising=False)
    _git(tmp_path, "init", "-q")
    key = pseudonyms.key(tmp_path / "cache.sqlite")
    assert (tmp_path / pseudonyms.KEY_FOLDER / pseudonyms.FILE).read_bytes() == key
    assert not (tmp_path / pseudonyms.FILE).exists()
    assert _git(tmp_path, "status", "--porcelain", "--untracked-files=all") == ""
    assert pseudonyms.key(tmp_path / "cache.sqlite") == key  # stable, as the store is


def test_traps_of_one_model_at_two_sites_are_two_cameras(tmp_path: Path, run_cli) -> None:
    """Trail cameras write no serial: two of one model at StationA and StationC, shooting in one
    minute, were one burst and a false group-split error (held out: camtrapR's sample images). The
    sites in their names keep them apart; a burst of one site across splits still fails, and an
    iPhone's edit ``IMG_E`` still shares its original's site."""
    trap = ("G4", "CUDDEBACK", "")
    exif_photo(tmp_path / "train/StationA__2009-04-23__00-07-00(1).jpg", 1, BASE_TIME, trap)
    exif_photo(tmp_path / "test/StationC__2009-04-23__00-07-00(1).jpg", 2, BASE_TIME, trap)
    exif_photo(tmp_path / "train/StationB__2009-04-23__01-00-00(1).jpg", 3, BASE_TIME + timedelta(hours=1), trap)
    exif_photo(tmp_path / "test/StationB__2009-04-23__01-00-00(2).jpg", 4, BASE_TIME + timedelta(hours=1, seconds=1),
               trap)
    write_policy(tmp_path, GLOBS.replace("val: [val/**], ", "") + FAST + "groups: [{burst: {gap: 10s}}]\n")
    _, findings = _check(run_cli, tmp_path)
    assert [sorted(m["path"] for m in f["members"]) for f in findings if f["kind"] == "group-split"] == [
        ["test/StationB__2009-04-23__01-00-00(2).jpg", "train/StationB__2009-04-23__01-00-00(1).jpg"]]
    assert metagroups.site("x/IMG_E2447.JPG") == metagroups.site("IMG_2447.JPG") == b"img_"


def test_a_clock_of_whole_minutes_gets_a_minute_gap(tmp_path: Path, run_cli) -> None:
    """A trail camera stamps whole minutes: one pass shot at 17:47, 17:48 and 17:49 was cut into three
    bursts by a 1 s gap (held out: camtrapR's samples). init proposes 60 s, and says no word of
    "a script" about a pass of six shots."""
    trap = ("G4", "CUDDEBACK", "")
    for k, (split, minute) in enumerate([("train", 47), ("test", 47), ("train", 48), ("test", 48), ("train", 49),
                                         ("test", 49), ("train", 120), ("train", 120)]):
        when = BASE_TIME.replace(minute=0) + timedelta(minutes=minute)
        exif_photo(tmp_path / f"{split}/StationB__{when:%Y-%m-%d__%H-%M-%S}({k}).jpg", k, when, trap)
    code, out, err = run_cli("init", str(tmp_path))
    assert code == EXIT_CLEAN, err
    assert "  - burst: {gap: 60s}\n" in (tmp_path / "leakcheck.yaml").read_text()
    assert "a script" not in out
