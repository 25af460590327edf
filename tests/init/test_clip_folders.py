"""Video clips in folders (``<split>/<clip>/00000.jpg``), frames split at random: ``init`` proposes the clip
folder as the group when the names are frame numbers and neighbouring frames look alike, never for class
folders of numbered photos (issue 37 item 5; benchmarks/clip_folders.py runs it on DAVIS 2016)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from pytest_leakcheck.dataset import groups, inventory
from pytest_leakcheck.init import clipfolders, clippixels, framenames, recognise
from pytest_leakcheck.policy import userregex
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.testing import photo, save

from ..conftest import write_policy

CLIPS = ("blackswan", "bmx-trees", "camel", "dog")


def _frame(clip: int, k: int) -> object:
    """Frame ``k`` of clip ``clip``: a camera panning 2 px a frame over one textured picture."""
    return photo(1000 + clip, size=(260, 120)).crop((2 * k, 0, 2 * k + 160, 120))


def _clips(root: Path, frames: int = 12, name: str = "{k:05d}.jpg", clips: tuple[str, ...] = CLIPS,
           split_of=None) -> dict[str, str]:
    """``root/<split>/<clip>/<frame>``, each frame in train or test at random (80/20): the leak."""
    rng = random.Random(0)
    out = {}
    for c, clip in enumerate(clips):
        for k in range(frames):
            split = split_of(c, k) if split_of else ("test" if rng.random() < 0.2 or k == 3 else "train")
            path = f"{split}/{clip}/{name.format(k=k, c=c)}"
            save(_frame(c, k), root / path, quality=90)
            out[path] = split
    return out


def test_clip_folders_split_at_random_are_proposed_as_groups(tmp_path: Path) -> None:
    splits = _clips(tmp_path)
    layout = recognise.detect(tmp_path)
    assert f"regex: '{clipfolders.RULE}'" in layout.groups_yaml, layout.not_set_up
    program = userregex.compile(clipfolders.RULE)  # the check reads the rule with RE2
    assert {userregex.search_group(program, p) for p in splits} == set(CLIPS)
    said = "\n".join(layout.found)
    assert "group ids in clip folders" in said and "4 ids appear in more than one split" in said
    assert "files per group: 4 of 6-20 files" in said
    assert "neighbouring frames look alike in 4 of 4 clips" in said


def test_the_check_then_finds_one_group_split_per_clip(tmp_path: Path) -> None:
    _clips(tmp_path)
    write_policy(tmp_path, recognise.policy_text(recognise.detect(tmp_path)))
    inv = groups.resolve(inventory.scan(load(tmp_path / "leakcheck.yaml")))
    found = [f for f in groups.findings(inv) if f.kind == "group-split"]
    assert sorted(m for f in found for m in CLIPS if f"'{m}'" in f.message) == sorted(CLIPS)
    assert all(f.severity == "error" for f in found) and len(found) == len(CLIPS)


def test_init_prints_the_rule_and_the_files_per_group(tmp_path: Path, run_cli) -> None:
    _clips(tmp_path)
    code, out, _ = run_cli("init", str(tmp_path))
    assert code == 0
    assert "Found: group ids in clip folders" in out and "Found: files per group: 4 of 6-20 files" in out
    assert f"  - regex: '{clipfolders.RULE}'" in (tmp_path / "leakcheck.yaml").read_text()
    assert f"  - regex: '{clipfolders.RULE}'" in (Path(__file__).parents[2] / "docs/policy-groups.md").read_text()


def test_class_folders_of_numbered_photos_are_refused_by_the_pixels(tmp_path: Path) -> None:
    """ImageFolder classes renumbered ``1.jpg, 2.jpg…`` per split (the nail field set laid out so): numbered,
    every folder name in every split, but neighbouring files are different photos."""
    seed = 0
    for split, n in (("train", 12), ("test", 4)):
        for cls in ("bluish", "healthy", "koilonychia", "terry"):
            for k in range(1, n + 1):
                seed += 1
                save(photo(seed), tmp_path / split / cls / f"{k}.jpg", quality=90)
    layout = recognise.detect(tmp_path)
    assert "regex" not in layout.groups_yaml
    note = "\n".join(layout.not_set_up)
    assert "4 folder names hold numbered files, 4 of them in more than one split" in note and "neighbouring files look alike in 0 of 4" in note


def test_too_few_frames_per_clip_is_no_clip(tmp_path: Path) -> None:
    _clips(tmp_path, frames=clipfolders.MIN_FRAMES - 1)
    assert "regex" not in recognise.detect(tmp_path).groups_yaml


def test_clips_each_in_one_split_need_no_rule(tmp_path: Path) -> None:
    """Split by clip, as DAVIS is: no folder name is under two splits, nothing to defend."""
    splits = _clips(tmp_path, split_of=lambda c, k: "test" if c == 0 else "train")
    assert "regex" not in recognise.detect(tmp_path).groups_yaml
    found = clipfolders.find(splits)
    assert found.clips is None and "no clip folder name is in two splits" in found.why


def test_named_frames_and_hashed_frames_are_frame_names(tmp_path: Path) -> None:
    assert framenames.counter("00012") == ("", 12) and framenames.counter("frame_0012") == ("frame_", 12)
    assert framenames.counter("img-7") == ("img-", 7) and framenames.counter("blackswan_2024_01") is None
    assert framenames.counter("IMG_2447_edit") is None and framenames.counter("3f9a2c1b") is None
    assert framenames.hashed("3f9a2c1b7d4e") and framenames.hashed("0b3e1f0c-9a4d-4e2b-8f1a-2c3d4e5f6a7b")
    assert not framenames.hashed("00012345") and not framenames.hashed("deadbeef") and not framenames.hashed("frame3")
    splits = _clips(tmp_path / "named", name="frame_{k:04d}.png")
    assert clipfolders.find(splits).clips is not None
    program = userregex.compile(clipfolders.RULE)
    assert userregex.search_group(program, "train/dog/0b3e1f0c9a4d.jpg") == "dog"


def test_hashed_frames_are_compared_with_their_nearest_frame(tmp_path: Path) -> None:
    """No order in hashed names: each sampled frame is judged by the most alike frame of its folder."""
    rng = random.Random(1)
    splits = _clips(tmp_path)
    renamed = {}
    for path, split in splits.items():
        new = path.rsplit("/", 1)[0] + f"/{rng.getrandbits(44):011x}f.jpg"
        (tmp_path / path).rename(tmp_path / new)
        renamed[new] = split
    found = clipfolders.find(renamed)
    assert found.clips is not None and not found.ordered
    assert clippixels.judge(tmp_path, found.clips, found.ordered).alike == len(CLIPS)


def test_one_folder_name_holding_most_frames_is_no_clip(tmp_path: Path) -> None:
    """A YOLO layout's ``<split>/images/00012.jpg``: frames of one video, but one name in every split."""
    splits = _clips(tmp_path, frames=30, clips=("images",))
    found = clipfolders.find(splits)
    assert found.clips is None and "clip folder names" in found.why


