"""`leakcheck init` reads a person's word and number leading a file name (``person1004_bacteria_2935``)."""

from __future__ import annotations

import random
import re
from pathlib import Path

from pytest_leakcheck.dataset import groups, inventory
from pytest_leakcheck.files import personnames
from pytest_leakcheck.policy.load import load


def _pneumonia_layout(root: Path) -> dict[str, str]:
    """Kaggle's pneumonia X-rays re-split by file: ``person<n>_<kind>_<counter>`` (a running counter per
    kind, persons numbered from 1 in each kind) beside normal X-rays named ``IM-<n>-<k>`` and
    ``NORMAL2-IM-<n>-<k>``, most alone.
    Returns each person file's split."""
    rng = random.Random(0)
    where = {}
    counter = {"bacteria": 0, "virus": 0}
    for person in range(1, 121):
        for kind in ("bacteria", "virus"):
            for _ in range(1 + person % 3):
                counter[kind] += 1
                name = f"person{person}_{kind}_{counter[kind]}.jpeg"
                split = rng.choice(("train", "train", "train", "val", "test"))
                where[name] = split
                (root / split / "PNEUMONIA").mkdir(parents=True, exist_ok=True)
                (root / split / "PNEUMONIA" / name).touch()
    for n in range(200):  # 95 % of the normal ids hold one file: too few repeat for a rule of their own
        for k in range(1 + (n % 20 == 0)):
            for name in (f"IM-{n:04d}-{k + 1:04d}.jpeg", f"NORMAL2-IM-{n:04d}-{k + 1:04d}.jpeg"):
                split = rng.choice(("train", "train", "train", "val", "test"))
                (root / split / "NORMAL").mkdir(parents=True, exist_ok=True)
                (root / split / "NORMAL" / name).touch()
    return where


def test_init_groups_by_the_person_a_name_begins_with(tmp_path: Path, run_cli) -> None:
    """The running counter after ``person<n>_<kind>`` restarts under no id, and the person names are a
    quarter short of the token rules' share: init proposed no group, and the check passed a random split
    by file that puts most persons in two splits (a held-out probe's chest X-rays: 411 persons)."""
    where = _pneumonia_layout(tmp_path)
    code, out, _ = run_cli("init", str(tmp_path))
    assert code == 0, out
    assert "Found: group ids in file names (a person's word and number" in out, out
    assert "the other 420 files have no such id, each its own group" in out, out
    assert "person12" not in out and "e.g. person" not in out  # init gives counts for people's ids
    policy = load(tmp_path / "leakcheck.yaml")
    assert (policy.groups[0].source, policy.groups[0].value) == ("source_name", "person")
    # The kind stays in the id: bacteria and virus number their persons apart (other children).
    assert personnames.person("train/PNEUMONIA/person12_bacteria_31.jpeg") == "person12_bacteria"
    assert personnames.person("test/PNEUMONIA/person12_virus_18.jpeg") == "person12_virus"
    assert personnames.person("test/NORMAL/IM-0012-0001.jpeg") is None
    assert policy.ungrouped == "own-group"
    split_groups = [f for f in groups.findings(groups.resolve(inventory.scan(policy))) if f.kind == "group-split"]
    spanning = {re.match(r"(person\d+_[a-z]+)_", name).group(1) for name in where}
    crossing = {g for g in spanning if len({s for n, s in where.items() if n.startswith(g + "_")}) > 1}
    assert len(split_groups) == len(crossing) > 0
    assert all(f.severity == "error" for f in split_groups)
    # Each group is named by a pseudonym, never by the person's number (the files keep their names).
    assert all(re.search(r"group 'person-[0-9a-f]{12}'", f.message) for f in split_groups)
    assert not any("person" + str(n) + "_" in f.message for f in split_groups for n in range(1, 121))


def test_a_person_rule_lists_the_rule_of_the_files_it_leaves(tmp_path: Path, run_cli) -> None:
    """Where the other files have an id of their own that repeats, it is listed after the person rule."""
    for n in range(60):
        for k in range(2):
            split = ("train", "test")[(n + k * (n % 10 == 0)) % 2]  # one id in ten in both splits
            (tmp_path / split).mkdir(exist_ok=True)
            (tmp_path / split / f"patient{n}_scan_{2 * n + k}.png").touch()
            if n < 20:  # a quarter of the files: no rule of the whole set reads them
                (tmp_path / split / f"IM-{n:04d}-{k + 1:04d}.png").touch()
    code, out, _ = run_cli("init", str(tmp_path))
    assert code == 0, out
    assert "then file names (2 leading tokens) for the other 40 files" in out, out
    rules = load(tmp_path / "leakcheck.yaml").groups
    assert len(rules) == 2
    assert re.search(str(rules[1].value), "test/IM-0007-0002.png")["group"] == "IM-0007"
    assert (rules[0].source, rules[0].value) == ("source_name", "person")
    assert personnames.person("test/patient7_scan_15.png") == "patient7_scan"
