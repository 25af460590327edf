"""`leakcheck check` and `leakcheck init`: exit codes, JSON, atomic writes, split guessing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest

from pytest_leakcheck import EXIT_CLEAN, EXIT_LEAKS, EXIT_USAGE
from pytest_leakcheck.files import atomic
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.testing import jpeg_quality, photo, save

from ..conftest import write_policy

SMALL = (64, 48)

LINK = {
    "type": "object",
    "required": ["to", "detector", "value", "orientation", "weak"],
    "properties": {
        "to": {"type": "string"},
        "detector": {"enum": ["identical-file", "identical-pixels", "phash", "thumbnail", "dhash", "aligned"]},
        "value": {"type": "number"},
        "orientation": {"type": "string"},
        "weak": {"type": "boolean"},
    },
}
MEMBER = {
    "type": "object",
    "required": ["path", "split", "digest", "link"],
    "properties": {
        "path": {"type": "string"},
        "split": {"type": "string"},
        "digest": {"type": "string"},
        "link": {"oneOf": [{"type": "null"}, LINK]},
    },
}
PAIR = {
    "type": "object",
    "required": ["a", "b", "detector", "value", "orientation", "signals"],
    "properties": {
        "detector": {"enum": ["identical-file", "identical-pixels", "phash", "thumbnail"]},
        "value": {"type": "number"},
        "orientation": {"type": "string"},
    },
}
REPORT_SCHEMA = {
    "type": "object",
    "required": [
        "schema",
        "version",
        "policy",
        "exit_code",
        "summary",
        "stats",
        "warnings",
        "findings",
    ],
    "properties": {
        "version": {"const": 1},
        "exit_code": {"enum": [0, 1]},
        "findings": {
            "type": "array",
            "items": {
                "type": "object",
                "required": [
                    "id",
                    "kind",
                    "severity",
                    "members",
                    "evidence",
                    "orientation",
                    "pairs",
                ],
                "properties": {
                    "id": {"type": "string", "pattern": "^[0-9a-f]{12}$"},
                    "kind": {
                        "enum": [
                            "identical-file",
                            "identical-pixels",
                            "near-duplicate",
                            "unreadable-image",
                            "ambiguous-file",
                            "missing-file",
                            "unassigned-file",
                        ]
                    },
                    "severity": {"enum": ["error", "warning"]},
                    "members": {"type": "array", "minItems": 1, "items": MEMBER},
                    "evidence": {"type": "object", "additionalProperties": {"type": "number"}},
                    "orientation": {"type": "string"},
                    "pairs": {"type": "array", "items": PAIR},
                },
            },
        },
    },
}


@pytest.fixture
def small_leaky(tmp_path: Path) -> Path:
    """Three train images; in test a byte copy, a re-encoded copy and a flip; one stray file."""
    for i in range(3):
        save(photo(i, SMALL), tmp_path / f"train/{i}.jpg", quality=92)
    (tmp_path / "test").mkdir()
    (tmp_path / "test/copy.jpg").write_bytes((tmp_path / "train/0.jpg").read_bytes())
    save(jpeg_quality(photo(1, SMALL), 40), tmp_path / "test/q40.jpg", quality=90)
    save(photo(2, SMALL).transpose(0), tmp_path / "test/flip.jpg", quality=92)
    save(photo(3, SMALL), tmp_path / "stray.jpg", quality=92)
    write_policy(tmp_path)
    return tmp_path


def _check(run_cli, root: Path, *args: str) -> tuple[int, str, str]:
    return run_cli("check", "--policy", str(root / "leakcheck.yaml"), "-j", "1", *args)


def test_clean_dataset_exits_0(clean_dataset: Path, run_cli) -> None:
    """No leak: exit 0 and a summary line saying so."""
    code, out, err = _check(run_cli, clean_dataset)
    assert code == EXIT_CLEAN
    assert "leakcheck: 0 errors, 0 warnings in 16 images" in out
    # Only the timing summary (issue 15), and no progress bar: stderr is not a terminal here.
    assert err.startswith("leakcheck: 16 images in ") and err.count("\n") == 1


def test_leaks_exit_1_with_text_report(small_leaky: Path, run_cli) -> None:
    """Leaks: exit 1, errors listed first with paths relative to the policy, then the fix."""
    code, out, _ = _check(run_cli, small_leaky)
    assert code == EXIT_LEAKS
    heads = [line for line in out.splitlines() if line and not line.startswith(" ")]
    assert heads[0].startswith("ERROR identical-file  train~test  [")
    assert [h for h in heads if h.startswith(("ERROR", "WARNING"))][-1].startswith("WARNING unassigned-file")
    assert "    test/copy.jpg" in out
    assert (
        "test/flip.jpg = train/2.jpg after hflip" in out
        or "train/2.jpg = test/flip.jpg after hflip" in out
    )
    assert str(small_leaky) not in out.replace(str(small_leaky / "leakcheck.yaml"), "")
    assert "leakcheck: 3 errors, 1 warning" in out
    # One fix line per failing kind (issue 15); the warning-level stray file gets none.
    assert [line for line in out.splitlines() if line.startswith("Fix")] == [
        "Fix (identical-file): keep each cluster of copies in one split: move or delete the copies, "
        "or let `leakcheck split` plan it (the moves for split folders, a repaired manifest with --keep).",
        "Fix (near-duplicate): keep each cluster of copies in one split: move or delete the copies, "
        "or let `leakcheck split` plan it (the moves for split folders, a repaired manifest with --keep); "
        "a false alarm: `leakcheck judge ID distinct --reason WHY`.",
    ]


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["check", "--jobs", "0"], "argument -j/--jobs: must be at least 1, got 0"),
        (["check", "--jobs", "many"], "argument -j/--jobs: invalid int value"),
        (["check", "--bogus"], "unrecognized arguments: --bogus"),
        (["check", "--format", "xml"], "argument --format: invalid choice"),
        ([], "the following arguments are required: COMMAND"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
    ],
)
def test_usage_errors_exit_2(
    small_leaky: Path, run_cli, monkeypatch: pytest.MonkeyPatch, argv: list[str], fragment: str
) -> None:
    """Bad options exit 2 with `Error: ...` on stderr and no traceback."""
    monkeypatch.chdir(small_leaky)
    code, out, err = run_cli(*argv)
    assert code == EXIT_USAGE
    assert "Error: " in err
    assert fragment in err
    assert "Traceback" not in err
    assert out == ""


def test_json_output_follows_the_schema(small_leaky: Path, run_cli) -> None:
    """`--format json` parses, validates against the documented fields, and carries the evidence."""
    code, out, _ = _check(run_cli, small_leaky, "--format", "json")
    assert code == EXIT_LEAKS
    data = json.loads(out)
    jsonschema.validate(data, REPORT_SCHEMA)
    assert data["exit_code"] == EXIT_LEAKS
    by_path = {m["path"]: f for f in data["findings"] for m in f["members"]}
    assert by_path["test/copy.jpg"]["kind"] == "identical-file"
    flip = by_path["test/flip.jpg"]
    assert flip["kind"] == "near-duplicate"
    assert flip["orientation"] == "hflip"
    assert {m["split"] for m in flip["members"]} == {"train", "test"}
    assert "phash_distance" in flip["evidence"] or "thumbnail_cosine" in flip["evidence"]
    assert all(len(m["digest"]) == 64 for m in flip["members"])
    assert by_path["stray.jpg"]["kind"] == "unassigned-file"
    assert data["summary"]["errors"] == 3


def test_output_file_is_written_atomically(
    small_leaky: Path, run_cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`-o FILE` writes the report; a failed write keeps the old file and leaves no temp file."""
    target = small_leaky / "out/report.json"
    code, out, err = _check(run_cli, small_leaky, "--format", "json", "-o", str(target))
    assert (code, out) == (EXIT_LEAKS, "")
    assert f"report written to {target}" in err
    written = target.read_text()
    assert json.loads(written)["findings"]

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(atomic.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        atomic.write_atomic(target, "half a report")
    assert target.read_text() == written
    assert sorted(os.listdir(target.parent)) == ["report.json"]


def test_unwritable_output_is_an_error_not_a_traceback(small_leaky: Path, run_cli) -> None:
    """`-o` into a path under a regular file exits 2 with a message."""
    (small_leaky / "blocker").write_text("")
    code, _, err = _check(run_cli, small_leaky, "-o", str(small_leaky / "blocker/report.txt"))
    assert code == EXIT_USAGE
    assert err.startswith("Error: ")
    assert "blocker" in err
    assert "Traceback" not in err


def _init(run_cli, root: Path, *args: str) -> tuple[int, str, str]:
    return run_cli("init", str(root), *args)


def test_init_guesses_split_folders(tmp_path: Path, run_cli) -> None:
    """`train/ valid/ test/` become three splits; the written policy loads and checks clean."""
    for split, name in (("train", "train"), ("val", "valid"), ("test", "test")):
        save(photo(len(split), SMALL), tmp_path / name / "a.jpg", quality=90)
    code, out, _ = _init(run_cli, tmp_path)
    assert code == EXIT_CLEAN
    assert "Wrote" in out
    policy = load(tmp_path / "leakcheck.yaml")
    assert policy.splits == (
        ("train", ("train/**",)),
        ("val", ("valid/**",)),
        ("test", ("test/**",)),
    )
    # All eight orientations, written out; same_scene at warning, with when to change it.
    assert policy.augmentations == ("hflip", "vflip", "rot90", "rot180", "rot270", "transpose", "transverse")
    text = (tmp_path / "leakcheck.yaml").read_text()
    assert "same_scene:\n    severity: warning" in text and "classification" in text and "retrieval" in text
    assert _check(run_cli, tmp_path)[0] == EXIT_CLEAN


def test_init_guesses_imagefolder_tree(tmp_path: Path, run_cli) -> None:
    """`data/train/<class>/...` and `data/val/<class>/...` become globs under data/."""
    for split in ("train", "val"):
        for cls in ("cat", "dog"):
            save(
                photo(hash((split, cls)) % 1000, SMALL),
                tmp_path / f"data/{split}/{cls}/1.jpg",
                quality=90,
            )
    assert _init(run_cli, tmp_path)[0] == EXIT_CLEAN
    policy = load(tmp_path / "leakcheck.yaml")
    assert policy.splits == (("train", ("data/train/**",)), ("val", ("data/val/**",)))
    code, out, _ = _check(run_cli, tmp_path)
    assert code == EXIT_CLEAN
    assert "in 4 images" in out


def test_init_uses_a_manifest_csv(tmp_path: Path, run_cli) -> None:
    """A CSV with `path` and `split` columns in the root becomes `splits.manifest`."""
    save(photo(1, SMALL), tmp_path / "img/a.jpg", quality=90)
    save(photo(2, SMALL), tmp_path / "img/b.jpg", quality=90)
    (tmp_path / "notes.csv").write_text("name,value\nx,1\n")
    (tmp_path / "splits.csv").write_text("path,split\nimg/a.jpg,train\nimg/b.jpg,test\n")
    assert _init(run_cli, tmp_path)[0] == EXIT_CLEAN
    policy = load(tmp_path / "leakcheck.yaml")
    assert policy.manifest == (tmp_path / "splits.csv").resolve()
    code, out, _ = _check(run_cli, tmp_path)
    assert code == EXIT_CLEAN
    assert "in 2 images" in out


def test_init_without_split_folders_exits_2(tmp_path: Path, run_cli) -> None:
    """With nothing to recognise, init exits 2 and writes nothing (no placeholder globs
    that match no file); changed on purpose by issue 15."""
    save(photo(1, SMALL), tmp_path / "photos/a.jpg", quality=90)
    code, _, err = _init(run_cli, tmp_path)
    assert code == EXIT_USAGE
    assert "no splits recognised" in err
    assert not (tmp_path / "leakcheck.yaml").exists()


def test_init_on_class_folders_not_split_yet_says_how_to_split(tmp_path: Path, run_cli) -> None:
    """Held-out probe (issue 37, the BUSI ultrasound set: benign/ malignant/ normal/, no splits): init
    said only "write leakcheck.yaml by hand", and `leakcheck split` asks for a policy; the advice now
    names the two steps that write a split keeping copies together, and they work as given."""
    for k, label in enumerate(("benign", "benign", "malignant", "normal")):
        save(photo(k, SMALL), tmp_path / label / f"{label} ({k}).png")
    code, _, err = _init(run_cli, tmp_path)
    assert code == EXIT_USAGE and "splits: {manifest: splits.csv}" in err
    assert "leakcheck split --test 0.2 -o splits.csv" in err
    write_policy(tmp_path, "version: 1\nsplits: {manifest: splits.csv}\n")
    code, _, err = run_cli("split", "--policy", str(tmp_path / "leakcheck.yaml"), "--test", "0.2",
                           "-o", str(tmp_path / "splits.csv"), "-j", "1")
    assert code == EXIT_CLEAN, err
    assert (tmp_path / "splits.csv").read_text().startswith("path,split")


def test_init_refuses_to_overwrite(tmp_path: Path, run_cli) -> None:
    """An existing policy is kept unless --force is given."""
    (tmp_path / "train").mkdir()
    write_policy(tmp_path, "version: 1\nsplits: {mine: [x/**]}\n")
    code, _, err = _init(run_cli, tmp_path)
    assert code == EXIT_USAGE
    assert "already exists" in err and "--force" in err
    assert "mine" in (tmp_path / "leakcheck.yaml").read_text()
    assert _init(run_cli, tmp_path, "--force")[0] == EXIT_CLEAN
    assert load(tmp_path / "leakcheck.yaml").split_names == ("train",)


def test_init_missing_folder_exits_2(tmp_path: Path, run_cli) -> None:
    """`leakcheck init` on a folder that does not exist exits 2."""
    code, _, err = _init(run_cli, tmp_path / "nope")
    assert code == EXIT_USAGE
    assert "does not exist" in err


def test_empty_split_is_a_policy_error(tmp_path: Path, run_cli) -> None:
    """A split whose globs match nothing is exit 2 naming the split's key, never a pass with a warning."""
    from pytest_leakcheck.testing import photo, save

    save(photo(1, (64, 48)), tmp_path / "train/a.jpg")
    (tmp_path / "leakcheck.yaml").write_text("version: 1\nsplits: {train: [train/**], test: [tset/**]}\n")
    code, _out, err = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"))
    assert code == 2
    assert "`splits.test`: split `test` has no images" in err
    assert "split `train`" not in err


def test_written_files_are_not_private(tmp_path: Path) -> None:
    """Reports and baselines are written 0644 (or the replaced file's mode), not mkstemp's 0600."""
    from pytest_leakcheck.files.atomic import write_atomic

    target = tmp_path / "report.json"
    write_atomic(target, "{}")
    assert target.stat().st_mode & 0o777 == 0o644
    target.chmod(0o664)
    write_atomic(target, "{}\n")
    assert target.stat().st_mode & 0o777 == 0o664
    assert target.read_text() == "{}\n"


def test_init_piped_into_a_reader_that_stops_early_keeps_its_policy(tmp_path: Path) -> None:
    """`leakcheck init . | head -1`: the reader closes the pipe; the policy is written all the same
    and the exit is a usage one with a line saying why, never an internal error (exit 3)."""
    import subprocess
    import sys

    from pytest_leakcheck.testing import photo, save

    for split in ("train", "test"):
        for k in range(2):
            save(photo(k + (5 if split == "test" else 0)), tmp_path / f"{split}/{k}.jpg")
    proc = subprocess.Popen([sys.executable, "-m", "pytest_leakcheck", "init", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first line
    err = proc.stderr.read().decode()
    code = proc.wait(timeout=120)
    assert (tmp_path / "leakcheck.yaml").read_text().startswith("# leakcheck policy")
    assert code == 2 and "closed the pipe" in err and "internal error" not in err
