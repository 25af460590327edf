"""Frames named after a clip with no digit (``blackswan_00012.jpg``, DAVIS pooled and split at random):
``init`` proposes no rule (classes are named alike) but says what it saw and gives the rule."""

from __future__ import annotations

import random

from pytest_leakcheck.init import framenames, groupids
from pytest_leakcheck.policy import userregex

CLIPS = ("blackswan", "bmx-trees", "car-roundabout", "dog")


def _random_split(names: list[str]) -> dict[str, str]:
    """Each name in train or test at random, 80/20, as a user splits pooled frames by file."""
    rng = random.Random(0)
    out = {}
    for name in names:
        split = "test" if rng.random() < 0.2 else "train"
        out[f"data/{split}/{name}"] = split
    return out


def test_frames_of_clips_without_a_digit_are_said_with_their_rule() -> None:
    splits = _random_split([f"{clip}_{k:05d}.jpg" for clip in CLIPS for k in range(40)])
    proposal = groupids.propose(splits, {}, {})
    assert proposal.yaml == ""  # never proposed: a prefix of letters may be a class
    assert "numbered in turn under 4 prefixes" in proposal.note and "4 in more than one split" in proposal.note
    assert framenames.RULE in proposal.note
    program = userregex.compile(framenames.RULE)  # the check reads it with RE2
    assert {userregex.search_group(program, p) for p in splits} == set(CLIPS)


def test_classes_counted_by_hand_get_no_such_note() -> None:
    """``Abyssinian_12.jpg``: class prefixes with numbers not padded as an extractor pads them."""
    splits = _random_split([f"{breed}_{k}.jpg" for breed in ("Abyssinian", "Bengal", "pug") for k in range(1, 60)])
    note = groupids.propose(splits, {}, {}).note
    assert "clips" not in note and "add a rule (docs/policy-groups.md)" in note


def test_one_counter_over_every_prefix_is_no_clip_numbering() -> None:
    """``rice_bug_00000`` to ``planthopper_00119``: one running count, not each clip's frames from its start."""
    names = [f"{bug}_{n:05d}.jpg" for i, bug in enumerate(("rice_bug", "planthopper", "leafhopper"))
             for n in range(40 * i, 40 * i + 40)]
    assert framenames.note(_random_split(names)) == ""
