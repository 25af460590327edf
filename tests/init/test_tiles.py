"""Tiles named by their scene and coordinates (held out, stop 50: tiles cut from BCCD).

`bccd00352_x0288_y0192.png` is the tile at (288, 192) of scene `bccd00352`.  Split by tile, every
scene is in every split, and `init` refused the scene for it (a guard meant for classes), then
proposed two leading tokens, `bccd00352_x0288`: a column strip that parts overlapping tiles.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_leakcheck.init import groupids, tiles
from pytest_leakcheck.policy import userregex
from pytest_leakcheck.policy.load import load

SPLIT = ("train",) * 6 + ("val",) * 2 + ("test",)  # by tile: every scene in every split, as a random split puts it


def _tiled(name: str, scenes: int = 20, side: int = 3) -> list[str]:
    """``name.format(s=scene, d=scene + 1, i=row, j=column, x=offset, y=offset, t=index)`` for every tile."""
    out = []
    for s in range(scenes):
        for t in range(side * side):
            i, j = divmod(t, side)
            out.append(f"{SPLIT[t % len(SPLIT)]}/" + name.format(s=s, d=s + 1, i=i, j=j, x=96 * j, y=96 * i, t=t))
    return out


def _splits(paths: list[str]) -> dict[str, str]:
    return {p: p.split("/")[0] for p in paths}


def _read(yaml: str, paths: list[str]) -> dict[str, str | None]:
    """What the check reads with the proposed regex: RE2, as `dataset/groups.py` runs it."""
    (line,) = [ln for ln in yaml.splitlines() if ln.startswith("  - regex: ")]
    program = userregex.compile(line.removeprefix("  - regex: '").removesuffix("'"))
    return {p: userregex.search_group(program, p) for p in paths}


@pytest.mark.parametrize("name, scene", [
    ("scene{s:02d}_x{x:04d}_y{y:04d}.png", "scene{s:02d}"),
    ("bccd{s:05d}_y{y:04d}_x{x:04d}.png", "bccd{s:05d}"),
    ("scene{s:02d}_r{i}_c{j}.png", "scene{s:02d}"),
    ("scene{s:02d}_row{i}_col{j}.jpg", "scene{s:02d}"),
    ("austin_{s}_{x}_{y}.png", "austin_{s}"),
    ("slide{s}_{i}_{j}.tif", "slide{s}"),
    ("scene{s:02d}_tile_{t}.png", "scene{s:02d}"),
    ("scene{s:02d}_patch_{t:04d}.png", "scene{s:02d}"),
    ("{s:05d}_x{x:04d}_y{y:04d}.png", "{s:05d}"),  # letters say these are coordinates: the number is a picture
])
def test_the_scene_before_tile_coordinates_is_proposed_though_every_scene_is_in_every_split(
        name: str, scene: str) -> None:
    paths = _tiled(name)
    proposal = groupids.propose(_splits(paths), {}, {})
    assert proposal.found[0].startswith("group ids in tile names (the scene before "), proposal
    assert "20 ids appear in more than one split (test and train and val)" in proposal.found[0]
    read = _read(proposal.yaml, paths)
    assert all(read[p] == scene.format(s=k // 9) for k, p in enumerate(paths)), read


@pytest.mark.parametrize("name, cut", [
    ("scene{s:02d}_x{x:04d}_y{y:04d}.png", "scene00_x0000"),
    ("scene{s:02d}_r{i}_c{j}.png", "scene00_r0"),
    ("scene{s:02d}_row{i}_col{j}.png", "scene00_row0"),
    ("scene{s:02d}_tile_{t}.png", "scene00_tile"),
])
def test_a_name_id_never_ends_inside_tile_coordinates(name: str, cut: str) -> None:
    """Two leading tokens, or the id before the last coordinate, would be a strip of a scene."""
    paths = _tiled(name)
    refused = {c.where: c.refused for c in groupids.candidates(_splits(paths), {})}
    inside = [where for where, why in refused.items() if why.startswith("ends inside tile coordinates")]
    assert "file names (2 leading tokens)" in inside, refused
    assert f"({cut} of " in refused["file names (2 leading tokens)"]
    assert all(not why for where, why in refused.items() if where.startswith("tile names")), refused


def test_classes_before_two_numbers_are_no_scenes() -> None:
    """`{class}_{photo}_{crop}.jpg` in class folders: the id before two numbers is the class, in every
    split by design; it is refused as the class it is, and nothing is proposed."""
    paths = [f"{split}/cls{c}/cls{c}_{k}_{crop}.jpg" for split in ("train", "val", "test") for c in range(10)
             for k in range(4) for crop in range(3)]
    labels = {p: p.split("/")[1] for p in paths}
    proposal = groupids.propose(_splits(paths), labels, {})
    assert proposal.yaml == "" and "tile names (the scene before <number>_<number>): the ids are the classes" in (
        proposal.note)


def test_a_handful_of_ids_or_numbers_off_a_grid_are_no_tiles() -> None:
    """Flat files, no class folders: four ids before two numbers are as likely classes; numbers that
    fill no grid per id are a session and a frame, and the subject found by a leading token stays."""
    few = [f"{split}/c{c}_{k}_{crop}.jpg" for split in ("train", "test") for c in range(4) for k in range(5)
           for crop in range(3)]
    (found,) = tiles.candidates(few)
    assert found.refused == "4 ids before two numbers: as likely classes as scenes" and not found.binding
    sessions = [f"{'train' if s < 16 else 'test'}/subj{s:02d}_{(7 * s + 31 * k) % 97}_{k}.jpg"
                for s in range(20) for k in range(4)]
    proposal = groupids.propose(_splits(sessions), {}, {})
    assert proposal.found[0].startswith("group ids in file names (1 leading token): 20 ids"), proposal.found
    assert "passed over tile names (the scene before <number>_<number>): the two numbers after the ids do not " \
           "fill a grid per id" in proposal.found


@pytest.mark.parametrize("name, why", [
    ("IMG_{s:04d}_x{x}_y{y}.jpg", "a generic word and a number"),
    ("IMG_202207{d:02d}_{i}_{j}.jpg", "a date"),
    ("{s:04d}_{i}_{j}.png", "a bare number"),  # a counter before two bare numbers: nothing says tiles
])
def test_dates_generic_words_and_bare_counters_before_coordinates_are_no_scenes(name: str, why: str) -> None:
    paths = _tiled(name)
    (found,) = [c for c in groupids.candidates(_splits(paths), {}) if c.where.startswith("tile names")]
    assert why in found.refused, found.refused


def test_init_writes_the_scene_rule_the_check_reads(tmp_path: Path, run_cli) -> None:
    for p in _tiled("bccd{s:05d}_x{x:04d}_y{y:04d}.png"):
        (tmp_path / p).parent.mkdir(exist_ok=True)
        (tmp_path / p).touch()
    code, out, _ = run_cli("init", str(tmp_path))
    assert code == 0, out
    assert "Found: group ids in tile names (the scene before x<number>_y<number>): 20 ids over 180 files" in out
    regex = str(load(tmp_path / "leakcheck.yaml").groups[0].value)
    assert userregex.search_group(userregex.compile(regex), "test/bccd00007_x0192_y0096.png") == "bccd00007"


def test_init_prints_the_candidates_it_passed_over_before_its_proposal(tmp_path: Path, run_cli) -> None:
    """A rule proposed after another was refused says which and why, on screen and in the policy:
    the user sees a coarser id given up (before, only a run with no proposal named them)."""
    for s in range(20):
        for k in range(4):
            path = tmp_path / ("train" if s < 16 else "test") / f"subj{s:02d}_{(7 * s + 31 * k) % 97}_{k}.jpg"
            path.parent.mkdir(exist_ok=True)
            path.touch()
    code, out, _ = run_cli("init", str(tmp_path))
    assert code == 0, out
    said = ("passed over tile names (the scene before <number>_<number>): the two numbers after the ids do not "
            "fill a grid per id")
    assert f"Found: {said}" in out and f"#   {said}" in (tmp_path / "leakcheck.yaml").read_text()
    assert "Found: group ids in file names (1 leading token): 20 ids" in out


def test_ids_in_one_split_only_are_said_as_such() -> None:
    """A challenge's test files renamed to numbers (held out, stop 60: BreakHis' `Train/SOB_B_A-14-22549AB-100-001.png`
    names its slide, `Test/SOB_18.png` nothing).  No rule can group the test files, and none is proposed; the note
    said "found for 422 of 629 files" under "no repeated id found", as if the slides were not there."""
    slides = [f"SOB_{c}-14-{22549 + k}AB" for k, c in enumerate(("B_A", "B_F", "M_DC", "M_PC") * 2)]
    train = [f"Train/{s}-100-{k:03d}.png" for s in slides for k in range(1, 13)]  # 100 is the magnification
    test = [f"Test/SOB_{k}.png" for k in range(1, 49)]
    splits = {**{p: "train" for p in train}, **{p: "test" for p in test}}
    proposal = groupids.propose(splits, {}, {})
    assert proposal.yaml == "" and proposal.column is None
    assert proposal.note.startswith("groups: no rule proposed: the ids found name no file of some splits ("), proposal.note
    assert ("found for 96 of 144 files: every file of train and none of test (48 files, e.g. Test/SOB_1.png), "
            "named without one: no rule can group them") in proposal.note, proposal.note
