"""Tried as a new user would: `init` then `check`, no hand edit, on seven layouts and two clean trees (issue 25).

Every layout holds the same pictures (tests/layouts.py): seven planted copies
and one subject split.  The 90-degree copy is found when the policy searches
that orientation: init writes the default orientations, so with a default of
[hflip] it is the one copy left, and the test says so.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_leakcheck import EXIT_CLEAN, EXIT_LEAKS
from pytest_leakcheck.policy.load import load

from .. import layouts

ALL_TURNS = "augmentations: [hflip, vflip, rot90, rot180, rot270, transpose, transverse]"


def _run(run_cli, root: Path) -> tuple[str, int, dict]:
    code, out, err = run_cli("init", str(root))
    assert code == EXIT_CLEAN, out + err
    check, report, err = run_cli("check", "--policy", str(root / "leakcheck.yaml"), "-j", "1", "--format", "json")
    return out, check, json.loads(report)


def _linked(report: dict, a: str, b: str) -> bool:
    return any({a, b} <= {m["path"] for m in f["members"]} for f in report["findings"]
               if f["kind"] in ("identical-file", "identical-pixels", "near-duplicate"))


@pytest.mark.parametrize("kind", list(layouts.LAYOUTS))
def test_init_then_check_finds_every_planted_copy_and_the_subject_split(tmp_path: Path, run_cli, kind: str) -> None:
    root = tmp_path / kind
    where = layouts.build(kind, root, tmp_path / "scratch")
    out, code, report = _run(run_cli, root)
    assert code == EXIT_LEAKS
    assert "Found: group ids in" in out and "1 id appears in more than one split" in out, out
    turned = "rot90" in load(root / "leakcheck.yaml").augmentations
    for how, copy, original in layouts.planted():
        found = _linked(report, where[copy], where[original])
        assert found == (how != "rot90" or turned), (how, where[copy])
    splits = [f for f in report["findings"] if f["kind"] == "group-split"]
    assert len(splits) == 1
    assert {m["path"] for m in splits[0]["members"]} == {
        where[f"subject-{layouts.SPLIT_SUBJECT:02d}_frame{k:03d}.jpg"] for k in (0, 1, 9)}
    unexpected = [f for f in report["findings"] if f["severity"] == "error" and f["kind"] not in
                  ("identical-file", "identical-pixels", "near-duplicate", "group-split")]
    assert not unexpected


def test_the_turned_copy_is_found_when_all_orientations_are_searched(tmp_path: Path, run_cli) -> None:
    where = layouts.build("webdataset", tmp_path, tmp_path)
    assert run_cli("init", str(tmp_path))[0] == EXIT_CLEAN
    policy = tmp_path / "leakcheck.yaml"
    policy.write_text(re.sub(r"(?m)^augmentations: .*$", ALL_TURNS, policy.read_text()))
    code, out, _ = run_cli("check", "--policy", str(policy), "-j", "1", "--format", "json")
    copy, original = next((c, o) for how, c, o in layouts.planted() if how == "rot90")
    assert code == EXIT_LEAKS and _linked(json.loads(out), where[copy], where[original])


@pytest.mark.parametrize("make, reason", [
    (layouts.imagenet, "classes"),
    (layouts.numbered_shards, "class or shard folders"),
])
def test_clean_class_and_shard_trees_get_no_group_and_pass(tmp_path: Path, run_cli, make, reason: str) -> None:
    make(tmp_path)
    out, code, report = _run(run_cli, tmp_path)
    assert "Found: group ids" not in out
    assert "Not set up: groups: no repeated id" in out and reason in out
    assert "groups:" not in (tmp_path / "leakcheck.yaml").read_text().split("\npairs:")[0]
    assert code == EXIT_CLEAN, [f["message"] for f in report["findings"]]
