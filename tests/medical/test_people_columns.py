"""People named in a table column, not in any file name (held-out probe 4 of stop 57, docs/field.md):
`init` proposes the column as groups and gives counts only; the check, every format and `split`
show each person as a keyed pseudonym (`person-3f9a2c1b7d4e`), as DICOM patient ids are shown."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
from PIL import Image

PEOPLE = ("Ada_Quintero", "Bram_Okonkwo", "Cleo_Vasquez")
NEEDLES = (*PEOPLE, "Ada Quintero", "ada_quintero", "Quintero", "Okonkwo", "Vasquez")


def _people_set(root: Path, column: str = "person") -> None:
    """24 noise pictures numbered 0000-0023, each split holding pictures of all three people."""
    rng = np.random.default_rng(7)
    (root / "images").mkdir(parents=True)
    rows = []
    for i in range(24):
        pixels = (rng.random((32, 32, 3)) * 255).astype("uint8")
        Image.fromarray(pixels).resize((96, 96)).save(root / f"images/{i:04d}.png")
        rows.append((f"images/{i:04d}.png", "test" if i % 4 == 0 else "train", PEOPLE[i % 3]))
    with (root / "splits.csv").open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["path", "split", column])
        writer.writerows(rows)


def _hits(texts: list[str]) -> list[str]:
    return [t[max(0, t.find(n) - 60):t.find(n) + 60] for t in texts for n in NEEDLES if n in t]


def test_init_and_check_never_show_a_name_from_a_people_column(tmp_path: Path, run_cli) -> None:
    root = tmp_path / "faces"
    _people_set(root)
    code, out, err = run_cli("init", str(root))
    assert code == 0, err
    policy = root / "leakcheck.yaml"
    assert "manifest_column" in policy.read_text() and "person" in policy.read_text()
    assert "group ids in column person: 3 ids over 24 files" in out
    texts = [out, err, policy.read_text()]
    code, out, err = run_cli("check", "--policy", str(policy), "--format", "json",
                             "-o", str(tmp_path / "r.json"))
    assert code == 1, err
    report = json.loads((tmp_path / "r.json").read_text())
    groups = [f for f in report["findings"] if f["kind"] == "group-split"]
    assert len(groups) == 3  # every person is in both splits: found, as a pseudonym
    assert all("'person-" in f["message"] for f in groups)
    texts += [out, err, (tmp_path / "r.json").read_text()]
    for fmt in ("text", "sarif", "html", "markdown"):
        out_file = tmp_path / f"r.{fmt}"
        run_cli("check", "--policy", str(policy), "--format", fmt, "-o", str(out_file))
        texts.append(out_file.read_text())
    assert not _hits(texts), _hits(texts)[:3]
    # The new manifest keeps the user's own columns as they were; the group column it adds is pseudonyms.
    run_cli("split", "--policy", str(policy), "--test", "0.25", "-o", str(tmp_path / "new.csv"))
    rows = list(csv.DictReader((tmp_path / "new.csv").open()))
    assert len(rows) == 24 and all(r["group"].startswith("person-") for r in rows)


def test_pseudonyms_are_stable_between_checks_and_other_columns_stay_as_read(tmp_path: Path, run_cli) -> None:
    root = tmp_path / "faces"
    _people_set(root)
    run_cli("init", str(root))
    policy = str(root / "leakcheck.yaml")
    ids = []
    for _ in range(2):
        run_cli("check", "--policy", policy, "--format", "json", "-o", str(tmp_path / "r.json"))
        ids.append(sorted(f["id"] for f in json.loads((tmp_path / "r.json").read_text())["findings"]))
    assert ids[0] == ids[1]  # a baseline of these findings keeps holding
    videos = tmp_path / "videos"
    _people_set(videos, column="video")  # a video is no person: its ids are shown as the table has them
    code, out, _ = run_cli("init", str(videos))
    assert "e.g. Ada_Quintero" in out


def test_a_table_sources_people_column_is_shown_as_pseudonyms(tmp_path: Path, run_cli) -> None:
    """`columns: {group: person}` of a split table gives groups without any rule: pseudonyms too."""
    root = tmp_path / "faces"
    _people_set(root)
    (root / "leakcheck.yaml").write_text(
        "version: 1\nsplits:\n  table: {file: splits.csv, columns: {file: path, split: split, group: person}}\n"
        "group_split: error\ndetectors: {aligned: {severity: 'off'}, same_scene: {severity: 'off'}}\n")
    code, out, err = run_cli("check", "--policy", str(root / "leakcheck.yaml"), "--format", "json",
                             "-o", str(tmp_path / "r.json"))
    assert code == 1, err
    text = (tmp_path / "r.json").read_text()
    groups = [f for f in json.loads(text)["findings"] if f["kind"] == "group-split"]
    assert len(groups) == 3 and all("'person-" in f["message"] for f in groups)
    assert not _hits([out, err, text]), _hits([out, err, text])[:3]


def test_which_columns_name_people() -> None:
    from pytest_leakcheck.policy.grouprules import names_people

    people = ("person", "subject_id", "PatientName", "participant_id", "identity", "username", "celebrity")
    others = ("video", "video_name", "scene", "file_name", "filepath", "camera_name", "surface", "group", "case")
    assert all(names_people(c) for c in people) and not any(names_people(c) for c in others)


def test_a_check_without_a_store_writes_no_key_and_names_people_as_pseudonyms(tmp_path: Path, run_cli) -> None:
    """`--no-cache` writes no store, so no key file either: the run's own key names the people."""
    root = tmp_path / "faces"
    _people_set(root)
    run_cli("init", str(root))
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    code, out, err = run_cli("check", "--no-cache", "--policy", str(root / "leakcheck.yaml"), "--format", "json",
                             "-o", str(tmp_path / "r.json"))
    assert code == 1, err
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before
    text = (tmp_path / "r.json").read_text()
    groups = [f for f in json.loads(text)["findings"] if f["kind"] == "group-split"]
    assert len(groups) == 3 and all("'person-" in f["message"] for f in groups)
    assert not _hits([out, err, text]), _hits([out, err, text])[:3]
