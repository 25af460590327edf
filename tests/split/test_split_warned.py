"""A fresh `leakcheck split` keeps the two files of a warned link together (held-out probe 6 of issue 37).

`potato` (PlantVillage leaves, split by `leakcheck split` as `init` advises): 22 leaves shot twice
(`RS_Early.B 7244` and `7245`) were planned into train and test; each pair is a weak same-scene link,
which the plan left out, and the check of the plan then warned about all 22."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from pytest_leakcheck.cli import main
from pytest_leakcheck.split.clusters import keep_warned
from pytest_leakcheck.testing import save, scene, view

PAIR = ("leaves/shot_7244.jpg", "leaves/shot_7245.jpg")


def _unsplit(root: Path) -> Path:
    """One scene shot twice from a step aside, among other scenes; not split yet."""
    save(view(scene(7), 60, 40), root / PAIR[0], quality=92)
    save(view(scene(7), 140, 90), root / PAIR[1], quality=92)
    for k in range(10):
        save(scene(300 + k).resize((640, 480)), root / f"leaves/other_{k}.jpg", quality=90)
    (root / "leakcheck.yaml").write_text("version: 1\nsplits: {manifest: splits.csv}\n"
                                         "detectors:\n  same_scene: {severity: warning}\n")
    return root


def test_a_fresh_plan_keeps_a_scene_shot_twice_in_one_split(tmp_path: Path, capsys) -> None:
    root = _unsplit(tmp_path)
    for seed in range(6):
        out = root / f"splits_{seed}.csv"
        assert main(["split", "--policy", str(root / "leakcheck.yaml"), "--test", "0.5", "--seed", str(seed),
                     "-o", str(out)]) == 0
        with out.open() as f:
            split = {row["path"]: row["split"] for row in csv.DictReader(f)}
        assert split[PAIR[0]] == split[PAIR[1]], seed
    assert "1 warned links kept in one split" in capsys.readouterr().out


def test_warned_links_join_components_only_up_to_a_burst() -> None:
    """A chain of warned links (a fixed camera's frames) is cut where a component would pass the cap."""
    comp = np.arange(30)
    chained = keep_warned(comp, [[i, i + 1] for i in range(29)], most=10)
    assert np.bincount(chained).max() == 10 and len(set(chained[:10])) == 1
    assert list(keep_warned(np.array([0, 1, 1, 2]), [[0, 3]], most=2)) == [0, 1, 1, 0]
    assert list(keep_warned(np.array([0, 1, 1]), [[0, 1]], most=2)) == [0, 1, 1]  # 3 files: over the cap
