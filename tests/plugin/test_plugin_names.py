"""Split names from a table reach `pytest --leakcheck` escaped as the CLI escapes them (issue 34,
class 8): no item name, node id, section header or failure text is a line the runner reads as
a workflow command."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from pytest_leakcheck.testing import photo, save

SIZE = (64, 48)
HOSTILE = "te\n::error file=x::forged\n##[group]hidden"


@pytest.fixture(scope="module", autouse=True)
def _load_check_modules(tmp_path_factory: pytest.TempPathFactory) -> None:
    """numpy's C extensions cannot be loaded twice: one check before pytester's in-process runs."""
    from pytest_leakcheck import check

    root = tmp_path_factory.mktemp("warm")
    for i in range(2):
        save(photo(i, SIZE), root / f"train/{i}.jpg", quality=90)
        save(photo(10 + i, SIZE), root / f"test/{i}.jpg", quality=90)
    (root / "leakcheck.yaml").write_text("version: 1\nsplits: {train: [train/**], test: [test/**]}\n")
    check(root / "leakcheck.yaml", use_cache=False)


def _dataset(root: Path) -> None:
    for i in range(3):
        save(photo(i, SIZE), root / f"img/t{i}.jpg", quality=90)
    save(photo(20, SIZE), root / "img/e0.jpg", quality=90)
    shutil.copyfile(root / "img/t0.jpg", root / "img/copy.jpg")
    rows = [("img/t0.jpg", "train"), ("img/t1.jpg", "train"), ("img/t2.jpg", "train"),
            ("img/e0.jpg", HOSTILE), ("img/copy.jpg", HOSTILE)]
    quoted = "".join(f'{p},"{s}"\n' for p, s in rows)
    (root / "splits.csv").write_text("path,split\n" + quoted)
    (root / "leakcheck.yaml").write_text("version: 1\nsplits: {manifest: splits.csv}\n")


def _commands(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.lstrip().startswith("::") or "##[" in line]


def test_a_split_name_forging_workflow_commands_is_escaped_in_pytest_output(pytester: pytest.Pytester) -> None:
    _dataset(pytester.path)
    for args in (("--leakcheck", "-v", "-p", "no:cacheprovider"), ("--leakcheck", "--co", "-q")):
        result = pytester.runpytest(*args)
        out = result.stdout.str() + result.stderr.str()
        assert _commands(out) == [], _commands(out)
        assert re.search(r"train~te\\n", out), out[-3000:]
    result = pytester.runpytest("--leakcheck", "-p", "no:cacheprovider")
    assert result.ret == 1
