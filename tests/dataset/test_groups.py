"""Group rules: every source, ungrouped modes, group-split and split-share findings, bad input."""

from __future__ import annotations

import re

import json
import textwrap
from pathlib import Path

import pytest

from pytest_leakcheck import EXIT_USAGE, check, render
from pytest_leakcheck.dataset import groups, inventory
from pytest_leakcheck.cli import main
from pytest_leakcheck.errors import PolicyError
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.report.baseline import Entry
from pytest_leakcheck.report.model import Finding, Member, Report

from ..conftest import write_policy

FILES = (
    "train/cat/part01_shot1.jpg",
    "train/cat/part01_shot2.jpg",
    "train/dog/part02_shot1.jpg",
    "test/cat/part01_shot3.jpg",
    "test/dog/part03_shot1.jpg",
    "test/dog/notes.png",
)
GLOBS = "version: 1\nsplits: {train: [train/**], test: [test/**]}\n"


def _tree(root: Path, files=FILES) -> None:
    """Zero-byte image files: rules look at names only, nothing is decoded."""
    for rel in files:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).touch()


def _resolve(root: Path, policy_text: str) -> inventory.Inventory:
    _tree(root)
    return groups.resolve(inventory.scan(load(write_policy(root, policy_text))))


def _group_by_path(inv: inventory.Inventory) -> dict[str, str | None]:
    return {r.path: r.group for r in inv.records}


def test_regex_rule(tmp_path: Path) -> None:
    """The named group `group` of a regex over the relative path is the file's group."""
    inv = _resolve(tmp_path, GLOBS + "groups:\n  - regex: '(?P<group>part\\d+)_shot\\d+'\n")
    got = _group_by_path(inv)
    assert got["train/cat/part01_shot1.jpg"] == got["test/cat/part01_shot3.jpg"] == "part01"
    assert got["test/dog/part03_shot1.jpg"] == "part03"
    assert got["test/dog/notes.png"] is None


def test_folder_depth_rule(tmp_path: Path) -> None:
    """`folder_depth: 2` takes the second folder from the root; shallower files get no group."""
    _tree(tmp_path, ("top.jpg",))
    inv = _resolve(tmp_path, "version: 1\nsplits: {train: ['**']}\ngroups:\n  - folder_depth: 2\n")
    got = _group_by_path(inv)
    assert got["train/cat/part01_shot1.jpg"] == "cat"
    assert got["test/dog/notes.png"] == "dog"
    assert got["top.jpg"] is None


def test_manifest_column_rule(tmp_path: Path) -> None:
    """`manifest_column` reads the named column of the split manifest."""
    rows = ["path,split,video"] + [f"{p},{p.split('/')[0]},v{n % 2}" for n, p in enumerate(FILES)]
    (tmp_path / "splits.csv").write_text("\n".join(rows) + "\n")
    inv = _resolve(
        tmp_path,
        "version: 1\nsplits: {manifest: splits.csv}\ngroups:\n  - manifest_column: video\n",
    )
    got = _group_by_path(inv)
    assert [got[p] for p in FILES] == [f"v{n % 2}" for n in range(len(FILES))]


def test_sidecar_csv_rule(tmp_path: Path) -> None:
    """A sidecar CSV maps path -> group; `column` picks the group column."""
    (tmp_path / "meta").mkdir()
    (tmp_path / "meta/patients.csv").write_text(
        "path,patient\ntrain/cat/part01_shot1.jpg,P7\n./test/dog/notes.png,P9\n"
    )
    inv = _resolve(tmp_path, GLOBS + "groups:\n  - csv: meta/patients.csv\n    column: patient\n")
    got = _group_by_path(inv)
    # A patient column names people: its ids are keyed pseudonyms (docs/policy-groups.md), one per patient.
    p7, p9 = got["train/cat/part01_shot1.jpg"], got["test/dog/notes.png"]
    assert re.fullmatch(r"patient-[0-9a-f]{12}", p7) and re.fullmatch(r"patient-[0-9a-f]{12}", p9) and p7 != p9
    assert got["train/dog/part02_shot1.jpg"] is None


def test_coco_rule(tmp_path: Path) -> None:
    """A COCO image field (nested keys dotted) groups files matched by `file_name` suffix."""
    coco = {
        "images": [
            {
                "id": 1,
                "file_name": "cat/part01_shot1.jpg",
                "video_id": 12,
                "meta": {"site": "north"},
            },
            {"id": 2, "file_name": "cat/part01_shot3.jpg", "video_id": 12},
            {"id": 3, "file_name": "dog/part02_shot1.jpg", "meta": {"site": "south"}},
        ],
        "annotations": [],
    }
    (tmp_path / "annotations.json").write_text(json.dumps(coco))
    text = GLOBS + "groups:\n  - coco: annotations.json\n    field: video_id\n"
    got = _group_by_path(_resolve(tmp_path, text))
    assert got["train/cat/part01_shot1.jpg"] == got["test/cat/part01_shot3.jpg"] == "12"
    assert got["train/dog/part02_shot1.jpg"] is None
    text = GLOBS + "groups:\n  - coco: annotations.json\n    field: meta.site\n"
    got = _group_by_path(_resolve(tmp_path, text))
    assert got["train/dog/part02_shot1.jpg"] == "south"


