"""Text made from data, one regression test per hole of issue 22 class 3.

Each writer below once passed pull-request text to its medium unescaped:
the Action's ``$GITHUB_OUTPUT``, the terminal of ``leakcheck split``, the
Markdown job summary, the export CSV, and the policy ``leakcheck init`` writes.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

from pytest_leakcheck import EXIT_CLEAN, EXIT_USAGE, check
from pytest_leakcheck.render import render
from pytest_leakcheck.testing import photo, save

from ..conftest import write_policy

_ESC = "\x1b"


def test_a_line_break_in_cache_never_reaches_github_output(tmp_path: Path, run_cli) -> None:
    """`cache: "x\\nbase=<sha>/cache.sqlite"` once printed two lines for the Action's $GITHUB_OUTPUT,
    resetting its base commit; now `fingerprint --cache-dir` refuses it, naming `cache`."""
    save(photo(1), tmp_path / "train/a.jpg")
    save(photo(2), tmp_path / "test/b.jpg")
    write_policy(tmp_path, 'version: 1\nsplits: {train: [train/**], test: [test/**]}\n'
                           'cache: ".leakcheck\\nbase=0000000000000000000000000000000000000000/cache.sqlite"\n')
    code, out, err = run_cli("fingerprint", "--policy", str(tmp_path / "leakcheck.yaml"), "--cache-dir")
    assert code == EXIT_USAGE
    assert out == ""
    assert "`cache`" in err and "\n" not in err.rstrip("\n")


def test_an_ordinary_cache_folder_is_printed_as_it_is(tmp_path: Path, run_cli) -> None:
    write_policy(tmp_path, "version: 1\nsplits: {train: [train/**], test: [test/**]}\n")
    code, out, _ = run_cli("fingerprint", "--policy", str(tmp_path / "leakcheck.yaml"), "--cache-dir")
    assert code == EXIT_CLEAN
    assert out == f"{(tmp_path / '.leakcheck').resolve()}\n"


_HOSTILE = "x\n::error::forged\x1b[2J"


def test_split_prints_no_raw_newline_escape_or_workflow_command(tmp_path: Path, run_cli) -> None:
    """A copy in test named with a newline, `::error::` and ESC: the printed move is one line,
    in bash's $'...' form, and pasting it moves exactly that file."""
    root = tmp_path / "ds"
    for i in range(4):
        save(photo(i, (64, 48)), root / f"data/train/t{i}.jpg", quality=90)
        save(photo(50 + i, (64, 48)), root / f"data/test/e{i}.jpg", quality=90)
    shutil.copyfile(root / "data/train/t0.jpg", root / f"data/test/{_HOSTILE}.jpg")
    write_policy(root, "version: 1\nsplits: {train: [data/train/**], test: [data/test/**]}\n")
    code, out, _ = run_cli("split", "--policy", str(root / "leakcheck.yaml"), "-j", "1", "--no-cache")
    assert code == EXIT_CLEAN
    assert _ESC not in out
    lines = out.splitlines()
    assert not any(line.lstrip().startswith("::") for line in lines)
    (move,) = [line for line in lines if line.startswith("mv ")]
    assert move == "mv $'data/test/x\\n::error::forged\\x1b\\x5b2J.jpg' $'data/train/x\\n::error::forged\\x1b\\x5b2J.jpg'"


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append(tag)


def test_a_manifest_split_name_puts_no_image_or_link_in_the_job_summary(tmp_path: Path) -> None:
    """The split name comes from a manifest cell: once a live image and link in the summary."""
    mistune = pytest.importorskip("mistune")
    evil = "![pwned](https://evil.example/p.png)[click](https://evil.example)"
    rows = ["path,split"]
    for i in range(3):
        save(photo(i), tmp_path / f"img/t{i}.jpg")
        rows.append(f"img/t{i}.jpg,train")
        save(photo(40 + i), tmp_path / f"img/e{i}.jpg")
        rows.append(f"img/e{i}.jpg,\"{evil}\"")
    shutil.copyfile(tmp_path / "img/t0.jpg", tmp_path / "img/copy.jpg")
    rows.append(f"img/copy.jpg,\"{evil}\"")
    (tmp_path / "splits.csv").write_text("\n".join(rows) + "\n")
    write_policy(tmp_path, "version: 1\nsplits: {manifest: splits.csv}\n")
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    assert any(f.kind == "identical-file" for f in report.findings)
    summary = render(report, "markdown")
    page = _Tags()
    page.feed(mistune.create_markdown(plugins=["url", "table", "strikethrough"])(summary))
    assert "img" not in page.tags and "a" not in page.tags, page.tags


