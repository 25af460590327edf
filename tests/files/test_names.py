"""File names of any bytes survive the whole check, and no output carries them raw (issue 10, class 5).

A hostile pull request controls file names: bytes that are not UTF-8,
newlines, control characters, bidi overrides, GitHub workflow commands.
Each must still be listed, matched by the split globs, stored, found as a
leak and rendered, and no renderer or error message may print a raw control
character or a line GitHub's runner reads as a command.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import unicodedata
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_leakcheck import EXIT_LEAKS
from pytest_leakcheck.report.baseline import Baseline, dumps, record
from pytest_leakcheck.report.baseline import load as load_baseline
from pytest_leakcheck.pipeline.run import check
from pytest_leakcheck.errors import PolicyError
from pytest_leakcheck.dataset.inventory import matches
from pytest_leakcheck.report.model import Report, load_report
from pytest_leakcheck.files.names import display
from pytest_leakcheck.render import formats, render
from pytest_leakcheck.store.db import open_store
from pytest_leakcheck.testing import photo, save

from ..conftest import write_policy

BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"

#: Names planted as copies of train images, each one hostile in its own way.
ODD = (
    b"bad\xff\xfe.jpg",                      # not UTF-8: killed the check (UnicodeEncodeError)
    b"a\nb.jpg",                             # escaped the split globs: "unassigned", exit 0
    b"x\n::error file=ci.yml,line=1::pwned.jpg",  # a workflow command after a raw newline
    b"::warning title=t::w.jpg",             # a workflow command at the start of a line
    b"y##[error]z.jpg",                      # the legacy command form, read anywhere in a line
    b"cr\rtab\tesc\x1b[31m.jpg",             # terminal controls
    "rtl\u202egpj.jpg".encode(),             # bidi override: shows as "rtljpg.jpg"
    "nel\x85sep\u2028.jpg".encode(),         # C1 control and line separator
)


def unsafe(text: str) -> list[str]:
    """Raw characters no output may hold: controls (a renderer's own newlines aside),
    line and paragraph separators, bidi marks, and lone surrogates."""
    return [c for c in text if c != "\n"
            and (unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp") or c in BIDI)]


def commands(text: str, fmt: str) -> list[str]:
    """Lines GitHub's runner would take as workflow commands (`::` after leading
    whitespace, `##[` anywhere), apart from the annotations renderer's own."""
    found = []
    for line in text.split("\n"):
        if fmt == "annotations" and line:
            assert _runner_parse(line)[0] in ("error", "warning"), line
            continue
        if line.lstrip().startswith("::") or "##[" in line:
            found.append(line)
    return found


def _runner_parse(line: str) -> tuple[str, dict[str, str], str]:
    """A workflow command as actions/runner's ActionCommand.TryParseV2 reads it."""
    assert line.startswith("::"), line
    end = line.index("::", 2)
    name, _, props = line[2:end].partition(" ")
    out = {}
    for prop in filter(None, props.split(",")):
        key, _, value = prop.partition("=")
        for token, escaped in (("\r", "%0D"), ("\n", "%0A"), (":", "%3A"), (",", "%2C"), ("%", "%25")):
            value = value.replace(escaped, token)
        out[key] = value
    return name, out, line[end + 2:]


def _dataset(root: Path, names: tuple[bytes, ...]) -> None:
    """Four train images, one distinct test image, and train image k copied to test/ as names[k % 4]."""
    for i in range(4):
        save(photo(i, (64, 48)), root / f"train/img_{i}.jpg", quality=90)
    save(photo(100, (64, 48)), root / "test/other/distinct.jpg", quality=90)
    for k, name in enumerate(names):
        shutil.copyfile(root / f"train/img_{k % 4}.jpg", os.fsencode(root / "test") + b"/" + name)
    write_policy(root, "version: 1\nsplits:\n  train: [train/**]\n  test: [test/**]\n"
                       "baseline: .leakcheck-baseline.yaml\n")


