"""A campaign for issue 22 classes 3 and 4: text made from data, and one verdict per tree.

Run by hand: ``python benchmarks/hostile_output.py [--strings 40] [--seed 0]``.  Nothing is
downloaded; every image is generated in a temporary folder.

Class 3 (text from data): each hostile string (a fixed list of known attacks plus random
mixtures of them) goes, in turn, into a file name in test (a byte copy of a training image),
a manifest split name, the policy's `cache`, a manifest cell `leakcheck init` reads and a
folder `leakcheck split` moves from.  Every output is read back the way its medium is read:
terminal and log lines (a raw control character, a line a GitHub runner takes as a workflow
command), annotations (one command per finding, the file property intact), the Markdown summary
through a Markdown engine (mistune: no image, link or HTML of the input), HTML through an
HTML parser (no tag of the input), export CSV (no cell starting a formula), `$GITHUB_OUTPUT`
(one line or exit 2), the YAML `init` wrote (no key but the template's).

Class 4 (one verdict per tree): a clean base commit, then a pull request per hostile change
(a folder link into test, a retargeted link, a hidden copy, a copy in a hidden folder, a copy
in a mode-000 folder, a copy below a path longer than PATH_MAX, a copy in a split that
`pairs.compare` leaves out) through `check`, `--changed-since` (full, and with a base report),
the hook and `export`, each in a subprocess with a timeout.

Printed per class: inputs tried, crashes (exit 3 or an exception), hangs (over the timeout),
wrong verdicts, escaping failures.  Each must be 0 but the inputs.

Measured (2 cores under load, seed 0): before the fix (bd82c12), class 3: 40 inputs, 0 crashes,
0 hangs, 38 escaping failures ($GITHUB_OUTPUT 11, `split` 12, Markdown 14, export CSV 1);
class 4: 7 changes x 5 ways in, 0 crashes, 0 hangs, 26 wrong verdicts.  After: every count 0.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from pytest_leakcheck.cli import main  # noqa: E402
from pytest_leakcheck.files.names import csv_writerow  # noqa: E402
from pytest_leakcheck.render import formats, render  # noqa: E402
from pytest_leakcheck.testing import photo, save  # noqa: E402

ATTACKS = [
    "x\n::error::forged", "\x1b[2J\x1b[31mred", "##[error]legacy", "::add-mask::x", "a\rb", "\u202egpj.exe",
    "![i](https://evil.example/p.png)", "[l](https://evil.example)", "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>", "https://evil.example/x", "www.evil.example", "=HYPERLINK(\"x\")", "+1", "-1",
    "@SUM(A1)", "\tx", "|a|b|", "`code`", "**b**", "# h", "> q", "- i", "1. n", "x: y\nexecutor: tcp://e:1",
    "x], executor: tcp:e:1, y: [z", "&amp;", "%0A%25", "a,b:c", "\udcff\udcfe", "é\u2028\u0085", "'\"\\",
]
TIMEOUT = 120
_RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def strings(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = list(ATTACKS)
    while len(out) < n:
        out.append("".join(rng.choice(ATTACKS) for _ in range(rng.randint(2, 4))))
    # A file name holds any byte but NUL and `/`, and at most 255 of them.
    return [s.replace("/", "_")[:60] for s in out[:n]]


def run_cli(*argv: str) -> tuple[int, str, str, float]:
    out, err = io.StringIO(), io.StringIO()
    t0 = time.perf_counter()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(argv))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    except Exception as exc:  # noqa: BLE001 - a crash is what the campaign counts
        code, err = 3, io.StringIO(f"{type(exc).__name__}: {exc}")
    return code, out.getvalue(), err.getvalue(), time.perf_counter() - t0


def log_ok(text: str) -> bool:
    """No raw control character; no line a runner takes as a command but annotations' own."""
    lines = text.split("\n")
    return not _RAW.search(text) and not any("##[" in line or line.lstrip().startswith("::") for line in lines)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append((tag, dict(attrs)))


def tags(page: str) -> list[tuple[str, dict]]:
    parser = _Tags()
    parser.feed(page)
    return parser.tags


_MD_TAGS = {"h2", "h3", "h4", "p", "table", "thead", "tbody", "tr", "th", "td", "img", "br", "code", "blockquote",
            "em", "hr", "ul", "li"}
_BLOB = "https://github.com/o/r/blob/x"


