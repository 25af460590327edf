"""Id lists (`splits: {ids: ...}`): CUB-200-2011 and NABirds' images.txt + train_test_split.txt."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from pytest_leakcheck import EXIT_LEAKS, EXIT_USAGE, sources
from pytest_leakcheck.dataset.inventory import scan
from pytest_leakcheck.errors import PolicyError
from pytest_leakcheck.init import recognise
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.testing import photo

from ..conftest import write_policy


def _jpeg(path: Path, seed: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    photo(seed, (64, 48)).save(buf, "JPEG", quality=90)
    path.write_bytes(buf.getvalue())


def _cub(root: Path, n: int = 8, ids: list[str] | None = None) -> list[str]:
    """CUB_200_2011/: images/<class>/<name>.jpg, images.txt (id path), train_test_split.txt (id flag)."""
    ids = ids or [str(k + 1) for k in range(n)]
    base = root / "CUB_200_2011"
    names, flags = [], []
    for k, i in enumerate(ids):
        rel = f"00{k % 2 + 1}.Bird_{k % 2}/Bird_{k % 2}_00{k}_{100 + k}.jpg"
        _jpeg(base / "images" / rel, k)
        names.append(f"{i} {rel}\n")
        flags.append(f"{i} {0 if k % 4 == 3 else 1}\n")
    (base / "images.txt").write_text("".join(names))
    (base / "train_test_split.txt").write_text("".join(flags))
    (base / "classes.txt").write_text("1 001.Bird_0\n2 002.Bird_1\n")
    return ids


def test_init_recognises_cub_and_the_check_fails_on_a_copy_across_its_splits(tmp_path: Path, run_cli) -> None:
    """CUB-200-2011 had no split init could see: "no splits recognised" (held-out probe, issue 37 part 5)."""
    _cub(tmp_path)
    base = tmp_path / "CUB_200_2011"
    shutil.copy(base / "images/002.Bird_1/Bird_1_003_103.jpg", base / "images/001.Bird_0/copy.jpg")  # a test image
    with (base / "images.txt").open("a") as fh:
        fh.write("9 001.Bird_0/copy.jpg\n")
    with (base / "train_test_split.txt").open("a") as fh:
        fh.write("9 1\n")
    layout = recognise.detect(base)
    assert "  ids:\n" in layout.splits_yaml and 'images: "images"' in layout.splits_yaml
    assert "7 images in train, 2 in test" in "\n".join(layout.found)
    write_policy(base, recognise.policy_text(layout))
    policy = load(base / "leakcheck.yaml")
    records = {r.path: r.split for r in scan(policy).records}
    assert records["images/002.Bird_1/Bird_1_003_103.jpg"] == "test"
    assert records["images/001.Bird_0/Bird_0_000_100.jpg"] == "train"
    # Both lists are inputs: staging either re-checks everything (pre-commit, --changed-since).
    assert {p.name for p in sources.inputs(policy.split_sources, policy.root)} == {"images.txt",
                                                                                     "train_test_split.txt"}
    code, out, err = run_cli("check", "--policy", str(base / "leakcheck.yaml"), "-j", "1", "--format", "json")
    assert code == EXIT_LEAKS, err
    leaks = [f for f in json.loads(out)["findings"] if f["severity"] == "error"]
    assert [sorted(m["path"] for m in f["members"]) for f in leaks] == [
        ["images/001.Bird_0/copy.jpg", "images/002.Bird_1/Bird_1_003_103.jpg"]]


def test_nabirds_uuids_an_unmapped_flag_and_a_path_out_of_root(tmp_path: Path, run_cli) -> None:
    """NABirds' ids are UUIDs; a flag `values` does not map leaves the image in no split (unassigned), and a
    path climbing out of root is only a name: it is reported missing, never looked up."""
    ids = [f"0000{k}aaa-bbbb-cccc-dddd-eeeeeeeeeeee" for k in range(6)]
    _cub(tmp_path, ids=ids)
    base = tmp_path / "CUB_200_2011"
    (tmp_path / "secret.jpg").write_bytes(b"not inside the dataset")
    with (base / "images.txt").open("a") as fh:
        fh.write("outside ../../secret.jpg\n")
    flags = (base / "train_test_split.txt").read_text().replace(f"{ids[5]} 1", f"{ids[5]} 2")
    (base / "train_test_split.txt").write_text(flags + "outside 0\n")
    write_policy(base, 'version: 1\nsplits:\n  ids: {names: images.txt, splits: train_test_split.txt, '
                 'images: images}\n')
    code, out, err = run_cli("check", "--policy", str(base / "leakcheck.yaml"), "-j", "1", "--format", "json")
    findings = json.loads(out)["findings"]
    by_kind = {f["kind"]: [m["path"] for m in f["members"]] for f in findings}
    assert by_kind["unassigned-file"] == ["images/002.Bird_1/Bird_1_005_105.jpg"]
    assert by_kind["missing-file"] == ["images/../../secret.jpg"]
    assert "not inside the dataset" not in out + err
    assert code == EXIT_LEAKS


@pytest.mark.parametrize("spec, key, message", [
    ("{names: nope.txt, splits: s.txt}", "splits.ids.names", "id list 'nope.txt' not found"),
    ("{names: n.txt, splits: s.txt, images: ../x}", "splits.ids.images", "outside"),
    ("{names: n.txt, splits: s.txt, colour: x}", "splits.ids.colour", "unknown key"),
    ("{names: n.txt, splits: s.txt, values: {'1': 'tr ain'}}", "splits.ids.values", "split names use"),
])
def test_id_list_policy_errors_name_the_key(tmp_path: Path, spec: str, key: str, message: str) -> None:
    (tmp_path / "n.txt").write_text("1 a.jpg\n")
    (tmp_path / "s.txt").write_text("1 1\n")
    write_policy(tmp_path, f"version: 1\nsplits:\n  ids: {spec}\n")
    with pytest.raises(PolicyError) as err:
        load(tmp_path / "leakcheck.yaml")
    assert message in str(err.value) and key in str(err.value)


def test_an_id_the_names_list_lacks_stops_the_check_naming_the_line(tmp_path: Path, run_cli) -> None:
    _cub(tmp_path)
    base = tmp_path / "CUB_200_2011"
    with (base / "train_test_split.txt").open("a") as fh:
        fh.write("77 0\n")
    write_policy(base, "version: 1\nsplits:\n  ids: {names: images.txt, splits: train_test_split.txt, "
                 "images: images}\n")
    code, _, err = run_cli("check", "--policy", str(base / "leakcheck.yaml"), "-j", "1")
    assert code == EXIT_USAGE
    assert "id '77' on line 9 is not in images.txt" in err and "Traceback" not in err