def _rendered(report: Report, root: Path) -> dict[str, str]:
    """Every registered format, with the options the CLI and the Action pass."""
    options: dict[str, dict] = {
        "sarif": {"prefix": "data/"}, "annotations": {"prefix": "data/"},
        "markdown": {"prefix": "data/", "blob_url": "https://github.com/o/r/blob/abc"},
        "html": {"root": root}}
    return {fmt: render(report, fmt, **options.get(fmt, {})) for fmt in formats()}


def _copies(report: Report) -> dict[bytes, str]:
    """Test copy (its bytes, relative to the root) -> the train file it copies, for identical-file findings."""
    out = {}
    for f in report.findings:
        if f.kind == "identical-file":
            test = [m.path for m in f.members if m.split == "test"]
            train = [m.path for m in f.members if m.split == "train"]
            out.update({os.fsencode(t): train[0] for t in test})
    return out


@pytest.fixture
def odd_dataset(tmp_path: Path) -> Path:
    _dataset(tmp_path, ODD[:4])
    os.mkdir(tmp_path / "test" / "more")
    for k, name in enumerate(ODD[4:]):
        shutil.copyfile(tmp_path / f"train/img_{k}.jpg", os.fsencode(tmp_path / "test/more") + b"/" + name)
    return tmp_path


def _expected() -> dict[bytes, str]:
    out = {b"test/" + n: f"train/img_{k}.jpg" for k, n in enumerate(ODD[:4])}
    out.update({b"test/more/" + n: f"train/img_{k}.jpg" for k, n in enumerate(ODD[4:])})
    return out


def test_every_odd_name_is_found_cold_and_warm(odd_dataset: Path) -> None:
    """Each copy is found with its exact bytes, through the store and its snapshot on the warm run."""
    policy = odd_dataset / "leakcheck.yaml"
    cold = check(policy, jobs=1)
    assert _copies(cold) == _expected()
    assert not [f for f in cold.findings if f.kind.endswith("-file") and f.kind != "identical-file"]
    assert cold.exit_code == EXIT_LEAKS
    warm = check(policy, jobs=1)
    assert warm.stats["decoded"] == 0 and warm.stats["reused"] == len(ODD) + 5
    assert [f.id for f in warm.findings] == [f.id for f in cold.findings]


def test_a_newline_in_a_name_does_not_escape_the_globs() -> None:
    """`.` and `$` stop at a newline; the globs match a name with one like any other."""
    assert matches("test/a\nb.jpg", ("test/**",))
    assert matches("test/a\nb.jpg", ("*.jpg",))
    assert matches("test/\n/x.jpg", ("test/*/x.jpg",))
    assert not matches("test/x.jpg\n", ("test/*.jpg",))
    assert not matches("train\n/x.jpg", ("train/**",))


def test_store_keeps_a_name_that_is_not_utf8(tmp_path: Path) -> None:
    """SQLite refuses lone surrogates; the name goes in as its bytes and comes back the same str."""
    odd, plain = os.fsdecode(b"t/bad\xff.jpg"), "t/\u00e9\n.jpg"
    with open_store(tmp_path / "s.sqlite") as store:
        store.put_files([(odd, 1, 2, b"d" * 32), (plain, 3, 4, b"e" * 32)])
    with open_store(tmp_path / "s.sqlite") as store:
        assert store.lookup_files([odd, plain, "t/bad\\xff.jpg"]) == {
            odd: (1, 2, b"d" * 32), plain: (3, 4, b"e" * 32)}


def test_text_report_and_errors_carry_no_workflow_command(odd_dataset: Path, run_cli: Callable) -> None:
    """`leakcheck check` in a `run:` step: no file name becomes `::error` or `##[error]` in the log."""
    code, out, err = run_cli("check", "--policy", str(odd_dataset / "leakcheck.yaml"))
    assert code == EXIT_LEAKS
    assert commands(out + err, "text") == [] and unsafe(out + err) == []
    assert "test/x\\n::error file=ci.yml,line=1::pwned.jpg" in out
    assert "test/bad\\xff\\xfe.jpg" in out
    code, out, err = run_cli("check", "--policy", str(odd_dataset / "x\n::error file=a::b\u202e.yaml"))
    assert code == 2 and "policy file not found" in err
    assert commands(out + err, "text") == [] and unsafe(out + err) == []


