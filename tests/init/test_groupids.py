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
    assert "1 id appears in more than one split (test and train), e.g. S0" in proposal.found[0]


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
    paths = [f"{'train' if n < 12 else 'test'}/img{n:05d}_x.jpg" for n in range(16)]
    proposal = groupids.propose(_splits(paths), {}, {})
    assert proposal.yaml == "" and "too few repeat" in proposal.note
