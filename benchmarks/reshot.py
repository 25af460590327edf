"""Re-shots of one scene (other viewpoints, a step aside, other light) and clean distractor photos.

Run by hand: ``python benchmarks/reshot.py [--data /work/scratch/data/reshot] [--jobs 2] [--repeat 2] [--no-off]``.

Two sets, each laid out by ``benchmarks/reshot_data.py`` from local mirrors of their sources:
the multi-view set described here (``--data DIR/multiview``; ``DIR/multiview-325``: the same
scenes at a holiday photo's 325 px) and the low-resolution set (``--data DIR/lowres``: panoramas
shot after shot, a burst, landmark photos by different people, every second test shot turned
90 degrees; its sources and clean photos are named in ``reshot_data.py``).  Folders named
``tour-*`` are landmarks photographed by different people: every cross-split pair is a re-shot,
as for ``sacrecoeur``.

Data (public, fetched from GitHub with the session's fetch tool; never committed; the
script expects them unpacked under ``--data`` as ``<scene>/<file>.jpg``, long side at
most 1024 px):

- re-shot scenes: Strecha et al.'s multi-view benchmark ("On Benchmarking Camera
  Calibration and Multi-View Stereo", CVPR 2008) as kept in
  github.com/openMVG/SfM_quality_evaluation: ``fountain-P11``, ``Herz-Jesus-P25``,
  ``castle-P30`` and ``entry-P10`` (the entry is a gate of the same castle, so the two are
  one scene); Pierre Moulon's Sceaux castle images (github.com/openMVG/ImageDataset_SceauxCastle);
  the ten Sacre-Coeur photos of github.com/cvg/Hierarchical-Localization (``datasets/sacre_coeur/mapping``,
  internet photos of one landmark by different people).
- distractors (clean photos, no two of one scene), 1,500 in all:
  - ``bsds``: the 500 photos of BSDS500 (github.com/BIDS/BSDS500, ``BSDS500/data/images``);
  - ``imagenet``: the 1,000 ImageNet photos of github.com/EliSchwartz/imagenet-sample-images,
    one per ImageNet class (files named by their class's WordNet id); 23 of them are under
    200 px, which same_scene skips, so they are not counted as clean photos searched.

Folder names: ``fountain`` (fountain-P11), ``herzjesu`` (Herz-Jesus-P25), ``castle``
(castle-P30), ``entry`` (entry-P10), ``sceaux``, ``sacrecoeur``, ``bsds``, ``imagenet``.

Each scene's views, in file order, alternate between ``train`` (even) and ``test`` (odd);
distractors go 80/20 into the same splits.  "Re-shot pairs" are a test view and the train
view next to it in the sequence (one step of the camera), and every cross-split pair of
the Sacre-Coeur photos.  The check is ``leakcheck init``'s policy with ``same_scene`` at
``error``, run cold; the script prints the re-shot pairs flagged (any level, and error
level), the re-shot pairs among the candidate pairs the search verified (its retrieval,
apart from verification) and per source (the folder name up to its first ``-``), the test
views linked to their scene, false flags (distractors, or views of two different scenes,
in any same-scene finding) per 1,000 clean photos, the levels used, the cold time against
the same policy with ``same_scene`` off (not with ``--no-off``), and the store's growth per image.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

SAME = {"entry": "castle"}  # folders that show one scene
#: Photos under this long side are skipped by same_scene: not counted as searched.
from pytest_leakcheck.detectors.same_scene.features import MIN_SIDE  # noqa: E402
#: Folders of clean photos (no two of one scene): BSDS500, and the second source named above.
DISTRACTORS = {"bsds", "imagenet"}


def build(data: Path, out: Path) -> list[tuple[str, str, str, int, int]]:
    """Lay the photos out as train/test folders; (path, scene, folder, index, long side) per photo."""
    from PIL import Image

    records = []
    for folder in sorted(p for p in data.iterdir() if p.is_dir()):
        for k, f in enumerate(sorted(folder.glob("*.jpg"))):
            test = k % 5 == 0 if folder.name in DISTRACTORS else k % 2 == 1
            rel = f"{'test' if test else 'train'}/{folder.name}/{f.name}"
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, out / rel)
            with Image.open(f) as img:
                side = max(img.size)
            records.append((rel, SAME.get(folder.name, folder.name), folder.name, k, side))
    return records


def every_pair(folder: str) -> bool:
    """Folders of photos by different people of one landmark: every cross-split pair is a re-shot."""
    return folder == "sacrecoeur" or folder.startswith("tour-")


def reshot_pairs(records: list[tuple[str, str, str, int, int]]) -> set[frozenset[str]]:
    out = set()
    for a in records:
        for b in records:
            if a[0] < b[0] and a[2] == b[2] and a[2] not in DISTRACTORS and a[0].split("/")[0] != b[0].split("/")[0]:
                if abs(a[3] - b[3]) == 1 or every_pair(a[2]):
                    out.add(frozenset((a[0], b[0])))
    return out


def spy_candidates() -> list[set[frozenset[str]]]:
    """Record the candidate pairs same-scene verifies (its retrieval), to measure it apart from verification.

    The spy wraps the module function the search calls and returns its result unchanged.
    """
    try:
        from pytest_leakcheck.detectors.same_scene import features as scene
    except ImportError:  # the flat tree before the rooms move
        from pytest_leakcheck.detectors import _scene as scene
    seen: list[set[frozenset[str]]] = []
    real = scene.candidate_pairs

    def spy(run, *args, **kwargs):
        pairs = real(run, *args, **kwargs)
        seen.append({frozenset((run.paths[i], run.paths[j])) for i, j in pairs})
        return pairs

    scene.candidate_pairs = spy
    return seen


def run(root: Path, text: str, jobs: int) -> tuple[float, object, int]:
    from pytest_leakcheck import check

    store = root / ".bench-store"
    shutil.rmtree(store, ignore_errors=True)
    path = root / "leakcheck.yaml"
    path.write_text(text.replace("cache: .leakcheck/cache.sqlite", f"cache: {store}/cache.sqlite"))
    t = time.perf_counter()
    report = check(path, jobs=jobs)
    dt = time.perf_counter() - t
    size = sum(f.stat().st_size for f in store.glob("*"))
    return dt, report, size


def init_policy(root: Path) -> str:
    try:
        from pytest_leakcheck.init.recognise import detect, policy_text
    except ImportError:  # the flat tree before the layers move
        from pytest_leakcheck.layout import detect, policy_text
    return policy_text(detect(root))


def _policies(root: Path, options: list[str]) -> tuple[str, str]:
    """``leakcheck init``'s policy with same_scene at error (plus ``--set`` options), and with it off."""
    base = init_policy(root)
    head = "same_scene:\n    severity: warning"
    assert head in base, "leakcheck init no longer writes a same_scene section"
    extra = "".join(f"\n    {o.split('=', 1)[0]}: {o.split('=', 1)[1]}" for o in options)
    return (base.replace(head, "same_scene:\n    severity: error" + extra),
            base.replace(head, "same_scene:\n    severity: off"))