def test_every_renderer_neutralises_control_characters(odd_dataset: Path) -> None:
    outputs = _rendered(check(odd_dataset / "leakcheck.yaml", jobs=1), odd_dataset)
    assert set(outputs) == {"text", "json", "sarif", "markdown", "annotations", "html"}
    for fmt, out in outputs.items():
        out.encode("utf-8")  # valid Unicode: writable to any UTF-8 file or terminal
        assert unsafe(out) == [], fmt
        assert commands(out, fmt) == [], fmt
    assert "image unavailable" not in outputs["html"]  # the loader found every odd name on disk


def test_annotations_sit_on_the_escaped_file(odd_dataset: Path) -> None:
    """One command per finding; `:` and `,` of a name cannot end the properties early."""
    report = check(odd_dataset / "leakcheck.yaml", jobs=1)
    lines = render(report, "annotations", prefix="data/").splitlines()
    assert len(lines) == len(report.findings) == 4
    parsed = [_runner_parse(line) for line in lines]
    assert all(set(props) == {"file", "title"} for _, props, _ in parsed)
    assert [props["file"] for _, props, _ in parsed] == ["data/" + display(f.members[-1].path) for f in report.findings]
    assert "data/test/x\\n::error file=ci.yml,line=1::pwned.jpg" in {props["file"] for _, props, _ in parsed}


def test_json_keeps_the_exact_bytes(odd_dataset: Path, tmp_path: Path, run_cli: Callable) -> None:
    """Valid Unicode for any JSON reader, `path_bytes` (hex) beside a name that is not UTF-8,
    and `leakcheck render` of the saved report names the same files."""
    out = tmp_path / "r.json"
    assert run_cli("check", "--policy", str(odd_dataset / "leakcheck.yaml"), "--format", "json",
                   "-o", str(out))[0] == EXIT_LEAKS
    text = out.read_text(encoding="utf-8")
    data = json.loads(text)
    members = [m for f in data["findings"] for m in f["members"]]
    odd = [m for m in members if "path_bytes" in m]
    assert [(m["path"], bytes.fromhex(m["path_bytes"])) for m in odd] == [
        ("test/bad\\xff\\xfe.jpg", b"test/bad\xff\xfe.jpg")]
    assert all("path_bytes" not in m for m in members if m["path"].startswith("test/a\n"))
    pairs = [p for f in data["findings"] for p in f["pairs"]]
    assert any(bytes.fromhex(p.get("b_bytes", p.get("a_bytes", ""))) == b"test/bad\xff\xfe.jpg" for p in pairs)
    assert "##[" not in text and json.loads(text) == data
    assert _copies(load_report(out)) == _expected()
    code, rendered, _ = run_cli("render", str(out))
    assert code == 0 and "test/bad\\xff\\xfe.jpg" in rendered and unsafe(rendered) == []


def test_baseline_records_odd_names_readably(odd_dataset: Path, run_cli: Callable) -> None:
    """The baseline, reviewed in pull requests, shows names escaped, and still accepts the findings."""
    policy = str(odd_dataset / "leakcheck.yaml")
    assert run_cli("baseline", "--policy", policy)[0] == 0
    text = (odd_dataset / ".leakcheck-baseline.yaml").read_text(encoding="utf-8")
    assert unsafe(text) == [] and "test/more/rtl\\u202egpj.jpg" in text
    code, out, _ = run_cli("check", "--policy", policy)
    assert code == 0 and "passed: 4 known (baseline)" in out