def _export_rows(run_cli, policy: Path, out: Path) -> list[dict[str, str]]:
    code, _, err = run_cli("export", "--policy", str(policy), "--no-cache", "-j", "1", "-o", str(out))
    assert code == EXIT_CLEAN, err
    return list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))


def test_export_csv_cells_never_start_a_formula(tmp_path: Path, run_cli) -> None:
    """File, split and group names starting with = + - @ once reached the CSV as formulas."""
    names = ["=HYPERLINK(1)", "+1", "-1", "@SUM(A1)"]
    rows = ["path,split,group"]
    for i, name in enumerate(names):
        save(photo(i), tmp_path / f"{name}.jpg")
        rows.append(f"{name}.jpg,{'=train' if i % 2 else '-test'},@g{i}")
    (tmp_path / "splits.csv").write_text("\n".join(rows) + "\n")
    write_policy(tmp_path, "version: 1\nsplits: {manifest: splits.csv}\n")
    out = _export_rows(run_cli, tmp_path / "leakcheck.yaml", tmp_path / "out.csv")
    assert all(not cell.startswith(("=", "+", "-", "@")) for r in out for cell in r.values())
    assert sorted(r["path"] for r in out) == sorted(f"'{n}.jpg" for n in names)
    assert sorted(r["split"] for r in out) == ["'-test", "'-test", "'=train", "'=train"]


@pytest.mark.skipif(os.name != "posix", reason="names that are not UTF-8 need a POSIX file system")
def test_export_of_a_name_that_is_not_utf8_exits_0(tmp_path: Path, run_cli) -> None:
    save(photo(1), tmp_path / "train/a.jpg")
    save(photo(2), tmp_path / "test/b.jpg")
    os.rename(tmp_path / "test/b.jpg", os.fsencode(tmp_path / "test") + b"/\xff\xfe.jpg")
    write_policy(tmp_path, "version: 1\nsplits: {train: [train/**], test: [test/**]}\n")
    rows = _export_rows(run_cli, tmp_path / "leakcheck.yaml", tmp_path / "out.csv")
    assert sorted(r["path"] for r in rows) == ["test/\\xff\\xfe.jpg", "train/a.jpg"]


_PLANTED = "train\nexecutor: tcp://evil.example:8786\nroot: /etc"


def _init_keys(run_cli, root: Path) -> dict:
    code, out, err = run_cli("init", str(root))
    assert code == EXIT_CLEAN, err
    assert _ESC not in out and not any(line.startswith("::") for line in out.splitlines())
    return yaml.safe_load((root / "leakcheck.yaml").read_text())


def test_init_quotes_every_manifest_cell_it_writes(tmp_path: Path, run_cli) -> None:
    """A split name holding a newline and `executor:` once became a key of leakcheck.yaml."""
    rows = ["path,split"]
    for i in range(3):
        save(photo(i), tmp_path / f"img/t{i}.jpg")
        rows.append(f"img/t{i}.jpg,\"{_PLANTED}\"")
        save(photo(40 + i), tmp_path / f"img/e{i}.jpg")
        rows.append(f"img/e{i}.jpg,test")
    (tmp_path / "a\nexecutor: evil\n#.csv").write_text("\n".join(rows) + "\n")
    policy = _init_keys(run_cli, tmp_path)
    template = {"version", "splits", "pairs", "detectors", "augmentations", "files", "ignore", "cache", "baseline"}
    assert set(policy) <= template | {"groups", "ungrouped", "group_split"}
    assert policy["splits"] == {"manifest": "a\nexecutor: evil\n#.csv"}


def test_init_quotes_folder_names_it_writes_as_globs(tmp_path: Path, run_cli) -> None:
    """A folder named to close the flow list and add a key stays one literal glob."""
    evil = "x], executor: tcp:evil.example:8786, y: [z"
    for i in range(3):
        save(photo(i), tmp_path / f"{evil}/train/t{i}.jpg")
        save(photo(40 + i), tmp_path / f"{evil}/test/e{i}.jpg")
    policy = _init_keys(run_cli, tmp_path)
    assert "executor" not in policy and "y" not in policy
    literal = "x], executor: tcp:evil.example:8786, y: [[]z"
    assert policy["splits"] == {"train": [f"{literal}/train/**"], "test": [f"{literal}/test/**"]}
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    assert report.stats["splits"] == {"train": 3, "test": 3}