def evaluate(records: list[tuple[str, str, str, int, int]], report: object,
             candidates: set[frozenset[str]]) -> dict[str, object]:
    """Re-shot pairs flagged (any level, error level), among the candidates, test views linked, false flags."""
    scene_of = {r[0]: r[1] for r in records}
    linked: set[frozenset[str]] = set()
    linked_error: set[frozenset[str]] = set()
    false_members: set[str] = set()
    turned = [frozenset((p.a, p.b)) for f in report.findings for p in f.pairs if p.detector == "turned-copy"]
    for f in report.findings:
        # A same-scene match judged a turned copy (turned_copy) is same-scene's find too.
        if f.kind != "same-scene" and not any(p.detector in ("same-scene", "turned-copy") for p in f.pairs):
            continue
        paths = [m.path for m in f.members]
        scenes = {scene_of[p] for p in paths}
        if len(scenes) > 1 or scenes & DISTRACTORS:
            false_members.update(p for p in paths if scene_of[p] in DISTRACTORS or len(scenes) > 1)
        for a in paths:
            for b in paths:
                if a < b:
                    linked.add(frozenset((a, b)))
                    if f.severity == "error":
                        linked_error.add(frozenset((a, b)))
    truth = reshot_pairs(records)
    tests = [r[0] for r in records if r[0].startswith("test/") and r[1] not in DISTRACTORS]

    def partnered(pairs: set[frozenset[str]]) -> int:
        return sum(any(frozenset((t, o)) in pairs and scene_of[o] == scene_of[t] and o.startswith("train/")
                       for o in scene_of) for t in tests)

    source = {r[0]: r[2].split("-")[0] for r in records}
    by_source: dict[str, list[int]] = {}
    for pair in truth:
        row = by_source.setdefault(source[next(iter(pair))], [0, 0, 0])
        row[0] += 1
        row[1] += pair in candidates
        row[2] += pair in linked
    return {"truth": len(truth), "flagged": len(truth & linked), "flagged_error": len(truth & linked_error),
            "candidates": len(truth & candidates), "candidate_pairs": len(candidates),
            "verified": len(truth & candidates & linked), "by_source": by_source,
            "tests": len(tests), "tests_linked": partnered(linked), "tests_candidate": partnered(candidates),
            "false": len(false_members), "clean": sum(1 for r in records if r[1] in DISTRACTORS and r[4] >= MIN_SIDE),
            # Re-shots are other shots, not copies: a turned-copy link between two views is a kind error.
            "turned": len(turned), "turned_views": sum(1 for t in turned if {scene_of[p] for p in t} - DISTRACTORS),
            "turned_pairs": sorted(" ~ ".join(sorted(t)) for t in turned)[:5]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/work/scratch/data/reshot"))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a same_scene option for the 'on' policy (e.g. candidates=4), for tuning")
    parser.add_argument("--no-off", action="store_true", help="skip the run with same_scene off (no cost ratio)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="leakcheck-reshot-"))
    records = build(args.data, root)
    on, off = _policies(root, args.set)
    times: dict[str, list[float]] = {"on": [], "off": []}
    sizes: dict[str, int] = {}
    seen = spy_candidates()
    for _ in range(args.repeat):
        for name, text in ((("on", on),) if args.no_off else (("off", off), ("on", on))):
            seen.clear()
            dt, report, sizes[name] = run(root, text, args.jobs)
            times[name].append(dt)
            if name == "on":
                rep_on, candidates = report, set().union(*seen)
    e = evaluate(records, rep_on, candidates)
    cal = rep_on.stats.get("same_scene", {})
    n, clean = len(records), e["clean"]
    views = sum(1 for r in records if r[1] not in DISTRACTORS)
    print(f"photos: {n} ({views} views of {len({r[1] for r in records} - DISTRACTORS)} scenes, "
          f"{n - views} distractors, {clean} of them large enough to search)")
    print(f"re-shot pairs flagged: {e['flagged']}/{e['truth']} = {e['flagged'] / e['truth']:.1%} "
          f"(error level: {e['flagged_error']}/{e['truth']})")
    print(f"candidate recall: {e['candidates']}/{e['truth']} re-shot pairs among the {e['candidate_pairs']} "
          f"candidate pairs verified; of those, {e['verified']} flagged directly")
    print("by source (pairs, candidates, flagged): "
          + ", ".join(f"{k} {v[0]}/{v[1]}/{v[2]}" for k, v in sorted(e["by_source"].items())))
    print(f"test views linked to a train view of their scene: {e['tests_linked']}/{e['tests']} "
          f"(one among the candidates: {e['tests_candidate']})")
    print(f"false flags: {e['false']} photos = {1000 * e['false'] / clean:.1f} per 1,000 clean photos")
    print(f"turned-copy links (copies, not re-shots): {e['turned']}, {e['turned_views']} of them between views of a scene"
          + "".join(f"\n  {pair}" for pair in e["turned_pairs"]))
    print(f"levels: warning {cal.get('threshold')} / error {cal.get('error_threshold')} inliers; "
          f"calibrated on {cal.get('calibrated_on')} impostors, largest {cal.get('largest_impostor')}; "
          f"floor used: {cal.get('floor')}; images searched {cal.get('images')}, skipped {cal.get('skipped')}")
    if args.no_off:
        print(f"cold check: same_scene on {min(times['on']):.1f} s")
        shutil.rmtree(root, ignore_errors=True)
        return
    print(f"cold check: same_scene on {min(times['on']):.1f} s (runs {', '.join(f'{t:.1f}' for t in times['on'])}), "
          f"off {min(times['off']):.1f} s (runs {', '.join(f'{t:.1f}' for t in times['off'])}): "
          f"{min(times['on']) / min(times['off']):.2f}x")
    print(f"store: {sizes['on'] / n / 1024:.1f} kB per image with same_scene, {sizes['off'] / n / 1024:.1f} kB "
          f"without (+{(sizes['on'] - sizes['off']) / n / 1024:.1f} kB)")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
