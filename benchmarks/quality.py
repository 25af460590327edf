"""Near-duplicate quality on the visible CIFAR-10 half: aligned detector against hash baselines.

Run by hand: ``python benchmarks/quality.py [--data DIR] [--jobs 2] [--contact 30]``.

It unpacks ``/work/shared/data/cifar10-jpg.tar.gz`` to a temporary folder (or uses
``--data``, a folder holding ``train/`` and ``test/``), then runs ``core.check`` cold (a
fresh store each time) with these policies:

- ``init``: exactly what ``leakcheck init`` writes for the folder layout (within-split
  included, ``aligned`` on);
- ``init, hash only``: the same with ``aligned: {severity: off}``: the time baseline;
- pHash alone, Hamming <= 10, and the 16 px thumbnail alone, cosine >= 0.90 with
  mirror (train~test only), for comparison (``--only init`` skips them).

For each it prints the recall of the listed near-duplicates and very-similar pairs
(ciFAIR judgments, found = both images members of one error-level finding; a link
below its detector's error level is weak, a warning, and links nothing at error level), also
for the two halves of the list (even / odd test index), how many test images any
finding flags at any level, the wall time and peak memory.  ``--contact N`` writes a
contact sheet of N unlisted pairs linked at error level across splits (test left,
train right).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import random
import re
import resource
import shutil
import tarfile
import tempfile
import time
from pathlib import Path

ARCHIVE = Path("/work/shared/data/cifar10-jpg.tar.gz")
LABELS = Path("/work/shared/data/cifar10-visible-duplicates.csv")
SCRATCH = Path("/work/scratch/cifar10")

HEAD = "version: 1\nsplits: {train: [train/**], test: [test/**]}\npairs: {within_split: off}\naugmentations: [hflip]\n"
BASELINES = {
    "pHash <= 10": HEAD + "detectors:\n  phash: {max_distance: 10}\n  thumbnail: {severity: off}\n"
                   "  aligned: {severity: off}\n",
    "thumbnail 16px cos >= 0.90": HEAD + "detectors:\n  phash: {severity: off}\n  thumbnail: {min_cosine: 0.90}\n"
                                  "  aligned: {severity: off}\n",
}
ALIGNED_ON = "  aligned:\n    severity: error\n"


EVERY = "augmentations: [hflip, vflip, rot90, rot180, rot270, transpose, transverse]"


def policies(root: Path, every: bool = False) -> dict[str, str]:
    """The ``leakcheck init`` policy for ``root``, unchanged (or with all 8 orientations);
    the same with aligned off; the baselines."""
    from pytest_leakcheck.init.recognise import detect, policy_text

    init = policy_text(detect(root))
    if every and EVERY not in init:  # leakcheck init writes all 8 since issue 26
        assert "augmentations: [hflip]" in init, "leakcheck init no longer writes the orientations this edits"
        init = init.replace("augmentations: [hflip]", EVERY)
    assert ALIGNED_ON in init, "leakcheck init no longer writes the aligned block this benchmark edits"
    return {"init": init, "init, hash only": init.replace(ALIGNED_ON, "  aligned:\n    severity: off\n"),
            **BASELINES}


def data_root(arg: str | None, tmp: Path) -> Path:
    if arg:
        return Path(arg)
    if (SCRATCH / "train").is_dir() and (SCRATCH / "test").is_dir():
        return SCRATCH
    print(f"unpacking {ARCHIVE} to {tmp} ...", flush=True)
    with tarfile.open(ARCHIVE) as tar:
        tar.extractall(tmp, filter="data")
    return tmp / "cifar10"


def run(name: str, text: str, root: Path, tmp: Path, jobs: int | None):
    from pytest_leakcheck import check
    from pytest_leakcheck.policy.load import load

    folder = tmp / re.sub(r"[^a-z0-9]+", "-", name)
    folder.mkdir()
    text = re.sub(r"(?m)^cache: .*$", f"cache: {folder}/cache.sqlite", text)
    (folder / "leakcheck.yaml").write_text(text)
    # The policy lives in the temp folder; the images stay where they are, untouched.
    policy = dataclasses.replace(load(folder / "leakcheck.yaml"), root=root)
    t0 = time.perf_counter()
    report = check(policy=policy, jobs=jobs)
    return report, time.perf_counter() - t0


def error_links(report) -> list[tuple[str, str, str]]:
    """Pairs linked at error level: error findings' pairs, minus aligned links below the error level.

    (findings.py caps weak links at warning; this measures the same whether or
    not the findings code in this tree already does.)"""
    cal = report.stats.get("aligned") or {}
    err = cal.get("error_threshold", -1.0)
    return [(p.a, p.b, p.detector) for f in report.findings if f.severity == "error" for p in f.pairs
            if p.detector != "aligned" or p.value >= err]


def score(report, pairs: list[tuple[str, str, str]], n_test: int) -> dict:
    # Found = both images members of one error-level finding.  A finding lists at
    # most 20 of its pairs (findings.MAX_PAIRS), so membership, not the pairs
    # shown, says what it linked; weak links make warnings and never merge.
    clusters = [{m.path for m in f.members} for f in report.findings if f.severity == "error"]
    flagged = {m.path for f in report.findings for m in f.members if m.path.startswith("test/")}
    together = {(a, b) for c in clusters for a in c if a.startswith("test/") for b in c if b.startswith("train/")}
    # No finding holds more than 25 files (issue 37), so a family of copies larger than that (CIFAR's
    # near-identical car photos) is several error findings joined by error-level bridge findings:
    # a pair in one such web of error findings is linked at error, and counted apart ("linked").
    linked = together | _webs(clusters)
    out = {"flagged": len(flagged), "flagged_pct": 100 * len(flagged) / n_test, "together": together,
           "linked": linked}
    for kind in ("near-duplicate", "very-similar"):
        listed = [(a, b) for a, b, j in pairs if j == kind]
        out[kind] = (sum((a, b) in together for a, b in listed), len(listed))
        out[kind + " linked"] = sum((a, b) in linked for a, b in listed)
        out[kind + " any"] = sum(a in flagged for a, _ in listed)
        for half in (0, 1):
            part = [(a, b) for a, b in listed if int(re.findall(r"\d+", a)[-1]) // 2 % 2 == half]
            out[f"{kind} half{half}"] = (sum((a, b) in together for a, b in part), len(part))
    return out


def _webs(clusters: list[set[str]]) -> set[tuple[str, str]]:
    """(test, train) pairs whose error findings share members, directly or through others."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for c in clusters:
        first = next(iter(c))
        for p in c:
            parent[find(p)] = find(first)
    webs: dict[str, set[str]] = {}
    for p in parent:
        webs.setdefault(find(p), set()).add(p)
    return {(a, b) for w in webs.values() for a in w if a.startswith("test/") for b in w if b.startswith("train/")}