def md_ok(page: list[tuple[str, dict]]) -> bool:
    """Only the summary's own elements; an image only as a thumbnail from the repository."""
    return all(tag in _MD_TAGS and (tag != "img" or str(attrs.get("src", "")).startswith(_BLOB + "/"))
               for tag, attrs in page)


def html_ok(text: str) -> bool:
    """No element or attribute of the input: its `<script>`, `<img src=x`, `onerror=` stay escaped text."""
    page = tags(text)
    return "<script>alert" not in text and not any("onerror" in attrs or attrs.get("src") == "x" for _, attrs in page)


def bad_output(fmt: str, text: str, md) -> bool:
    if fmt in ("text", "json", "sarif"):
        return not log_ok(text)
    if fmt == "markdown":
        return not log_ok(text) or not md_ok(tags(md(text)))
    if fmt == "annotations":
        # One command per line, and no `:` in its properties: the first `::` after them is ours.
        return _RAW.search(text) is not None or any(
            not line.startswith(("::error file=", "::warning file=")) or ":" in line[2:].split("::", 1)[0]
            for line in text.splitlines())
    if fmt == "html":
        return not html_ok(text)
    return False


def dataset(root: Path, name: str, split_names: tuple[str, str] = ("train", "test"), cache: str = "") -> Path:
    for i in range(3):
        save(photo(i, (64, 48)), root / f"img/t{i}.jpg")
        save(photo(40 + i, (64, 48)), root / f"img/e{i}.jpg")
    shutil.copyfile(root / "img/t0.jpg", os.path.join(os.fsencode(root / "img"), os.fsencode(name) + b".jpg"))
    buf = io.StringIO()
    writerow = csv_writerow(buf)  # quotes a lone CR too, as `leakcheck split` writes manifests
    writerow(["path", "split"])
    for i in range(3):
        writerow([f"img/t{i}.jpg", split_names[0]])
        writerow([f"img/e{i}.jpg", split_names[1]])
    writerow([f"img/{name}.jpg", split_names[1]])
    (root / "splits.csv").write_bytes(buf.getvalue().encode("utf-8", "surrogateescape"))
    extra = f"cache: {json.dumps(cache)}\n" if cache else ""
    policy = root / "leakcheck.yaml"
    policy.write_text("version: 1\nsplits: {manifest: splits.csv}\n" + extra)
    return policy


def class3(base: Path, inputs: list[str], counts: Counter) -> None:
    import mistune

    md = mistune.create_markdown(plugins=["url", "table", "strikethrough"])
    for k, s in enumerate(inputs):
        counts["inputs"] += 1
        for where, policy in (("name", dataset(base / f"n{k}", s)),
                              ("split", dataset(base / f"s{k}", "copy", ("train", s or "x")))):
            code, out, err, took = run_cli("check", "--policy", str(policy), "--no-cache", "-j", "1", "--format",
                                           "json", "-o", str(policy.parent / "r.json"))
            counts["runs"] += 1
            counts["crashes"] += code == 3
            counts["hangs"] += took > TIMEOUT
            if code != 1:
                counts["wrong verdicts"] += 1
                print(f"wrong verdict ({where}, exit {code}): {s!r}: {err.strip()[:200]}")
                continue
            from pytest_leakcheck.model import load_report  # the report model's public path

            report = load_report(policy.parent / "r.json")
            for fmt in formats():
                if bad_output(fmt, render(report, fmt, root=policy.parent, blob_url=_BLOB), md):
                    counts["escaping failures"] += 1
                    print(f"escaping failure ({fmt}, {where}): {s!r}")
        _other_writers(base / f"o{k}", s, counts)


