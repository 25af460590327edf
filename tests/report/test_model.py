"""The report model and the text-like renderers import no engine (numpy, Pillow)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_leakcheck import render
from pytest_leakcheck.report.model import Finding, Member, Pair, Report, report_dict

LEAN_FORMATS = ("text", "json", "markdown", "sarif", "annotations")


def _saved(tmp_path: Path) -> Path:
    f = Finding(id="abcdef012345", kind="near-duplicate", severity="error",
                members=(Member("train/a.jpg", "train", "00" * 32), Member("test/b.jpg", "test", "11" * 32)),
                pairs=(Pair("train/a.jpg", "test/b.jpg", "phash", 3.0, "hflip", {"phash_distance": 3}),))
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report_dict(Report("leakcheck.yaml", (f,)))))
    return path


@pytest.mark.parametrize("fmt", LEAN_FORMATS)
def test_rendering_a_saved_report_imports_neither_numpy_nor_pil(tmp_path: Path, fmt: str) -> None:
    saved = _saved(tmp_path)
    code = (
        "import sys\n"
        "from pytest_leakcheck.model import load_report\n"
        "from pytest_leakcheck.render import render\n"
        f"out = render(load_report({str(saved)!r}), {fmt!r})\n"
        "assert 'test/b.jpg' in out, out\n"
        "print(sorted(m for m in ('numpy', 'PIL', 'imagehash') if m in sys.modules))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]"


def test_the_registry_finds_every_format_module() -> None:
    folder = Path(render.__file__).parent
    on_disk = {p.stem for p in folder.glob("*.py") if not p.stem.startswith("_")}
    on_disk |= {p.parent.name for p in folder.glob("*/__init__.py")}  # a format with a folder of its own
    assert set(render.formats()) == on_disk
    assert render.formats()[0] == "text"
    assert {"html", *LEAN_FORMATS} <= on_disk


def test_failing_excludes_findings_the_baseline_accepts() -> None:
    m = (Member("a", "train"), Member("b", "test"))
    new = Finding("1" * 12, "identical-file", "error", m)
    known = Finding("2" * 12, "identical-file", "error", m, status="known")
    warn = Finding("3" * 12, "near-duplicate", "warning", m)
    report = Report("p", (new, known, warn))
    assert report.failing == (new,)
    assert report.exit_code == 1
    assert Report("p", (known, warn)).exit_code == 0