def test_one_fixed_camera_in_every_folder_is_refused(tmp_path: Path) -> None:
    """Class folders of one fixed camera: neighbours look alike, but so do frames of different folders."""
    rng = random.Random(2)
    splits = {}
    for cls in ("empty", "one", "two", "three"):
        for k in range(12):
            split = "test" if k % 4 == 0 else "train"
            path = f"{split}/{cls}/{k:04d}.jpg"
            save(_frame(0, rng.randrange(3)), tmp_path / path, quality=90)
            splits[path] = split
    found = clipfolders.find(splits)
    verdict = clippixels.judge(tmp_path, found.clips, found.ordered)
    assert not verdict.clips and "frames of different folders look as alike" in verdict.why


def test_the_pixel_check_reads_a_bounded_sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    splits = _clips(tmp_path, frames=40, clips=tuple(f"clip-{c}" for c in range(20)))
    read: list[str] = []
    thumb = clippixels.thumbnail
    monkeypatch.setattr(clippixels, "thumbnail", lambda path: read.append(path) or thumb(path))
    found = clipfolders.find(splits)
    verdict = clippixels.judge(tmp_path, found.clips, found.ordered)
    assert verdict.clips and len(read) <= clippixels.MAX_CLIPS * clippixels.PAIRS * 2 < len(splits) / 4


def test_a_subject_column_comes_before_clip_folders(tmp_path: Path) -> None:
    """A split table that names each frame's subject says more than the folders: its column stays the rule."""
    splits = _clips(tmp_path)
    rows = [f"{path},{split},subj{i % 12}" for i, (path, split) in enumerate(splits.items())]
    (tmp_path / "splits.csv").write_text("path,split,subject\n" + "\n".join(rows) + "\n")
    layout = recognise.detect(tmp_path)
    assert 'manifest_column: "subject"' in layout.groups_yaml and clipfolders.RULE not in layout.groups_yaml
