"""Animated GIF, PNG and WebP files: only the first frame is decoded, and the report says so."""

from __future__ import annotations

from pathlib import Path

from pytest_leakcheck import check
from pytest_leakcheck.render import render
from pytest_leakcheck.testing import photo, save

from ..conftest import write_policy


def test_animated_images_are_named_as_checked_on_their_first_frame_only(tmp_path: Path) -> None:
    """A copy in a later frame of an animated sprite is not looked for: a note counts such files."""
    for k in range(4):
        save(photo(k, (64, 64)), tmp_path / f"{'train' if k % 2 else 'test'}/p{k}.png")
    first, later = photo(10, (64, 64)), photo(11, (64, 64))
    first.save(tmp_path / "test/walk.gif", save_all=True, append_images=[later], duration=100, loop=0)
    first.save(tmp_path / "test/walk.png", save_all=True, append_images=[later, first], duration=100)
    save(photo(12, (64, 64)), tmp_path / "train/still.gif")
    write_policy(tmp_path, "version: 1\nsplits: {train: [train/**], test: [test/**]}\n")
    report = check(tmp_path / "leakcheck.yaml", use_cache=False, jobs=1)
    assert report.stats["animated"] == {"images": 2, "frames": 5, "first": "test/walk.gif"}
    assert ("note: 2 images hold several frames (animated GIF, PNG or WebP; test/walk.gif first): only the "
            "first frame of each is checked") in render(report, "text")
