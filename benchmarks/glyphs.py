"""False alarms between different glyphs, and planted copies found, on handwritten characters and digits.

Handwriting (Omniglot, MNIST) is thin strokes on a plain background: any two
glyphs share most of their pixels, so they correlate highly and their stroke
corners match as keypoints whatever the character (issue 37).

    python benchmarks/glyphs.py [--omniglot DIR] [--tsuga DIR] [--only omniglot|mnist] [--jobs 2] [--workdir DIR]

``--omniglot`` and ``--tsuga`` are bare git mirrors of ``brendenlake/omniglot`` and
``quietlychris/tsuga`` (default: looked for under ``/work/.mirror``); nothing of them
enters the repository.  Two sets are built in a temporary folder (or ``--workdir``):

- **omniglot**: the 2,720 images of ``images_background_small1.zip`` (commit
  ``057f034``: 5 alphabets, 136 characters, each drawn once by 20 people; the full
  background zip is not in the mirror), split by drawer: drawers 1-14 in ``train``,
  15-20 in ``test``, so no copy crosses the splits;
- **mnist**: 1,000 train and 250 test digits of the MNIST PNGs in ``tsuga`` (commit
  ``fe4bf7f``, ``data/mnist/{train,test}``), the first of each name order, 100 and 25 per
  digit; its splits are taken as free of copies, so any other finding counts as false.

In each, 30 train glyphs are planted in ``test`` as copies (seeded): shifted 1-2 px sideways (0-2 px up or down),
scaled by 0.92-1.08, saved as JPEG (quality 75-92) or PNG.  The check runs cold with the
policy ``leakcheck init`` writes for the folders.  Printed per set: error-level findings
holding anything but one planted copy and its original (false errors, by the detectors of
their links), warnings likewise, the planted copies found at error level and at any level; each
report is kept as ``<set>.json`` in the work folder.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from PIL import Image  # noqa: E402

from pytest_leakcheck import check  # noqa: E402
from pytest_leakcheck.report.model import report_dict  # noqa: E402

MIRRORS = Path("/work/.mirror")
OMNIGLOT = ("057f034", "python/images_background_small1.zip")
TSUGA = "fe4bf7f"
COPIES, SEED = 30, 53


def _git(mirror: Path, *args: str) -> bytes:
    return subprocess.run(["git", "--git-dir", str(mirror), *args], check=True, capture_output=True).stdout


def _mirror(given: Path | None, name: str) -> Path:
    path = given or MIRRORS / name / "repo"
    if not path.exists():
        raise SystemExit(f"no mirror of {name} at {path}: pass its path")
    return path


def omniglot(mirror: Path, root: Path) -> list[Path]:
    """Drawers 1-14 in train, 15-20 in test; ``<split>/<alphabet>_<character>/<image>.png``."""
    commit, member = OMNIGLOT
    out = []
    with zipfile.ZipFile(io.BytesIO(_git(mirror, "show", f"{commit}:{member}"))) as z:
        for name in sorted(n for n in z.namelist() if n.endswith(".png")):
            *_, alphabet, character, file = name.split("/")
            split = "train" if int(file[:-4].split("_")[1]) <= 14 else "test"
            path = root / split / f"{alphabet}_{character}" / file
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(z.read(name))
            out.append(path)
    return out


def mnist(mirror: Path, root: Path, per_digit: tuple[int, int] = (100, 25)) -> list[Path]:
    """The first digits of each name in ``tsuga``'s MNIST PNGs: ``<split>/<digit>/<image>.png``."""
    names = _git(mirror, "ls-tree", "-r", "--name-only", TSUGA, "data/mnist").decode().split()
    out = []
    for split, count in zip(("train", "test"), per_digit):
        taken: Counter[str] = Counter()
        for name in sorted(n for n in names if n.startswith(f"data/mnist/{split}/") and n.endswith(".png")):
            digit = name.rsplit("/", 1)[1].split("_")[0]
            if taken[digit] >= count:
                continue
            taken[digit] += 1
            path = root / split / digit / name.rsplit("/", 1)[1]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(_git(mirror, "show", f"{TSUGA}:{name}"))
            out.append(path)
    return out


