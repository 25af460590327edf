"""Near-duplicate quality on the visible CIFAR-10 half: aligned detector against hash baselines.

Run by hand: ``python benchmarks/quality.py [--data DIR] [--jobs 2] [--contact 30]``.

It unpacks ``/work/shared/data/cifar10-jpg.tar.gz`` to a temporary folder (or uses
``--data``, a folder holding ``train/`` and ``test/``), then runs ``core.check`` cold (a
fresh store each time) with three policies, train~test only (within-split off):

- default detectors plus ``aligned`` (the product with the new detector on);
- pHash alone, Hamming <= 10;
- the 16 px thumbnail alone, cosine >= 0.90 with mirror.

For each it prints the recall of the listed near-duplicates and very-similar pairs
(ciFAIR judgments, found = both images in one error-level finding), how many test
images any error-level cross-split finding flags, and the wall time; for aligned also
the calibrated threshold and the measured impostor rate.  ``--contact N`` writes a
contact sheet of N flagged pairs that are not in the list (test left, train right).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import random
import re
import shutil
import tarfile
import tempfile
import time
from pathlib import Path

ARCHIVE = Path("/work/shared/data/cifar10-jpg.tar.gz")
LABELS = Path("/work/shared/data/cifar10-visible-duplicates.csv")
SCRATCH = Path("/work/scratch/cifar10")

POLICIES = {
    "aligned (default + aligned)": "detectors:\n  aligned: {severity: error, false_alarms_per_10k: %(per10k)s}\n",
    "aligned only": "detectors:\n  phash: {severity: off}\n  thumbnail: {severity: off}\n"
                    "  aligned: {severity: error, false_alarms_per_10k: %(per10k)s}\n",
    "pHash <= 10": "detectors:\n  phash: {max_distance: 10}\n  thumbnail: {severity: off}\n",
    "thumbnail 16px cos >= 0.90": "detectors:\n  phash: {severity: off}\n  thumbnail: {min_cosine: 0.90}\n",
}
HEAD = "version: 1\nsplits: {train: [train/**], test: [test/**]}\npairs: {within_split: off}\naugmentations: [hflip]\n"


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
    from pytest_leakcheck.policy import load

    folder = tmp / "-".join(name.split()[:2])
    folder.mkdir()
    (folder / "leakcheck.yaml").write_text(HEAD + text + f"cache: {folder}/cache.sqlite\n")
    # The policy lives in the temp folder; the images stay where they are, untouched.
    policy = dataclasses.replace(load(folder / "leakcheck.yaml"), root=root)
    t0 = time.perf_counter()
    report = check(policy=policy, jobs=jobs)
    return report, time.perf_counter() - t0


def score(report, pairs: list[tuple[str, str, str]], n_test: int) -> dict:
    clusters = [
        {m.path for m in f.members}
        for f in report.findings
        if f.severity == "error" and len(f.splits) > 1
    ]
    flagged = {p for c in clusters for p in c if p.startswith("test/")}
    together = {(a, b) for c in clusters for a in c if a.startswith("test/") for b in c if b.startswith("train/")}
    out = {"flagged": len(flagged), "flagged_pct": 100 * len(flagged) / n_test, "together": together}
    for kind in ("near-duplicate", "very-similar"):
        listed = [(a, b) for a, b, j in pairs if j == kind]
        out[kind] = (sum((a, b) in together for a, b in listed), len(listed))
        out[kind + " any"] = sum(a in flagged for a, _ in listed)
    return out


def contact(report, root: Path, listed: set[tuple[str, str]], n: int, out: Path) -> int:
    from PIL import Image, ImageDraw

    found = {
        ((p.a, p.b) if p.a.startswith("test/") else (p.b, p.a)): p.detector
        for f in report.findings if f.severity == "error" and len(f.splits) > 1 for p in f.pairs
        if {p.a[:4], p.b[:4]} == {"test", "trai"}
    }
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
    ap.add_argument("--per10k", type=float, default=50)
    ap.add_argument("--contact", type=int, default=0, help="write a contact sheet of N unlisted flagged pairs")
    ap.add_argument("--only", choices=["aligned"], help="skip the baselines")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="leakcheck-quality-"))
    try:
        root = data_root(args.data, tmp)
        with open(LABELS, newline="") as fh:
            pairs = [tuple(r) for r in csv.reader(fh)][1:]
        n_test = sum(1 for _ in (root / "test").rglob("*.jpg"))
        print(f"data: {root} ({n_test} test images), labels: {len(pairs)} pairs", flush=True)
        for name, text in POLICIES.items():
            if args.only and not name.startswith(args.only):
                continue
            report, seconds = run(name, text % {"per10k": args.per10k}, root, tmp, args.jobs)
            s = score(report, pairs, n_test)
            nd, vs = s["near-duplicate"], s["very-similar"]
            print(f"{name:28s} near-dup {nd[0]}/{nd[1]} = {100 * nd[0] / nd[1]:.1f}% "
                  f"(test image flagged: {100 * s['near-duplicate any'] / nd[1]:.1f}%) | "
                  f"very-similar {vs[0]}/{vs[1]} = {100 * vs[0] / vs[1]:.1f}% | "
                  f"flagged {s['flagged']} = {s['flagged_pct']:.2f}% | cold {seconds:.0f} s", flush=True)
            cal = report.stats.get("aligned")
            if cal:
                print(f"{'':28s} threshold {cal['threshold']} calibrated on {cal['calibrated_on']} upside-down "
                      f"queries, measured {cal['false_alarms_per_10k']}/10k (asked {args.per10k:g}); "
                      f"decode {report.stats['seconds_decode']:.0f} s, search {report.stats['seconds_search']:.0f} s")
            if cal and args.contact:
                out = Path(tempfile.gettempdir()) / f"leakcheck-quality-contact-{re.sub(r'[^a-z]+', '-', name)}.png"
                extra = contact(report, root, {(a, b) for a, b, _ in pairs}, args.contact, out)
                print(f"{'':28s} contact sheet of {args.contact} of {extra} unlisted flagged pairs: {out}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
