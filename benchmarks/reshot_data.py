"""Lay out ``benchmarks/reshot.py``'s two re-shot sets from local git mirrors of their public sources.

Run by hand: ``python benchmarks/reshot_data.py --mirrors DIR --out DIR [--only multiview|lowres]``.
``--mirrors`` holds one bare clone per source, named ``owner+name/repo`` (``git clone --mirror``
of github.com/owner/name); nothing is downloaded here and nothing is written into the repository.

``multiview`` (``--out/multiview``): the set ``reshot.py`` describes (long side at most 1,024 px;
``--long-side 325`` writes the same scenes at a holiday photo's size to ``--out/multiview-325``).

``lowres`` (``--out/lowres``): small photos, re-shot the ways a person re-shoots, none of them
from the multi-view sets above:

- ``pano-*``: three sets of the Adobe Panoramas data set (Brandt, CVPR 2010: ``halfdome``,
  ``rio``, ``shanghai``; 14, 56 and 30 overlapping shots taken turning on the spot) as kept, at
  256 px, in github.com/fhalamos/interest_points_feature_descriptors (``data/``): a step aside
  and reframing, shot after shot (its fourth set there, ``goldengate``, is 150 px: too small);
- ``burst-freiburg``: 17 frames, one a second, of a hand-held camera sweeping a desk (TUM RGB-D
  ``freiburg`` sequence as kept in github.com/magicleap/SuperGluePretrainedNetwork,
  ``assets/freiburg_sequence``): a burst;
- ``tour-*``: photos of four landmarks taken by different people (Photo Tourism, same repository,
  ``assets/phototourism_sample_images``; every cross-split pair of a landmark is a re-shot).

Left out after measuring: that repository's ScanNet pairs and the WxBS pairs of
github.com/Vincentqyw/image-matching-webui are wide-baseline matching tests (frames far apart,
day against night, summer against winter): ORB with 1,000 points on the whole image and a
MAGSAC homography verifies 1 of 15 and 1 of 29 of them, so they measure nothing a keypoint
search on small photos can reach.

Every photo is reduced to a long side of 320 to 480 px (fixed per file; the panoramas stay at
their 256 px), and every second test-split photo of a scene (odd-numbered test files) is turned
by 90 degrees, in pixels, as a phone without orientation metadata stores a turned shot.  Clean
photos: BSDS500 and the ImageNet sample photos (the multi-view set's distractors) reduced the
same way; the re-shot sources hold too few scenes of a single photo to measure a rate per 1,000.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import subprocess
from pathlib import Path

MULTIVIEW = [
    ("openMVG+SfM_quality_evaluation", "Benchmarking_Camera_Calibration_2008/fountain-P11/images/", "fountain"),
    ("openMVG+SfM_quality_evaluation", "Benchmarking_Camera_Calibration_2008/Herz-Jesus-P25/images/", "herzjesu"),
    ("openMVG+SfM_quality_evaluation", "Benchmarking_Camera_Calibration_2008/castle-P30/images/", "castle"),
    ("openMVG+SfM_quality_evaluation", "Benchmarking_Camera_Calibration_2008/entry-P10/images/", "entry"),
    ("openMVG+ImageDataset_SceauxCastle", "images/", "sceaux"),
    ("cvg+Hierarchical-Localization", "datasets/sacre_coeur/mapping/", "sacrecoeur"),
    ("BIDS+BSDS500", "BSDS500/data/images/", "bsds"),
    ("EliSchwartz+imagenet-sample-images", "", "imagenet"),
]
SUPERGLUE = "magicleap+SuperGluePretrainedNetwork"
ADOBE = "fhalamos+interest_points_feature_descriptors"
PANOS = ("halfdome", "rio", "shanghai")
PHOTO = (".jpg", ".jpeg", ".png")


def _files(mirror: Path, prefix: str) -> list[str]:
    out = subprocess.run(["git", "-C", str(mirror), "ls-tree", "-r", "--name-only", "HEAD"],
                         capture_output=True, text=True, check=True).stdout.split("\n")
    return sorted(f for f in out if f.startswith(prefix) and f.lower().endswith(PHOTO)
                  and (prefix or "/" not in f))


def _read(mirror: Path, path: str):
    from PIL import Image

    data = subprocess.run(["git", "-C", str(mirror), "show", f"HEAD:{path}"], capture_output=True, check=True).stdout
    return Image.open(io.BytesIO(data)).convert("RGB")


def _fit(img, side: int):
    from PIL import Image

    s = side / max(img.size)
    return img.resize((max(1, round(img.width * s)), max(1, round(img.height * s))), Image.Resampling.LANCZOS) \
        if s < 1 else img


def _small_side(name: str) -> int:
    """A long side of 320..480 px, fixed by the file's name (not random between runs)."""
    return 320 + int(hashlib.sha256(name.encode()).hexdigest(), 16) % 161