def test_first_rule_wins(tmp_path: Path) -> None:
    """Rules are tried in policy order; a later rule only fills files the earlier ones left out."""
    text = GLOBS + "groups:\n  - regex: '(?P<group>part0[12])'\n  - folder_depth: 2\n"
    got = _group_by_path(_resolve(tmp_path, text))
    assert got["train/cat/part01_shot1.jpg"] == "part01"
    assert got["test/dog/part03_shot1.jpg"] == "dog"


def test_manifest_group_column_without_rules(tmp_path: Path) -> None:
    """Without `groups:` the manifest's own `group` column still groups files."""
    rows = ["path,split,group"] + [f"{p},{p.split('/')[0]},g{n % 2}" for n, p in enumerate(FILES)]
    (tmp_path / "splits.csv").write_text("\n".join(rows) + "\n")
    inv = _resolve(tmp_path, "version: 1\nsplits: {manifest: splits.csv}\n")
    kinds = [f.kind for f in groups.findings(inv)]
    assert kinds == ["group-split", "group-split"]


@pytest.mark.parametrize(
    ("mode", "expected"), [("error", "error"), ("warning", "warning"), ("own-group", None)]
)
def test_ungrouped_modes(tmp_path: Path, mode: str, expected: str | None) -> None:
    """`ungrouped` sets the severity of ungrouped-file findings; own-group reports nothing."""
    text = (
        GLOBS
        + f"groups:\n  - regex: '(?P<group>part\\d+)'\nungrouped: {mode}\ngroup_split: 'off'\n"
    )
    found = groups.findings(_resolve(tmp_path, text))
    ungrouped = [(f.severity, f.members[0].path) for f in found if f.kind == "ungrouped-file"]
    assert ungrouped == ([] if expected is None else [(expected, "test/dog/notes.png")])


def test_group_split_finding_content(tmp_path: Path) -> None:
    """A group in two splits lists the group, counts per split and every file of it, split by split."""
    files = [f"train/part05_shot{i}.jpg" for i in range(5)] + [
        "test/part05_shot9.jpg",
        "test/part06_a.jpg",
    ]
    _tree(tmp_path, files)
    text = GLOBS + "groups:\n  - regex: '(?P<group>part\\d+)_'\ngroup_split: warning\n"
    found = groups.findings(groups.resolve(inventory.scan(load(write_policy(tmp_path, text)))))
    [f] = [f for f in found if f.kind == "group-split"]
    assert f.severity == "warning"
    assert f.evidence == {"train": 5.0, "test": 1.0}
    assert [m.split for m in f.members] == ["train"] * 5 + ["test"]
    assert f.members[-1].path == "test/part05_shot9.jpg"
    assert "'part05'" in f.message and "train 5, test 1" in f.message
    assert (
        f.id
        == groups.findings(groups.resolve(inventory.scan(load(tmp_path / "leakcheck.yaml"))))[0].id
    )


def test_group_split_json_lists_every_file_and_the_text_says_how_many_more(tmp_path: Path) -> None:
    """Held-out: a group of train 408 / test 102 listed 3 files of each split, the JSON too, and the text
    never said more existed.  The JSON lists every file; text, HTML and SARIF show a few of each split
    and say how many more."""
    files = [f"train/part07_{i:03}.jpg" for i in range(40)] + [f"test/part07_{i:03}.jpg" for i in range(40, 50)]
    _tree(tmp_path, files)
    text = GLOBS + "groups:\n  - regex: '(?P<group>part\\d+)_'\n"
    found = [f for f in groups.findings(groups.resolve(inventory.scan(load(write_policy(tmp_path, text)))))
             if f.kind == "group-split"]
    report = Report(str(tmp_path / "leakcheck.yaml"), tuple(found))
    [member_list] = [f["members"] for f in json.loads(render.render(report, "json"))["findings"]]
    assert sorted(m["path"] for m in member_list) == sorted(files)
    assert [m["split"] for m in member_list] == ["train"] * 40 + ["test"] * 10

    out = render.render(report, "text")
    assert "test/part07_040.jpg" in out and "train/part07_002.jpg" in out and "train/part07_003.jpg" not in out
    assert "... and 37 more train files, 7 more test files of this group: `--format json` lists every one" in out
    page = render.render(report, "html")
    assert "test/part07_040.jpg" in page and "... and 0 more" not in page
    related = json.loads(render.render(report, "sarif"))["runs"][0]["results"][0]["relatedLocations"]
    assert len(related) <= 50 and any("test/" in r["physicalLocation"]["artifactLocation"]["uri"] for r in related)
    assert all(r["message"]["text"].endswith(" file") for r in related)


