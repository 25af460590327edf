"""Strict policy validation: every mistake exits 2 with the file, the line and a fix."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_leakcheck import EXIT_USAGE
from pytest_leakcheck.errors import PolicyError
from pytest_leakcheck.policy.load import load

GOOD = """\
version: 1
splits:
  train: [train/**]
  test: [test/**]
"""

# name -> (policy text, fragments the message must contain, line it must name or None)
BAD: dict[str, tuple[str, tuple[str, ...], int | None]] = {
    "unknown_top_key": (
        GOOD + "augmentation: [hflip]\n",
        ("`augmentation`", "unknown key", "did you mean `augmentations`?"),
        5,
    ),
    "unknown_nested_key": (
        GOOD + "detectors:\n  phash:\n    max_distanse: 4\n",
        ("`detectors.phash.max_distanse`", "unknown key", "did you mean `max_distance`?"),
        7,
    ),
    "wrong_type": (
        GOOD + "detectors:\n  phash:\n    max_distance: four\n",
        ("`detectors.phash.max_distance`", "expected an integer", "a string"),
        7,
    ),
    "wrong_type_mapping": (
        GOOD + "detectors: [phash]\n",
        ("`detectors`", "expected a mapping", "a list"),
        5,
    ),
    "threshold_out_of_range": (
        GOOD + "detectors:\n  thumbnail:\n    min_cosine: 1.5\n",
        ("`detectors.thumbnail.min_cosine`", "out of range", "from 0.5 to 1.0"),
        7,
    ),
    "distance_out_of_range": (
        GOOD + "detectors:\n  phash:\n    max_distance: 40\n",
        ("`detectors.phash.max_distance`", "out of range"),
        7,
    ),
    "bad_severity": (
        GOOD + "detectors:\n  identical_file: eror\n",
        ("`detectors.identical_file`", "did you mean `error`?"),
        6,
    ),
    "bad_yaml_syntax": (
        GOOD + "pairs:\n  compare: [train~test\n  within_split: off\n",
        ("invalid YAML",),
        7,
    ),
    "duplicate_key": (
        GOOD + "ignore: [a/**]\nignore: [b/**]\n",
        ("`ignore`", "duplicate key"),
        6,
    ),
    "duplicate_nested_key": (
        "version: 1\nsplits:\n  train: [train/**]\n  train: [test/**]\n",
        ("`splits.train`", "duplicate key"),
        4,
    ),
    "missing_version": (
        "splits:\n  train: [train/**]\n  test: [test/**]\n",
        ("missing `version`", "add `version: 1`"),
        None,
    ),
    "wrong_version": (
        GOOD.replace("version: 1", "version: 2"),
        ("`version`", "unsupported policy version 2"),
        1,
    ),
    "unknown_augmentation": (
        GOOD + "augmentations: [hflip, rot45]\n",
        ("`augmentations.1`", "'rot45'"),
        5,
    ),
    "unknown_split_in_pairs": (
        GOOD + "pairs:\n  compare: [train~tset]\n",
        ("`pairs.compare.0`", "unknown split 'tset'", "splits are: train, test"),
        6,
    ),
    "huge_integer": (
        GOOD + "detectors:\n  phash:\n    max_distance: " + "9" * 400 + "\n",
        ("`detectors.phash.max_distance`", "out of range"),
        7,
    ),
    "manifest_missing": (
        "version: 1\nsplits:\n  manifest: nowhere.csv\n",
        ("`splits.manifest`", "'nowhere.csv' not found"),
        3,
    ),
    "python_tag": (
        GOOD + "cache: !!python/object/apply:os.system ['touch PWNED']\n",
        ("invalid YAML",),
        5,
    ),
    "empty_policy": ("", ("the policy is empty",), None),
    "no_splits": ("version: 1\n", ("no splits defined",), None),
}


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "leakcheck.yaml"
    path.write_text(textwrap.dedent(text))
    return path


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_policy_exits_2_with_located_message(case: str, tmp_path: Path, run_cli) -> None:
    """The CLI prints `Error: file:line: key: problem (fix)` and exits 2, without a traceback."""
    text, fragments, line = BAD[case]
    path = _write(tmp_path, text)
    code, out, err = run_cli("check", "--policy", str(path), "--no-cache")
    assert code == EXIT_USAGE
    assert err.startswith("Error: ")
    assert "Traceback" not in err
    where = f"{path}:{line}: " if line else f"{path}: "
    assert where in err
    for fragment in fragments:
        assert fragment in err
    assert out == ""


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_policy_raises_policy_error(case: str, tmp_path: Path) -> None:
    """`policy.load` raises PolicyError carrying the path and line for the same mistakes."""
    text, _, line = BAD[case]
    path = _write(tmp_path, text)
    with pytest.raises(PolicyError) as info:
        load(path)
    assert info.value.path == str(path)
    assert info.value.line == line


def test_python_tag_is_not_executed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli
) -> None:
    """A `!!python/...` tag is rejected by the safe loader, never run."""
    monkeypatch.chdir(tmp_path)
    path = _write(tmp_path, BAD["python_tag"][0])
    assert run_cli("check", "--policy", str(path), "--no-cache")[0] == EXIT_USAGE
    assert not (tmp_path / "PWNED").exists()


def test_missing_policy_file(tmp_path: Path, run_cli) -> None:
    """A --policy that does not exist exits 2 and suggests `leakcheck init`."""
    code, _, err = run_cli("check", "--policy", str(tmp_path / "nope.yaml"))
    assert code == EXIT_USAGE
    assert f"Error: {tmp_path / 'nope.yaml'}: policy file not found" in err
    assert "leakcheck init" in err
    with pytest.raises(PolicyError, match="policy file not found"):
        load(tmp_path / "nope.yaml")


def test_no_policy_found_from_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli) -> None:
    """Without --policy and no leakcheck.yaml up to the repo root, exit 2 with a fix."""
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("check")
    assert code == EXIT_USAGE
    assert "Error: no leakcheck.yaml" in err
    assert "leakcheck init" in err


@pytest.mark.parametrize(
    ("csv_text", "fragment", "line"),
    [
        ("file,split\na.jpg,train\n", "manifest has no `path` column", 1),
        ("path,group\na.jpg,g1\n", "manifest has no `split` column", 1),
        ("path,split\na.jpg,train\n,test\n", "row with an empty path or split", 3),
    ],
)
def test_bad_manifest_exits_2(
    tmp_path: Path, run_cli, csv_text: str, fragment: str, line: int
) -> None:
    """A manifest without the required columns (or with an empty cell) names the CSV and line."""
    (tmp_path / "splits.csv").write_text(csv_text)
    path = _write(tmp_path, "version: 1\nsplits:\n  manifest: splits.csv\n")
    code, _, err = run_cli("check", "--policy", str(path), "--no-cache")
    assert code == EXIT_USAGE
    assert f"Error: {tmp_path / 'splits.csv'}:{line}: {fragment}" in err
    assert "Traceback" not in err


def test_manifest_pair_names_unknown_split(tmp_path: Path, run_cli) -> None:
    """`pairs.compare` naming a split the manifest never uses exits 2 once the manifest is read."""
    (tmp_path / "splits.csv").write_text("path,split\na.jpg,train\nb.jpg,test\n")
    path = _write(
        tmp_path, "version: 1\nsplits:\n  manifest: splits.csv\npairs:\n  compare: [train~val]\n"
    )
    code, _, err = run_cli("check", "--policy", str(path), "--no-cache")
    assert code == EXIT_USAGE
    assert "'val', which the manifest does not use" in err
    assert f"{path}:5" in err


def test_good_policy_loads_with_defaults(tmp_path: Path) -> None:
    """A minimal policy fills in defaults: every pair compared, cache beside the policy."""
    policy = load(_write(tmp_path, GOOD + "augmentations: [hflip, hflip, rot90]\n"))
    assert policy.root == tmp_path.resolve()
    assert policy.split_names == ("train", "test")
    assert policy.pairs == (("train", "test"),)
    assert policy.within_split == "warning"
    assert policy.augmentations == ("hflip", "rot90")
    assert policy.cache == (tmp_path / ".leakcheck/cache.sqlite").resolve()
    assert policy.detectors.phash.max_distance == 8


def test_integer_threshold_rejects_fraction_and_bool(tmp_path: Path) -> None:
    """`max_distance: 4.5` and `size: true` are type errors, not silently truncated."""
    with pytest.raises(PolicyError, match="expected an integer"):
        load(_write(tmp_path, GOOD + "detectors:\n  phash:\n    max_distance: 4.5\n"))
    with pytest.raises(PolicyError, match="expected an integer, got a boolean"):
        load(_write(tmp_path, GOOD + "detectors:\n  thumbnail:\n    size: true\n"))


def test_pair_may_have_spaces_around_tilde(tmp_path: Path) -> None:
    """`train ~ test` names the same pair as `train~test`."""
    policy = load(_write(tmp_path, GOOD + "pairs:\n  compare: [train ~ test]\n"))
    assert policy.pairs == (("train", "test"),)


def test_bare_off_means_off(tmp_path: Path) -> None:
    """An unquoted `off` (YAML's false) is read as the severity `off`."""
    (tmp_path / "train").mkdir()
    path = tmp_path / "leakcheck.yaml"
    path.write_text(
        "version: 1\nsplits: {train: [train/**]}\npairs: {within_split: off}\n"
        "detectors: {thumbnail: {severity: off}}\n"
    )
    policy = load(path)
    assert policy.within_split == "off"
    assert policy.detectors.thumbnail.severity == "off"