def contact(report, root: Path, listed: set[tuple[str, str]], n: int, out: Path) -> int:
    from PIL import Image, ImageDraw

    found = {((a, b) if a.startswith("test/") else (b, a)): d for a, b, d in error_links(report)
             if {a[:4], b[:4]} == {"test", "trai"}}
    extra = sorted(set(found) - listed)
    pick = random.Random(0).sample(extra, min(n, len(extra)))
    cell, cols = 96, 3
    rows = (len(pick) + cols - 1) // cols
    sheet = Image.new("RGB", (cols * (2 * cell + 40), rows * (cell + 16)), "white")
    draw = ImageDraw.Draw(sheet)
    for k, (a, b) in enumerate(pick):
        x, y = (k % cols) * (2 * cell + 40), (k // cols) * (cell + 16)
        for dx, path in ((0, a), (cell, b)):
            with Image.open(root / path) as im:
                sheet.paste(im.convert("RGB").resize((cell, cell), Image.Resampling.NEAREST), (x + dx, y))
        draw.text((x + 2 * cell + 4, y + 2), f"#{k}", fill="black")
    sheet.save(out)
    with open(out.with_suffix(".csv"), "w", newline="") as fh:
        csv.writer(fh).writerows([("n", "test", "train", "detector"),
                                  *((k, a, b, found[a, b]) for k, (a, b) in enumerate(pick))])
    return len(extra)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", help="folder with train/ and test/ (default: unpack the archive)")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--contact", type=int, default=0, help="write a contact sheet of N unlisted flagged pairs")
    ap.add_argument("--only", choices=["init"], help="skip the single-detector baselines")
    ap.add_argument("--every-orientation", action="store_true",
                    help="the init policies with all 8 orientations instead of [hflip]")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="leakcheck-quality-"))
    try:
        root = data_root(args.data, tmp)
        with open(LABELS, newline="") as fh:
            pairs = [tuple(r) for r in csv.reader(fh)][1:]
        n_test = sum(1 for _ in (root / "test").rglob("*.jpg"))
        # Read every image once, so neither timed check pays for the disk alone
        # (the first would otherwise read from disk and the second from the OS cache).
        for f in root.rglob("*.jpg"):
            f.read_bytes()
        print(f"data: {root} ({n_test} test images), labels: {len(pairs)} pairs", flush=True)
        for name, text in policies(root, args.every_orientation).items():
            if args.only and not name.startswith(args.only):
                continue
            report, seconds = run(name, text, root, tmp, args.jobs)
            s = score(report, pairs, n_test)
            nd, vs = s["near-duplicate"], s["very-similar"]
            h0, h1 = s["near-duplicate half0"], s["near-duplicate half1"]
            rss = max(resource.getrusage(w).ru_maxrss for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 1024
            lk = s["near-duplicate linked"]
            print(f"{name:28s} near-dup at error {nd[0]}/{nd[1]} = {100 * nd[0] / nd[1]:.1f}% in one finding, "
                  f"{lk}/{nd[1]} = {100 * lk / nd[1]:.1f}% linked at error through capped findings "
                  f"(halves {h0[0]}/{h0[1]}, {h1[0]}/{h1[1]}; test image flagged at any level: "
                  f"{100 * s['near-duplicate any'] / nd[1]:.1f}%) | very-similar {vs[0]}/{vs[1]} | "
                  f"test images flagged (any level) {s['flagged']} = {s['flagged_pct']:.2f}% | cold {seconds:.0f} s "
                  f"| peak RSS so far {rss:.0f} MB", flush=True)
            cal = report.stats.get("aligned")
            print(f"{'':28s} {cal or ''}; decode {report.stats['seconds_decode']:.0f} s, "
                  f"search {report.stats['seconds_search']:.0f} s", flush=True)
            if cal and args.contact:
                out = Path(tempfile.gettempdir()) / f"leakcheck-quality-contact-{re.sub(r'[^a-z]+', '-', name)}.png"
                extra = contact(report, root, {(a, b) for a, b, _ in pairs}, args.contact, out)
                print(f"{'':28s} contact sheet of {args.contact} of {extra} unlisted error-level pairs: {out}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