def _other_writers(root: Path, s: str, counts: Counter) -> None:
    """$GITHUB_OUTPUT, export CSV, `init` YAML and `split` lines for one string."""
    policy = dataset(root, s, cache=f".leakcheck{s}/cache.sqlite" if "\x00" not in s else "")
    code, out, _, _ = run_cli("fingerprint", "--policy", str(policy), "--cache-dir")
    counts["crashes"] += code == 3
    if not (code == 2 or (code == 0 and out.count("\n") == 1 and not _RAW.search(out))):
        counts["escaping failures"] += 1
        print(f"escaping failure ($GITHUB_OUTPUT): {s!r}")
    (root / "leakcheck.yaml").write_text("version: 1\nsplits: {manifest: splits.csv}\n")
    code, out, err, _ = run_cli("export", "--policy", str(policy), "--no-cache", "-j", "1")
    counts["crashes"] += code == 3
    try:
        cells = [c for row in csv.reader(io.StringIO(out)) for c in row]
    except csv.Error:  # a bare CR in a cell: not CSV a reader can take back
        cells = ["=unreadable CSV"]
    if code != 0 or any(c.startswith(("=", "+", "-", "@", "\t", "\r")) for c in cells):
        counts["escaping failures"] += 1
        print(f"escaping failure (export CSV, exit {code}): {s!r} {err.strip()[:120]}")
    (root / "leakcheck.yaml").unlink()
    code, out, err, _ = run_cli("init", str(root))
    counts["crashes"] += code == 3
    if code == 0:
        keys = set(yaml.safe_load((root / "leakcheck.yaml").read_text()))
        template = {"version", "splits", "pairs", "detectors", "augmentations", "files", "ignore", "cache",
                    "baseline", "groups", "ungrouped", "group_split"}
        if keys - template or not log_ok(out):
            counts["escaping failures"] += 1
            print(f"escaping failure (init): {s!r} {sorted(keys - template)}")
    tree = root / "tree"
    for i in range(2):
        save(photo(i, (64, 48)), tree / f"data/train/t{i}.jpg")
        save(photo(40 + i, (64, 48)), tree / f"data/test/e{i}.jpg")
    shutil.copyfile(tree / "data/train/t0.jpg", os.fsencode(tree / "data/test") + b"/" + os.fsencode(s) + b".jpg")
    (tree / "leakcheck.yaml").write_text("version: 1\nsplits: {train: [data/train/**], test: [data/test/**]}\n")
    code, out, err, _ = run_cli("split", "--policy", str(tree / "leakcheck.yaml"), "--no-cache", "-j", "1")
    counts["crashes"] += code == 3
    if code != 0 or not log_ok(out):
        counts["escaping failures"] += 1
        print(f"escaping failure (split, exit {code}): {s!r}")


