"""JSON nested 200,000 deep (issue 22, class 6): every JSON input is exit 2 naming the file, never
a RecursionError (exit 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_leakcheck import EXIT_CLEAN, EXIT_USAGE

from ..childcli import images as _images
from ..conftest import write_policy

DEEP = 200_000


def _deep(kind: str) -> str:
    return "[" * DEEP + "]" * DEEP if kind == "list" else '{"a":' * DEEP + "1" + "}" * DEEP


@pytest.mark.parametrize("kind", ["list", "object"])
@pytest.mark.parametrize("where", ["coco split", "metadata.jsonl", "coco group rule"])
def test_json_nested_200000_deep_is_exit_2_naming_the_file(tmp_path: Path, run_cli, kind: str, where: str) -> None:
    _images(tmp_path, ["images/a.jpg", "images/b.jpg"])
    deep = _deep(kind)
    if where == "coco split":
        (tmp_path / "train.json").write_text('{"images": ' + deep + "}")
        (tmp_path / "test.json").write_text(json.dumps({"images": [{"file_name": "images/b.jpg"}]}))
        policy = "version: 1\nsplits:\n  coco: {train: train.json, test: test.json}\n"
        name = "train.json"
    elif where == "metadata.jsonl":
        (tmp_path / "images/metadata.jsonl").write_text(
            '{"file_name": "a.jpg", "split": "train"}\n' + deep + '\n{"file_name": "b.jpg", "split": "test"}\n')
        policy = "version: 1\nsplits:\n  metadata: images/metadata.jsonl\n"
        name = "metadata.jsonl"
    else:
        (tmp_path / "ann.json").write_text('{"images": [' + deep + "]}")
        policy = ("version: 1\nsplits: {train: [images/a.jpg], test: [images/b.jpg]}\n"
                  "groups:\n  - coco: ann.json\n    field: video_id\n")
        name = "ann.json"
    write_policy(tmp_path, policy)
    code, _, err = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "--no-cache", "-j", "1")
    assert code == EXIT_USAGE, err
    # A JSON lines table refuses the over-long line before parsing it; other JSON is parsed and refused.
    assert name in err and ("nested too deep" in err or "characters long" in err) and "Traceback" not in err


def test_saved_report_nested_deep_is_exit_2(tmp_path: Path, run_cli) -> None:
    (tmp_path / "r.json").write_text('{"findings": ' + _deep("list") + "}")
    code, _, err = run_cli("render", str(tmp_path / "r.json"))
    assert code == EXIT_USAGE and "nested too deep" in err


def test_init_reads_a_deep_coco_file_without_crashing(tmp_path: Path, run_cli) -> None:
    _images(tmp_path, ["train/a.jpg", "test/b.jpg"])
    (tmp_path / "instances_train.json").write_text('{"images": ' + _deep("list") + "}")
    code, _, err = run_cli("init", str(tmp_path))
    assert code in (EXIT_CLEAN, EXIT_USAGE), err
    assert "internal error" not in err
