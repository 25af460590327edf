"""One patient's two eyes in two splits (`eyes` of benchmarks/field.py, docs/field.md): names that end
in a side (`951_left.jpg`, `12_R.png`, `p7_OD.jpg`) say the id before the side is a person.  `init`
proposes `source_name: laterality`, keyed with the extension (ODIR's `951_left.jpg` and EyePACS'
`951_left.jpeg` are two people); the check fails on a patient in two splits and names the patient
by a keyed pseudonym only."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pytest_leakcheck.files import sidenames
from pytest_leakcheck.init import groupids

#: Patient numbers no other text in the outputs holds.
NUMBERS = [73510 + n for n in range(8)]


def _eyes(root: Path) -> None:
    """8 ODIR patients (`.jpg`), both eyes, and 8 EyePACS patients (`.jpeg`) under the same numbers.

    ODIR patient 73510 has the left eye in train and the right in test: the one leak.  EyePACS
    73511 is in train and ODIR 73511 in test: two people, no leak.
    """
    rng = np.random.default_rng(3)
    for number in NUMBERS:
        for ext in ("jpg", "jpeg"):
            for side in ("left", "right"):
                split = "train"
                if (number, ext, side) == (73510, "jpg", "right") or (number == 73511 and ext == "jpg"):
                    split = "test"
                (root / split).mkdir(parents=True, exist_ok=True)
                pixels = (rng.random((16, 16, 3)) * 255).astype("uint8")
                Image.fromarray(pixels).resize((64, 64)).save(root / split / f"{number}_{side}.{ext}")


def test_init_proposes_the_person_before_a_side_and_the_check_fails_on_a_patient_in_two_splits(
        tmp_path: Path, run_cli) -> None:
    root = tmp_path / "fundus"
    _eyes(root)
    code, out, err = run_cli("init", str(root))
    assert code == 0, err
    policy = root / "leakcheck.yaml"
    assert "  - source_name: laterality\n" in policy.read_text()
    assert "16 ids over 32 files, 16 with several files; 1 id appears in more than one split" in out
    assert "files per group: 16 of 2-5 files" in out
    code, out, err = run_cli("check", "--policy", str(policy), "--format", "json", "-o", str(tmp_path / "r.json"))
    assert code == 1, err
    found = [f for f in json.loads((tmp_path / "r.json").read_text())["findings"] if f["kind"] == "group-split"]
    assert len(found) == 1 and found[0]["severity"] == "error"
    assert sorted(m["path"] for m in found[0]["members"]) == ["test/73510_right.jpg", "train/73510_left.jpg"]
    # The patient is a keyed pseudonym: no number in init's words, the policy or the finding's message.
    assert "'patient-" in found[0]["message"]
    said = [out, err, found[0]["message"], policy.read_text()]
    code, init_out, _ = run_cli("init", str(root), "--force")
    said.append(init_out)
    assert not [t for t in said for n in NUMBERS if str(n) in t]


@pytest.mark.parametrize("name, read", [
    ("a/951_left.jpg", ("951", "left", ".jpg")),
    ("a/951_LEFT.JPEG", ("951", "left", ".jpeg")),
    ("12-R.png", ("12", "right", ".png")),
    ("b/p7_OD.tif", ("p7", "right", ".tif")),
    ("b/p7.os.tif", ("p7", "left", ".tif")),
    ("12R.png", None),  # no separator: not a whole token
    ("b/12_lefty.jpg", None),
    ("b/12_left_2.jpg", None),  # the side does not end the name
    ("b/eye_left.jpg", None),  # no digit: names no one
])
def test_a_side_is_a_whole_token_before_the_extension(name: str, read: tuple[str, str, str] | None) -> None:
    assert sidenames.side_of(name) == read


def _splits(paths: list[str]) -> dict[str, str]:
    return {p: p.split("/")[0] for p in paths}


def test_sides_that_never_pair_under_one_id_are_no_people() -> None:
    """`_L`/`_R` that never come back under one id (each id one side) say nothing of a person."""
    paths = [f"{'train' if n < 16 else 'test'}/{n}_{'LR'[n % 2]}.png" for n in range(20)]
    proposal = groupids.propose(_splits(paths), {}, {})
    assert "laterality" not in proposal.yaml
    paired = [f"{'train' if n < 16 else 'test'}/{n // 2}_{'LR'[n % 2]}.png" for n in range(20)]
    assert "  - source_name: laterality\n" in groupids.propose(_splits(paired), {}, {}).yaml
