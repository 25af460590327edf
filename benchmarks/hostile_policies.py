"""A campaign of hostile policies through the CLI (issue 10, classes 3, 6 and 7): count the outcomes.

Run by hand: ``python benchmarks/hostile_policies.py [--mutations 300] [--seed 0]``.  It builds a
small dataset (generated images, plus a few hostile file names and links) in a temporary folder,
then runs ``leakcheck check`` in-process on each policy and counts, per class:

- inputs tried, and exit codes;
- crashes: exit 3, or any exception escaping the CLI (must be 0);
- user files moved or changed: every file that was in the repository before the campaign
  (outside leakcheck's own `.leakcheck/`) compared by path, inode, size, mtime and sha256
  after each run (must be 0); files leakcheck created (a store where `cache:` put it) are listed;
- checks over nothing that passed: a class-3 input that exited 0 (must be 0);
- leaked secrets: a run whose output holds the secret planted in the environment and in a file
  outside the repository (must be 0);
- the slowest run, in seconds (a bomb must fail fast; one run, not a measured benchmark).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_leakcheck import detectors
from pytest_leakcheck.cli import main
from pytest_leakcheck.testing import photo, save

SECRET = "campaign-secret-" + os.urandom(6).hex()
HEAD = "version: 1\nsplits: {train: [train/**], test: [test/**]}\n"


def build(base: Path) -> Path:
    repo, outside = base / "repo", base / "outside"
    for i in range(4):
        save(photo(i), repo / f"train/img_{i}.jpg")
    save(photo(10), repo / "test/img_a.jpg")
    save(photo(11), repo / "test/" / ("a" * 240 + ".jpg"))  # a long name against hostile globs
    save(photo(12), outside / "test/x.jpg")
    (outside / "secret.csv").write_text(f"path,split\n{SECRET},train\n")
    (outside / "baseline.yaml").write_text(f"version: 2\nfindings: {{{SECRET}: x}}\n")
    (repo / "notes.txt").write_text("user file\n")
    (repo / "secret.csv").symlink_to(outside / "secret.csv")
    return repo


def snapshot(repo: Path) -> dict[str, tuple]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(repo):
        dirnames[:] = [d for d in dirnames if d != ".leakcheck"]
        for name in filenames:
            path = Path(dirpath, name)
            st = os.lstat(path)
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else os.readlink(path)
            out[str(path.relative_to(repo))] = (st.st_ino, st.st_size, st.st_mtime_ns, digest)
    return out


def blind_inputs() -> list[str]:
    """Class 3: policies that see nothing, in every form."""
    off = "detectors:\n" + "".join(f"  {d.section}: off\n" for d in detectors.registry())
    out = [
        "version: 1\nsplits: {train: [train/**], test: [tset/**]}\n",
        "version: 1\nsplits: {train: [trian/**], test: [tset/**]}\n",
        "version: 1\nsplits: {train: [train/*.png], test: [test/**]}\n",
        HEAD + "ignore: ['**']\n", HEAD + "ignore: ['*.jpg']\n", HEAD + "ignore: [train, test]\n",
        HEAD + "pairs: {compare: []}\n", "version: 1\nsplits: {all: ['**']}\npairs: {within_split: off}\n",
        HEAD + off, "version: 1\nsplits: {manifest: header.csv}\n", "version: 1\nsplits: {manifest: gone.csv}\n",
        "version: 1\nsplits: {coco: {train: empty.json, test: empty.json}}\n",
        "version: 1\nsplits: {metadata: meta.csv}\n",
        "version: 1\nsplits: {train: [train/**], test: [linked/**]}\n",
        "version: 1\nsplits: {train: [train/**], val: [val/**], test: [test/**]}\npairs: {compare: [train~val]}\n",
    ]
    for typo in ("Train/**", "train/**/", "./tain/**", "/test/*/x/**", "test/[b-h]*.jpg", "**/*.JPG"):
        out.append(f"version: 1\nsplits: {{train: [train/**], test: ['{typo}']}}\n")
    return out


def path_inputs() -> list[str]:
    """Class 6: policies naming files outside the repository."""
    targets = ["../outside/secret.csv", "/proc/self/environ", "/etc/passwd", "~/.ssh/id_rsa", "secret.csv",
               "../../../../../../../../proc/self/environ", "/dev/zero", "../outside"]
    out = []
    for t in targets:
        out += [f"version: 1\nsplits: {{manifest: '{t}'}}\n", HEAD + f"baseline: '{t}'\n",
                f"version: 1\nroot: '{t}'\nsplits: {{train: [train/**]}}\n",
                HEAD + f"groups: [{{csv: '{t}', column: group}}]\n", HEAD + f"groups: [{{coco: '{t}', field: x}}]\n",
                f"version: 1\nsplits: {{coco: {{train: '{t}', test: '{t}'}}}}\n",
                f"version: 1\nsplits: {{metadata: '{t}'}}\n", HEAD + f"cache: '{t}/cache.sqlite'\n"]
    return out


def yaml_inputs(n: int, rng: random.Random) -> list[str]:
    """Class 7: YAML bombs, deep nesting, hostile globs and odd values, then random mutations."""
    laughs = ['a0: &a0 ["lol"]'] + [f"a{k}: &a{k} [" + ", ".join([f"*a{k - 1}"] * 10) + "]" for k in range(1, 12)]
    out = ["\n".join(laughs[: k + 1]) + "\n" + HEAD for k in range(3, 12)]
    out += [HEAD + "detectors: " + "[" * d + "]" * d + "\n" for d in (65, 500, 3000, 20000)]
    out += [HEAD + "detectors: " + "{a: " * d + "1" + "}" * d + "\n" for d in (65, 3000)]
    out += ["loop: &l [*l]\n" + HEAD, HEAD + "ignore:\n" + "  - x/**\n" * 200_000]
    globs = ["[z-a]", "[", "train/[abc", "[]", "[!]", "a" * 2000, "*a*a*a*a*a*a*a*a*a*a*b",
             "**/**/**/**/**/**/x/**/y", "**a**a**a**a**a**b", "test/*a*a*a*a*a*a*a*a*a*a*a*.jpg"]
    for g in globs:
        out += [f"version: 1\nsplits: {{train: [train/**], test: ['{g}', test/**]}}\n", HEAD + f"ignore: ['{g}']\n"]
    values = ["64.0", "64.5", "true", ".nan", ".inf", "-.inf", "[64]", "{a: 1}", "1" * 5000, "2020-13-45", "!!int",
              "!!binary x", "~", "''", "0x40", "0o100", "1e400", "-1", "9" * 30]
    for key in ("bits", "max_distance"):
        out += [HEAD + f"detectors: {{phash: {{{key}: {v}}}}}\n" for v in values]
    out += [HEAD + f"files: {{max_pixels: {v}}}\n" for v in values]
    out += [HEAD + f"detectors: {{thumbnail: {{min_cosine: {v}}}}}\n" for v in values]
    base = (HEAD + "pairs: {compare: [train~test], within_split: warning}\n"
            "detectors: {phash: {severity: error, bits: 64, max_distance: 8}}\nignore: [docs/**]\n")
    pieces = ["[", "]", "{", "}", "&a ", "*a", "<<: ", "- ", ": ", "!!int ", "'", '"', "\t", "\x00", "\x1b",
              "\u202e", "::error::", "..", "/", "**", "[z-a]", "1e999", "\n"]
    for _ in range(n):
        text = list(base)
        for _ in range(rng.randint(1, 6)):
            i = rng.randrange(len(text) + 1)
            text[i:i + rng.randint(0, 3)] = rng.choice(pieces)
        out.append("".join(text))
    return out


def fixtures(repo: Path, link: bool) -> None:
    (repo / "header.csv").write_text("path,split\n")
    (repo / "gone.csv").write_text("path,split\nno/a.jpg,train\nno/b.jpg,test\n")
    (repo / "empty.json").write_text(json.dumps({"images": []}))
    (repo / "meta.csv").write_text("file_name,split\n")
    # A split folder linked out of root, for class 3 only: elsewhere its finding would fail every check.
    if link and not (repo / "linked").is_symlink():
        (repo / "linked").symlink_to(repo.parent / "outside/test", target_is_directory=True)
    elif not link and (repo / "linked").is_symlink():
        (repo / "linked").unlink()


def run_one(repo: Path, text: str, cache: bool = False) -> tuple[int, str, float]:
    (repo / "leakcheck.yaml").write_text(text, encoding="utf-8", errors="surrogatepass")
    out, err = io.StringIO(), io.StringIO()
    t0 = time.perf_counter()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["check", "--policy", str(repo / "leakcheck.yaml"), *([] if cache else ["--no-cache"])])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    except BaseException as exc:
        code, err = -1, io.StringIO(f"{type(exc).__name__}: {exc}")
    return code, out.getvalue() + err.getvalue(), time.perf_counter() - t0


def campaign(repo: Path, name: str, inputs: list[str], *, link: bool = False, cache: bool = False) -> dict:
    fixtures(repo, link)
    before = snapshot(repo)
    codes: Counter[int] = Counter()
    crashes = changed = passed_blind = leaked = 0
    created: set[str] = set()
    slowest = 0.0
    examples: list[str] = []
    for text in inputs:
        code, output, seconds = run_one(repo, text, cache)
        codes[code] += 1
        slowest = max(slowest, seconds)
        if code in (-1, 3) or "Traceback" in output:
            crashes += 1
            examples.append(output[-300:])
        if name == "3 checks over nothing" and code == 0:
            passed_blind += 1
            examples.append(text[:200])
        if SECRET in output or "PATH=" in output:
            leaked += 1
            examples.append(output[:300])
        # A user file is one that was there before; the store a policy puts inside the repo is leakcheck's own.
        after = snapshot(repo)
        if any(after.get(path) != state for path, state in before.items() if path != "leakcheck.yaml"):
            changed += 1
        created.update(set(after) - set(before))
    return {"class": name, "inputs": len(inputs), "exit_codes": dict(sorted(codes.items())), "crashes": crashes,
            "user_files_changed_runs": changed,
            "files_created": sorted(created)[:4], "checks_over_nothing_passed": passed_blind,
            "outputs_with_secret": leaked, "slowest_s": round(slowest, 2), "examples": examples[:3]}


def main_(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutations", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    os.environ["LEAK_SECRET"] = SECRET
    os.environ.pop("LEAKCHECK_ALLOW_PATHS", None)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        repo = build(Path(tmp))
        results = [campaign(repo, "3 checks over nothing", blind_inputs(), link=True),
                   # With the store on, so that `cache:` is tried too (the store under .leakcheck/ is ours).
                   campaign(repo, "6 paths outside the repository", path_inputs(), cache=True),
                   campaign(repo, "7 hostile YAML, globs and values", yaml_inputs(args.mutations, rng))]
    for r in results:
        print(json.dumps(r))
    bad = sum(r["crashes"] + r["user_files_changed_runs"] + r["checks_over_nothing_passed"]
              + r["outputs_with_secret"] for r in results)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main_())