def multiview(mirrors: Path, out: Path, side: int = 1024) -> None:
    for repo, prefix, name in MULTIVIEW:
        files = _files(mirrors / repo / "repo", prefix)
        (out / name).mkdir(parents=True, exist_ok=True)
        for f in files:
            _fit(_read(mirrors / repo / "repo", f), side).save(out / name / (Path(f).stem + ".jpg"), quality=92)
        print(name, len(files))


def _lowres_scenes(mirrors: Path) -> dict[str, list[tuple[str, str]]]:
    """Scene folder -> [(mirror, path)] in shot order."""
    scenes: dict[str, list[tuple[str, str]]] = {}
    for f in _files(mirrors / ADOBE / "repo", "data/"):
        pano = f.split("/")[1]
        if pano in PANOS:
            scenes.setdefault(f"pano-{pano}", []).append((ADOBE, f))
    for f in _files(mirrors / SUPERGLUE / "repo", "assets/"):
        stem = Path(f).stem
        if "/freiburg_sequence/" in f:
            scenes.setdefault("burst-freiburg", []).append((SUPERGLUE, f))
        elif "/phototourism_sample_images/" in f:
            scenes.setdefault("tour-" + stem.rsplit("_", 2)[0].replace("_", ""), []).append((SUPERGLUE, f))
    return scenes


def lowres(mirrors: Path, out: Path) -> None:
    from PIL import Image

    for scene, shots in sorted(_lowres_scenes(mirrors).items()):
        (out / scene).mkdir(parents=True, exist_ok=True)
        for k, (repo, f) in enumerate(shots):
            name = f"{k:02d}.jpg"
            img = _fit(_read(mirrors / repo / "repo", f), _small_side(f"{scene}/{name}"))
            if k % 4 == 3:  # every second test shot (reshot.py: odd files are test) turned, both ways
                img = img.transpose(Image.Transpose.ROTATE_90 if k % 8 == 3 else Image.Transpose.ROTATE_270)
            img.save(out / scene / name, quality=90)
        print(scene, len(shots))
    for repo, prefix, name in MULTIVIEW[-2:]:  # the clean photos
        (out / name).mkdir(parents=True, exist_ok=True)
        files = _files(mirrors / repo / "repo", prefix)
        for f in files:
            img = _fit(_read(mirrors / repo / "repo", f), _small_side(f))
            img.save(out / name / (Path(f).stem + ".jpg"), quality=90)
        print(name, len(files))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirrors", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", choices=("multiview", "lowres"))
    parser.add_argument("--long-side", type=int, default=1024,
                        help="multiview only: reduce every photo to this long side (325: the multi-view scenes "
                             "at a holiday photo's size, written to multiview-<side>)")
    args = parser.parse_args()
    if args.only in (None, "multiview"):
        suffix = "" if args.long_side == 1024 else f"-{args.long_side}"
        multiview(args.mirrors, args.out / f"multiview{suffix}", args.long_side)
    if args.only in (None, "lowres"):
        lowres(args.mirrors, args.out / "lowres")


if __name__ == "__main__":
    main()