def plant(root: Path, files: list[Path], n: int = COPIES, seed: int = SEED) -> dict[str, str]:
    """``n`` train glyphs copied into test, shifted, scaled and re-saved: copy -> original (relative)."""
    rng = random.Random(seed)
    train = [f for f in files if f.relative_to(root).parts[0] == "train"]
    planted = {}
    for k, original in enumerate(sorted(rng.sample(train, n))):
        im = Image.open(original).convert("L")
        w, h = im.size
        bg = max(im.getextrema(), key=im.histogram().__getitem__)  # the background: the commoner extreme
        scale = rng.uniform(0.92, 1.08)
        im = im.resize((round(w * scale), round(h * scale)), Image.BICUBIC)
        canvas = Image.new("L", (w, h), bg)
        dx, dy = rng.choice((-2, -1, 1, 2)), rng.choice((-2, -1, 0, 1, 2))
        canvas.paste(im, ((w - im.width) // 2 + dx, (h - im.height) // 2 + dy))
        rel = original.relative_to(root)
        jpeg = k % 2 == 0
        copy = root / "test" / rel.parts[1] / f"copy{k:02d}.{'jpg' if jpeg else 'png'}"
        copy.parent.mkdir(parents=True, exist_ok=True)
        canvas.save(copy, **({"quality": rng.randint(75, 92)} if jpeg else {}))
        planted[str(copy.relative_to(root))] = str(rel)
    return planted


def policy(root: Path) -> Path:
    from pytest_leakcheck.init.recognise import detect, policy_text

    path = root / "leakcheck.yaml"
    path.write_text(policy_text(detect(root)))
    return path


def score(report: Any, planted: dict[str, str]) -> dict[str, Any]:
    """False errors and warnings (findings holding anything but one planted pair), planted copies at error."""
    pairs = {frozenset(p) for p in planted.items()}
    false: dict[str, Counter[str]] = {"error": Counter(), "warning": Counter()}
    found, seen = set(), set()
    for f in report.findings:
        paths = frozenset(m.path for m in f.members)
        seen |= {p for p in pairs if p <= paths}
        if f.severity == "error":
            found |= {p for p in pairs if p <= paths}
        if paths in pairs or f.severity not in false:
            continue
        detectors = {m.link.detector for m in f.members if m.link} | {p.detector for p in f.pairs}
        false[f.severity][f"{f.kind} ({'+'.join(sorted(detectors)) or '-'})"] += 1
    return {"false": false, "found": len(found), "seen": len(seen), "planted": len(pairs)}


def run(name: str, build: Any, workdir: Path, jobs: int, report_path: Path | None = None) -> None:
    root = workdir / name
    files = build(root)
    planted = plant(root, files)
    path = policy(root)
    t = time.perf_counter()
    report = check(path, jobs=jobs, use_cache=False)
    wall = time.perf_counter() - t
    s = score(report, planted)
    images = len(files) + len(planted)
    print(f"{name}: {images} images ({len(planted)} planted copies), cold check {wall:.1f} s")
    for severity, counts in s["false"].items():
        listed = "".join(f"\n    {k}: {v}" for k, v in counts.most_common())
        print(f"  false {severity}s: {sum(counts.values())}{listed}")
    print(f"  planted copies at error level: {s['found']}/{s['planted']}, at any level: {s['seen']}/{s['planted']}")
    same, aligned = report.stats.get("same_scene", {}), report.stats.get("aligned", {})
    print(f"  same_scene: {same.get('skipped', '?')} of {len(files) + len(planted)} images not searched; "
          f"aligned: {aligned.get('glyphs_held', 0)} error-level links between glyphs held to warning")
    if report_path:
        report_path.write_text(json.dumps(report_dict(report)))

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--omniglot", type=Path, help="bare git mirror of brendenlake/omniglot")
    ap.add_argument("--tsuga", type=Path, help="bare git mirror of quietlychris/tsuga")
    ap.add_argument("--only", choices=["omniglot", "mnist"])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--workdir", type=Path)
    args = ap.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="leakcheck-glyphs-"))
    if args.only in (None, "omniglot"):
        mirror = _mirror(args.omniglot, "brendenlake+omniglot")
        run("omniglot", lambda root: omniglot(mirror, root), workdir, args.jobs, workdir / "omniglot.json")
    if args.only in (None, "mnist"):
        mirror = _mirror(args.tsuga, "quietlychris+tsuga")
        run("mnist", lambda root: mnist(mirror, root), workdir, args.jobs, workdir / "mnist.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