def git(repo: Path, *args: str) -> str:
    ident = ["-c", "user.name=c", "-c", "user.email=c@example.invalid", "-c", "commit.gpgsign=false"]
    return subprocess.run(["git", *ident, *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def _deep(folder: Path, source: Path) -> None:
    """A copy of ``source`` below 20 folders of 250 characters (over PATH_MAX), made through descriptors."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        for k in range(20):
            os.mkdir(f"{'n' * 250}{k}", dir_fd=fd)
            nxt = os.open(f"{'n' * 250}{k}", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nxt
        with open(os.open("x.jpg", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "wb") as fh:
            fh.write(source.read_bytes())
    finally:
        os.close(fd)


def _locked(repo: Path) -> None:
    (repo / "test/locked").mkdir()
    shutil.copyfile(repo / "train/t0.jpg", repo / "test/locked/copy.jpg")
    (repo / "test/locked").chmod(0)


def _left_out(repo: Path) -> None:
    """A third split `extra` that `pairs.compare` leaves out, holding a copy of a test image."""
    (repo / "leakcheck.yaml").write_text("version: 1\nsplits: {train: [train/**], test: [test/**], extra: [extra/**]}\n"
                                         "pairs: {compare: [train~test]}\nignore: [other/**]\n")
    shutil.copytree(repo / "other", repo / "extra")
    shutil.copyfile(repo / "test/e1.jpg", repo / "extra/copy.jpg")


#: name -> (change made on the pull request branch, whether a full check must fail, kind it must name)
CHANGES = {
    "folder link into test": (lambda r: os.symlink("../train", r / "test/more"), True, "identical-file"),
    "link retargeted": (lambda r: (os.unlink(r / "test/link"), os.symlink("../train", r / "test/link")),
                        True, "identical-file"),
    "hidden copy": (lambda r: shutil.copyfile(r / "test/e1.jpg", r / "train/.copy.jpg"), True, "identical-file"),
    "copy in a hidden folder": (lambda r: ((r / "train/.ipynb_checkpoints").mkdir(),
                                           shutil.copyfile(r / "test/e1.jpg", r / "train/.ipynb_checkpoints/c.jpg")),
                                True, "identical-file"),
    "copy in a mode-000 folder": (_locked, True, "not-examined"),
    "copy below PATH_MAX": (lambda r: _deep(r / "test", r / "train/t0.jpg"), True, "not-examined"),
    "split left out of pairs": (lambda r: _left_out(r), False, "not-examined"),
}


def _repo(base: Path) -> tuple[Path, Path]:
    repo = base / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    for i in range(3):
        save(photo(i, (64, 48)), repo / f"train/t{i}.jpg")
        save(photo(40 + i, (64, 48)), repo / f"test/e{i}.jpg")
        save(photo(80 + i, (64, 48)), repo / f"other/o{i}.jpg")
    os.symlink("../other", repo / "test/link")
    (repo / "leakcheck.yaml").write_text("version: 1\nsplits: {train: [train/**], test: [test/**]}\n"
                                         "ignore: [other/**]\n")
    (repo / ".gitignore").write_text(".leakcheck/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    report = base / "base.json"
    _leakcheck(repo, "check", "--format", "json", "-o", str(report))
    git(repo, "checkout", "-q", "-b", "pr")
    return repo, report


def _prefix() -> list[str]:
    """Root reads a mode-000 folder anyway; without these capabilities it cannot."""
    return ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"] if os.geteuid() == 0 else []


def _leakcheck(repo: Path, *argv: str) -> tuple[int, str, float]:
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([*_prefix(), sys.executable, "-m", "pytest_leakcheck", argv[0], "--policy",
                               "leakcheck.yaml", *argv[1:]], cwd=repo, capture_output=True, text=True,
                              timeout=TIMEOUT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    except subprocess.TimeoutExpired:
        return -1, "", time.perf_counter() - t0
    return proc.returncode, proc.stdout + proc.stderr, time.perf_counter() - t0


def class4(base: Path, counts: Counter) -> None:
    for k, (name, (change, fails, kind)) in enumerate(CHANGES.items()):
        repo, base_report = _repo(base / f"c{k}")
        change(repo)
        try:
            git(repo, "add", "-A")
            git(repo, "commit", "-q", "-m", name)
        except subprocess.CalledProcessError as exc:  # git cannot add a path over PATH_MAX: stays untracked
            print(f"note: {name}: git could not commit it ({exc.stderr.strip()[:80]}); left in the work tree")
        staged = [p for p in git(repo, "diff", "--name-only", "-z", "main", "HEAD").split("\0") if p]
        ways = {
            "check": ("check", "--format", "json"),
            "--changed-since": ("check", "--format", "json", "--changed-since", "main"),
            "--changed-since --base-report": ("check", "--format", "json", "--changed-since", "main",
                                              "--base-report", str(base_report)),
            "hook": ("hook", "--max-findings", "0", *staged),
            "export": ("export",),
        }
        if not staged:  # git could not commit the change (a path over PATH_MAX): no commit, no hook run
            del ways["hook"]
        for way, argv in ways.items():
            counts["runs"] += 1
            code, out, took = _leakcheck(repo, *argv)
            counts["hangs"] += code == -1
            counts["crashes"] += code == 3
            expect = 1 if fails else 0
            if way == "export":  # a table, exit 0; a copy cluster's rows carry its severity
                named = code == 0 and (kind != "identical-file" or ",error," in out)
            else:
                named = code == expect and (way == "hook" or kind in out)
            if not named:
                counts["wrong verdicts"] += 1
                print(f"wrong verdict: {name} via {way}: exit {code}, {kind} {'not ' * (kind not in out)}named")
        with contextlib.suppress(OSError):
            (repo / "test/locked").chmod(0o755)
        counts["inputs"] += 1


def main_(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--strings", type=int, default=len(ATTACKS) + 8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        for title, fn in (("class 3, text made from data", lambda c: class3(Path(tmp) / "c3",
                                                                          strings(args.strings, args.seed), c)),
                          ("class 4, the same tree through every way in", lambda c: class4(Path(tmp) / "c4", c))):
            counts: Counter = Counter()
            t0 = time.perf_counter()
            fn(counts)
            print(f"{title}: {counts['inputs']} inputs, {counts['runs']} runs; crashes (exit 3) {counts['crashes']}, "
                  f"hangs {counts['hangs']}, wrong verdicts {counts['wrong verdicts']}, "
                  f"escaping failures {counts['escaping failures']}; {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main_())