def test_a_saved_report_with_example_files_only_says_it_lacks_the_rest() -> None:
    """A report written before every file was listed (3 of each split) says what it lacks, and where to get it."""
    members = tuple(Member(f"train/p_{i}.jpg", "train") for i in range(3)) + (Member("test/p_9.jpg", "test"),)
    f = Finding(id="0" * 12, kind="group-split", severity="error", members=members,
                evidence={"train": 408.0, "test": 102.0}, message="group 'p' has files in 2 splits")
    out = render.render(Report("x", (f,)), "text")
    assert "... and 405 more train files, 101 more test files of this group: this saved report lists only" in out


def test_a_baseline_entry_of_a_group_keeps_a_few_paths_per_split(tmp_path: Path) -> None:
    """The baseline's paths are a hint: a group of thousands of files must not fill the baseline past its bounds."""
    members = tuple(Member(f"train/p_{i}.jpg", "train") for i in range(500)) + (Member("test/p_x.jpg", "test"),)
    f = Finding(id="0" * 12, kind="group-split", severity="error", members=members)
    assert len(Entry.of(f).paths) == 4 and "test/p_x.jpg" in Entry.of(f).paths


@pytest.mark.parametrize(("splits", "hint", "not_said"), [
    ("{train: [train/**], test: [test/**]}", "`leakcheck split` prints the moves", "--keep"),
    ("{manifest: splits.csv}", "`leakcheck split --keep splits.csv -o splits.csv`", "prints the moves"),
    ("{train: ['train/*/*.jpg'], test: ['test/**']}", "-o splits.csv` writes a manifest", "--keep"),
])
def test_group_split_names_the_repair_that_fits_the_policy(tmp_path: Path, splits: str, hint: str,
                                                           not_said: str) -> None:
    """Split folders are repaired by moves, a manifest by --keep; never `--keep MANIFEST` on folders."""
    (tmp_path / "splits.csv").write_text("path,split\n" + "".join(f"{p},{p.split('/')[0]}\n" for p in FILES))
    text = f"version: 1\nsplits: {splits}\ngroups:\n  - regex: '(?P<group>part\\d+)_'\n"
    found = [f for f in groups.findings(_resolve(tmp_path, text)) if f.kind == "group-split"]
    assert found and all(hint in f.message and not_said not in f.message for f in found), found[0].message


@pytest.mark.parametrize(
    ("by", "bounds", "flagged"),
    [
        ("files", "{min: 0.4, max: 0.6}", True),  # test has 3 of 6 files: 50%, inside
        ("files", "{min: 0.1, max: 0.3}", False),
        ("groups", "{min: 0.7, max: 0.9}", True),  # test has 3 of 4 groups: 75%, inside
        ("groups", "{min: 0.1, max: 0.5}", False),
    ],
)
def test_split_share(tmp_path: Path, by: str, bounds: str, flagged: bool) -> None:
    """A split's share of files or of groups outside [min, max] is a split-share finding."""
    text = GLOBS + (
        f"groups:\n  - regex: '(?P<group>part\\d+)'\nungrouped: own-group\ngroup_split: 'off'\n"
        f"split_share:\n  by: {by}\n  severity: warning\n  test: {bounds}\n"
    )
    found = [f for f in groups.findings(_resolve(tmp_path, text)) if f.kind == "split-share"]
    assert (found == []) == flagged
    if found:
        assert found[0].severity == "warning"
        assert "split 'test'" in found[0].message and by in found[0].message


def test_check_reports_group_split_and_fails(clean_dataset: Path) -> None:
    """End to end: the core check adds group findings and fails on an error-level group-split."""
    write_policy(clean_dataset, GLOBS + "groups:\n  - regex: 'img_(?P<group>0[0-3])'\n")
    report = check(clean_dataset / "leakcheck.yaml", use_cache=False)
    kinds = {f.kind for f in report.findings}
    assert kinds == {"group-split", "ungrouped-file"}
    assert report.exit_code == 1


# --------------------------------------------------------------------------
# Bad input: exit code 2 and a message naming the file and the problem


