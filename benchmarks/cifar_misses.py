"""Why listed CIFAR near-duplicates are missed at error level, and a sample of unlisted error links to judge.

Run by hand: ``python benchmarks/cifar_misses.py --data /tmp/cifar/cifar10 --jobs 2 [--store DIR]
[--audit 40 --seed 0] [--out DIR] [--candidates N]``.

It runs the ``init`` policy of ``benchmarks/quality.py`` once (cold, or warm from ``--store``),
keeping the search's own matches (after every detector's ``refine``) and the run's signatures,
then prints for each listed near-duplicate not in one error-level finding:

- every match between the two images (detector, value, orientation, weak or not);
- the aligned verdict of the pair in each of the 8 orientations (``pairs.pair_scores``, whatever
  its 16 px correlation), the pHash distance in each, the 16 px thumbnail cosine;
- the levels it was held to (aligned's own error level; the hash matches' one), and the findings
  (kind, severity, size) that hold each image.

``--audit N`` writes a contact sheet (``audit.png`` and ``audit.csv`` in ``--out``) of N unlisted
error-level test→train links drawn with ``random.Random(seed)``, each labelled with its detector and
value, and ``misses.png`` of the missed pairs (test left, train right), to judge by eye.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import quality  # noqa: E402  (benchmarks/quality.py: the policy and the scoring)

from pytest_leakcheck.orientation import ORIENTATIONS  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Captured:
    """What one check found, before findings: the run (signatures, stats) and its refined matches."""

    run: Any  # the SearchRun
    matches: list[Any]  # its Match list, after every detector's refine


def checked(root: Path, store: Path, jobs: int | None, candidates: int | None = None) -> tuple[Any, Captured]:
    """The ``init`` report of ``root`` (with aligned's ``candidates`` when given) and the search behind it
    (``pipeline.matches.search`` wrapped)."""
    from pytest_leakcheck.pipeline import matches as stage

    seen: dict[str, Any] = {}
    new_run, search = stage.new_run, stage.search

    def keep_run(*a: Any, **k: Any) -> Any:
        seen["run"] = new_run(*a, **k)
        return seen["run"]

    def keep_matches(*a: Any, **k: Any) -> Any:
        found, stats = search(*a, **k)
        seen["matches"] = list(found)
        return found, stats

    stage.new_run, stage.search = keep_run, keep_matches
    try:
        store.mkdir(parents=True, exist_ok=True)
        text = quality.policies(root)["init"]
        if candidates is not None:
            text = text.replace(quality.ALIGNED_ON, f"{quality.ALIGNED_ON}    candidates: {candidates}\n")
        report, seconds = quality.run("init", text, root, store, jobs) if not (store / "init").exists() \
            else _warm(text, root, store, jobs)
    finally:
        stage.new_run, stage.search = new_run, search
    print(f"check: {seconds:.0f} s", flush=True)
    return report, Captured(seen["run"], seen["matches"])


def _warm(text: str, root: Path, store: Path, jobs: int | None) -> tuple[Any, float]:
    """``quality.run`` against a store folder that already exists (a warm check)."""
    import re
    import time

    from pytest_leakcheck import check
    from pytest_leakcheck.policy.load import load

    folder = store / "init"
    text = re.sub(r"(?m)^cache: .*$", f"cache: {folder}/cache.sqlite", text)
    (folder / "leakcheck.yaml").write_text(text)
    policy = dataclasses.replace(load(folder / "leakcheck.yaml"), root=root)
    t0 = time.perf_counter()
    return check(policy=policy, jobs=jobs), time.perf_counter() - t0


def signals(cap: Captured, i: int, j: int) -> dict[str, object]:
    """The pair's aligned verdict, pHash distance and thumbnail cosine in each orientation of ``i``."""
    from pytest_leakcheck.detectors.aligned import pairs
    from pytest_leakcheck.detectors.hashing import hash_distance
    from pytest_leakcheck.search.kernels import normalised_thumbs, orient_thumbs

    run = cap.run
    data = pairs.prepare(run.sigs, True, None)
    out: dict[str, object] = {}
    thumbs = run.sigs.arrays["thumb"]
    for o in ORIENTATIONS:
        flip, turned = (True, "identity") if o == "hflip" else (False, o)
        s = pairs.pair_scores(data, np.array([i]), np.array([j]), np.array([flip]), always=1, turned=[turned])[0]
        ti = orient_thumbs(normalised_thumbs(thumbs[[i]]), o)
        tj = normalised_thumbs(thumbs[[j]])
        out[o] = (round(float(s), 3), hash_distance(run.sigs, "hash", i, j, o), round(float((ti * tj).sum()), 3))
    return out


def misses(report: Any, cap: Captured, listed: list[tuple[str, str]], together: set) -> list[tuple[str, str]]:
    """Print what links each missed pair, and return them."""
    run = cap.run
    row = {p: n for n, p in enumerate(run.paths)}
    cal = run.stats.get("aligned", {})
    print(f"levels: aligned warn {cal.get('threshold')} error {cal.get('error_threshold')} "
          f"hash warn {cal.get('hash_threshold')} hash error {cal.get('hash_error_threshold')} "
          f"hair {cal.get('hair')} neighbour {cal.get('neighbour_level')}")
    holding = {}
    for f in report.findings:
        for m in f.members:
            holding.setdefault(m.path, []).append(f"{f.kind}/{f.severity}/{len(f.members)}")
    missed = [(a, b) for a, b in listed if (a, b) not in together]
    for a, b in missed:
        i, j = row[a], row[b]
        print(f"\n{a} ~ {b}")
        for m in cap.matches:
            if {m.i, m.j} == {i, j}:
                print(f"   match {m.detector} {m.value} {m.orientation} weak={m.weak}")
        for o, (s, h, t) in signals(cap, i, j).items():
            print(f"   {o:10s} aligned {s:6.3f}  pHash {h}  thumb {t:6.3f}")
        for p in (a, b):
            near = [(run.paths[m.j if m.i == row[p] else m.i], m.detector, m.value, m.weak) for m in cap.matches
                    if row[p] in (m.i, m.j)]
            print(f"   {p}: in {holding.get(p, [])}; {len(near)} matches: {sorted(near, key=lambda x: -x[2])[:6]}")
    return missed


def sheet(root: Path, rows: list[tuple[str, str, str]], out: Path, cell: int = 128) -> None:
    """A contact sheet: each pair (test left, train right) with its number and label."""
    from PIL import Image, ImageDraw

    cols = 3
    height = cell + 14
    img = Image.new("RGB", (cols * (2 * cell + 12), max(1, (len(rows) + cols - 1) // cols) * height), "white")
    draw = ImageDraw.Draw(img)
    for k, (a, b, label) in enumerate(rows):
        x, y = (k % cols) * (2 * cell + 12), (k // cols) * height
        for dx, path in ((0, a), (cell, b)):
            with Image.open(root / path) as im:
                img.paste(im.convert("RGB").resize((cell, cell), Image.Resampling.NEAREST), (x + dx, y))
        draw.text((x + 2, y + cell), f"#{k} {label}", fill="black")
    img.save(out)


def audit(report: Any, root: Path, listed: set, n: int, seed: int, out: Path) -> None:
    """``n`` unlisted error-level test→train links drawn with ``random.Random(seed)``: sheet and CSV."""
    found = {((a, b) if a.startswith("test/") else (b, a)): (d, v) for a, b, d, v in _links(report)
             if {a[:4], b[:4]} == {"test", "trai"}}
    extra = sorted(set(found) - listed)
    pick = random.Random(seed).sample(extra, min(n, len(extra)))
    print(f"audit: {len(pick)} of {len(extra)} unlisted error-level test→train links")
    sheet(root, [(a, b, f"{found[a, b][0]} {found[a, b][1]:.3f}") for a, b in pick], out / "audit.png")
    with open(out / "audit.csv", "w", newline="") as fh:
        csv.writer(fh).writerows([("n", "test", "train", "detector", "value", "judgment"),
                                  *((k, a, b, *found[a, b], "") for k, (a, b) in enumerate(pick))])


def _links(report: Any) -> list[tuple[str, str, str, float]]:
    """``quality.error_links`` with each link's value."""
    err = (report.stats.get("aligned") or {}).get("error_threshold", -1.0)
    return [(p.a, p.b, p.detector, p.value) for f in report.findings if f.severity == "error" for p in f.pairs
            if p.detector != "aligned" or p.value >= err]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="folder with train/ and test/")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--store", help="keep the check's store here (a second run is warm)")
    ap.add_argument("--audit", type=int, default=0, help="sheet of N unlisted error-level links")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--candidates", type=int, help="aligned's candidates per image and split (default: the policy's)")
    ap.add_argument("--out", default=tempfile.gettempdir())
    args = ap.parse_args()
    root, out = Path(args.data), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    store = Path(args.store) if args.store else Path(tempfile.mkdtemp(prefix="leakcheck-misses-"))
    with open(quality.LABELS, newline="") as fh:
        labels = [tuple(r) for r in csv.reader(fh)][1:]
    report, cap = checked(root, store, args.jobs, args.candidates)
    n_test = sum(1 for _ in (root / "test").rglob("*.jpg"))
    s = quality.score(report, labels, n_test)
    nd, h0, h1 = s["near-duplicate"], s["near-duplicate half0"], s["near-duplicate half1"]
    print(f"near-dup at error {nd[0]}/{nd[1]} (halves {h0[0]}/{h0[1]}, {h1[0]}/{h1[1]}), "
          f"linked {s['near-duplicate linked']}, flagged {s['flagged']}")
    near = [(a, b) for a, b, j in labels if j == "near-duplicate"]
    missed = misses(report, cap, near, s["together"])
    sheet(root, [(a, b, "") for a, b in missed], out / "misses.png")
    if args.audit:
        audit(report, root, {(a, b) for a, b, _ in labels}, args.audit, args.seed, out)


if __name__ == "__main__":
    main()