def test_split_manifest_round_trips_odd_names(odd_dataset: Path, run_cli: Callable) -> None:
    """`leakcheck split` writes every name (bytes, `\\n`, `\\r`) so the manifest check finds each file."""
    assert run_cli("split", "--policy", str(odd_dataset / "leakcheck.yaml"), "--test", "0.3",
                   "-o", str(odd_dataset / "splits.csv"))[0] == 0
    with open(odd_dataset / "splits.csv", newline="", encoding="utf-8", errors="surrogateescape") as fh:
        listed = {os.fsencode(row["path"]) for row in csv.DictReader(fh)}
    assert set(_expected()) <= listed
    policy = write_policy(odd_dataset, "version: 1\nsplits: {manifest: splits.csv}\n")
    report = check(policy, jobs=1, use_cache=False)
    assert not [f for f in report.findings if f.kind in ("unassigned-file", "missing-file")]
    assert len(report.findings) == 4  # each train image with its copies, in one split now


# --------------------------------------------------------------------------
# Property: any Linux file name


#: Fragments that are hostile on their own; hypothesis mixes them with arbitrary bytes and text.
HOSTILE = [b"\n", b"\r", b"\t", b"\x1b[2J", b"\x7f", b"\xc2\x85", b"\xff", b"\xfe", b"\xc3", b"\xed\xa0\x80",
           b"::error file=x,line=1::boom", b"::", b"##[error]", b"%0A", b"%25", b",", b":", b"\\", b"'\"",
           b"<script>", b"|", b"`", b" ", "\u202e".encode(), "\u2066".encode(), "\u200f".encode(),
           "\u2028".encode(), "\u00e9".encode(), "\u65e5\u672c".encode()]
_PART = st.one_of(st.binary(min_size=1, max_size=6),
                  st.text(min_size=1, max_size=6).map(str.encode),
                  st.sampled_from(HOSTILE))


def _linux_name(parts: list[bytes]) -> bytes:
    """A name Linux allows (no NUL, no `/`, under 255 bytes) that the walker lists: an image
    suffix, and not hidden (names starting with `.` are skipped on purpose)."""
    name = b"".join(parts).replace(b"\0", b"").replace(b"/", b"")[:200]
    return (b"x" + name if name.startswith(b".") or not name else name) + b".jpg"


@pytest.fixture(scope="module")
def one_copy(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A dataset built once; each example renames its one copy (test/copy/<name>)."""
    root = tmp_path_factory.mktemp("names")
    _dataset(root, ())
    os.mkdir(root / "test" / "copy")
    first = os.fsencode(root / "test/copy/start.jpg")
    shutil.copyfile(root / "train/img_0.jpg", first)
    return {"root": root, "copy": first}


@pytest.mark.slow
@settings(max_examples=100, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(_PART, min_size=1, max_size=6))
def test_any_file_name_survives_a_check_and_every_renderer(one_copy: dict, parts: list[bytes]) -> None:
    name = _linux_name(parts)
    root: Path = one_copy["root"]
    target = os.fsencode(root / "test/copy") + b"/" + name
    os.rename(one_copy["copy"], target)
    one_copy["copy"] = target
    report = check(root / "leakcheck.yaml", jobs=1)  # the file store: names go through SQLite and snapshots

    assert _copies(report) == {b"test/copy/" + name: "train/img_0.jpg"}
    assert report.exit_code == EXIT_LEAKS and len(report.findings) == 1
    for fmt, out in _rendered(report, root).items():
        out.encode("utf-8")
        assert unsafe(out) == [], fmt
        assert commands(out, fmt) == [], fmt
    saved = root / "r.json"
    saved.write_text(render(report, "json"), encoding="utf-8")
    assert _copies(load_report(saved)) == _copies(report)
    text = dumps(record(report, Baseline(root / "b.yaml")).baseline)
    assert unsafe(text) == []
    (root / "b.yaml").write_text(text, encoding="utf-8")
    assert load_baseline(root / "b.yaml").match(report.findings[0]) is not None
    error = str(PolicyError(f"bad row {report.findings[0].members[-1].path!r}",
                            path=report.findings[0].members[-1].path))
    assert unsafe(error) == [] and commands(error, "text") == []