def _run_check(root: Path, capsys) -> tuple[int, str]:
    code = main(["check", "--no-cache", "--policy", str(root / "leakcheck.yaml")])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("rule", "words"),
    [
        ("regex: '(?P<group>part\\d+'", ["malformed regular expression", "groups.0.regex"]),
        ("regex: 'part\\d+'", ["no named group `group`"]),
        ("csv: missing.csv", ["missing.csv", "not found"]),
        ("coco: missing.json\n    field: video_id", ["missing.json", "not found"]),
        ("coco: annotations.json", ["needs `field"]),
        ("folder_depth: 0", ["out of range"]),
        ("regex: 'x'\n    folder_depth: 2", ["exactly one of"]),
    ],
)
def test_bad_rule_exits_2(tmp_path: Path, capsys, rule: str, words: list[str]) -> None:
    """A broken rule is a policy error: exit 2, the policy file, line and key named."""
    _tree(tmp_path)
    (tmp_path / "annotations.json").write_text("{}")
    write_policy(tmp_path, GLOBS + "groups:\n  - " + rule + "\n")
    code, err = _run_check(tmp_path, capsys)
    assert code == EXIT_USAGE
    assert err.startswith("Error: ") and "leakcheck.yaml:" in err
    for word in words:
        assert word in err


def test_coco_not_json_exits_2(tmp_path: Path, capsys) -> None:
    """A COCO file that is not JSON names the file, the line and the problem."""
    _tree(tmp_path)
    (tmp_path / "annotations.json").write_text('{"images": [\n  {"file_name": "a.jpg",,}\n]}\n')
    write_policy(tmp_path, GLOBS + "groups:\n  - coco: annotations.json\n    field: video_id\n")
    code, err = _run_check(tmp_path, capsys)
    assert code == EXIT_USAGE
    assert "annotations.json:2" in err and "not valid JSON" in err


@pytest.mark.parametrize("source", ["manifest", "csv"])
def test_missing_column_exits_2(tmp_path: Path, capsys, source: str) -> None:
    """A manifest or sidecar CSV without the named column names the file and the column."""
    _tree(tmp_path)
    (tmp_path / "splits.csv").write_text(
        "path,split\n" + "".join(f"{p},{p.split('/')[0]}\n" for p in FILES)
    )
    (tmp_path / "groups.csv").write_text("path,patient\n")
    if source == "manifest":
        text = "version: 1\nsplits: {manifest: splits.csv}\ngroups:\n  - manifest_column: video\n"
        name = "splits.csv"
    else:
        text = GLOBS + "groups:\n  - csv: groups.csv\n"
        name = "groups.csv"
    write_policy(tmp_path, text)
    code, err = _run_check(tmp_path, capsys)
    assert code == EXIT_USAGE
    assert f"{name}:1" in err and "no `" in err and "column" in err


def test_manifest_column_needs_a_manifest(tmp_path: Path) -> None:
    """`manifest_column` with glob splits is caught when the policy loads."""
    _tree(tmp_path)
    with pytest.raises(PolicyError, match="needs a manifest"):
        load(write_policy(tmp_path, GLOBS + "groups:\n  - manifest_column: group\n"))


def test_split_share_validation(tmp_path: Path) -> None:
    """split_share bounds must name a split and have min <= max."""
    _tree(tmp_path)
    with pytest.raises(PolicyError, match="unknown split 'tset'"):
        load(write_policy(tmp_path, GLOBS + "split_share:\n  tset: {min: 0.1}\n"))
    with pytest.raises(PolicyError, match="above max"):
        load(write_policy(tmp_path, GLOBS + "split_share:\n  test: {min: 0.5, max: 0.2}\n"))
    text = textwrap.dedent(GLOBS + "split_share:\n  by: folders\n")
    with pytest.raises(PolicyError, match="by"):
        load(write_policy(tmp_path, text))


def test_many_ungrouped_files_of_one_folder_are_one_finding(tmp_path: Path) -> None:
    """Frames a rule reads beside files named by bare numbers (a held-out microscopy export: 272 of
    them) are one warning for their folder, which counts them all and lists a few; a folder with a
    handful keeps a warning a file."""
    files = [f"train/images/{n:05d}.jpg" for n in range(12)] + [f"test/images/{n:05d}.jpg" for n in range(3)]
    files += ["train/images/part01_1.jpg", "test/images/part01_2.jpg"]
    _tree(tmp_path, files)
    text = GLOBS + "groups:\n  - regex: '(?P<group>part\\d+)'\ngroup_split: 'off'\n"
    found = [f for f in groups.findings(groups.resolve(inventory.scan(load(write_policy(tmp_path, text)))))
             if f.kind == "ungrouped-file"]
    folded = [f for f in found if len(f.members) > 1]
    assert len(folded) == 1 and len(folded[0].members) == groups.UNGROUPED_SHOWN
    assert "12 files in train/images/ (train 12)" in folded[0].message
    assert sorted(f.members[0].path for f in found if f not in folded) == [
        "test/images/00000.jpg", "test/images/00001.jpg", "test/images/00002.jpg"]
