"""Field benchmark: `leakcheck init` then `leakcheck check` on real public datasets, as a new user runs them.

Run by hand (never in CI; the data stays outside the repository)::

    python benchmarks/field.py --fetch              # once: clone the datasets (field_sources.py)
    python benchmarks/field.py [--only chess,eggs] [--max-images 500] [--timeout 900]
    python benchmarks/field.py --reuse              # re-judge the last reports (after editing audits)

Per dataset (one at a time) it deletes any policy and store, runs ``leakcheck init`` on
the dataset root, then ``leakcheck check --format json -j 2`` cold under ``/usr/bin/time
-v`` (peak RSS of the largest process), and a bare full decode of the same image files in
two processes (Pillow, ``convert("RGB")``) just before and just after it, wall and CPU
seconds (CPU: user + system of every process, steadier on a loaded machine). From the
report it prints:

- findings by kind and severity, and the largest finding (members);
- every error-level link (member -> the member it is linked to) judged by provenance
  (``field_truth.py``: Roboflow source names, phone edits, capture-time bursts, planted
  copies): ``same-source``, ``burst`` or ``unknown``;
- recall of provenance-known leaks: files with a same-source partner in another split
  (and, separately, a burst partner within 10 s) that share a pixel finding with one at
  error level (and at any level);
- contact sheets (``OUT/<name>/contact_<detector>.png``) of a seeded random sample of
  error links (``--sample`` per detector, and as many cross-split warning links on
  ``contact_warnings.png``), the two images side by side and numbered, with
  ``OUT/<name>/audit_template.csv`` to judge them; ``missed_<copies|bursts>.png``: known
  pairs no finding links. ``--audit DIR`` (default ``benchmarks/field_audit``) reads the judged CSVs
  back (``judgment``: same = one photograph or a burst shot seconds apart; subject = the
  same subject in another session, a group leak rather than a copy; different; unsure)
  and prints the audited precision (same + subject over the sure ones; copies only beside
  it) and the counts.

Results go to ``OUT/field.json`` and a markdown table ``OUT/field.md`` (OUT defaults to
``/work/field-runs``).
"""

from __future__ import annotations

import argparse
import collections
import csv
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import field_sources  # noqa: E402
import field_truth  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
IMAGE_EXT = {".jpg", ".jpeg", ".jpe", ".jfif", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".dcm"}  # as the check reads them (prado: 159 .jfif)
PIXEL_KINDS = {"identical-file", "identical-pixels", "near-duplicate", "same-scene"}

BARE_DECODE = """
import sys, multiprocessing
from PIL import Image
def load(path):
    # A file of the split that is no image (a macOS ._ AppleDouble file named .jpg, in uav) is read, not decoded.
    try:
        with Image.open(path) as im:
            return im.convert("RGB").size
    except Exception:
        pass
    try:  # what Pillow cannot open: a DICOM's pixels, a float64 TIFF's bytes (ctdwt)
        if path.endswith(".dcm"):
            import pydicom
            return pydicom.dcmread(path).pixel_array.shape
        import numpy
        return numpy.fromfile(path, dtype="u1").shape
    except Exception:
        return None
if __name__ == "__main__":
    paths = sys.stdin.read().split("\\n")
    with multiprocessing.Pool(2) as pool:
        pool.map(load, [p for p in paths if p], chunksize=8)
"""


def cpu_seconds(time_v: str) -> float:
    """User + system CPU seconds from ``/usr/bin/time -v`` (children included): on a shared,
    loaded machine a steadier measure of work than wall time."""
    found = re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", time_v)
    return round(sum(map(float, found)), 1)


def cli(*args: str, timeout: float, rss: bool = False) -> tuple[int, str, str, float, float]:
    """Run the leakcheck CLI of this worktree; (exit code, stdout, stderr, seconds, peak RSS MB)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [PYTHON, "-m", "pytest_leakcheck", *args]
    if rss:
        cmd = ["/usr/bin/time", "-v", *cmd]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # our own child's session only
        out, err = proc.communicate()
        return -9, out, err, time.monotonic() - start, 0.0
    seconds = time.monotonic() - start
    match = re.search(r"Maximum resident set size \(kbytes\): (\d+)", err)
    return proc.returncode, out, err, seconds, int(match.group(1)) / 1024 if match else 0.0


def images_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.suffix.lower() in IMAGE_EXT and ".leakcheck" not in p.parts)


def bare_decode(paths: list[Path], timeout: float) -> tuple[float, float]:
    """Wall and CPU seconds of a full decode of ``paths`` in two processes."""
    start = time.monotonic()
    done = subprocess.run(["/usr/bin/time", "-v", PYTHON, "-c", BARE_DECODE], input="\n".join(map(str, paths)),
                          text=True, check=True, timeout=timeout, capture_output=True)
    return time.monotonic() - start, cpu_seconds(done.stderr)


def subset(root: Path, out: Path, max_images: int, seed: int) -> Path:
    """A copy of ``root`` (hard links) with ``max_images`` of its images, every other file kept."""
    target = out / f"subset-{max_images}"
    if target.exists():
        shutil.rmtree(target)
    images = images_under(root)
    keep = set(random.Random(seed).sample(images, min(max_images, len(images))))
    for path in root.rglob("*"):
        if not path.is_file() or ".leakcheck" in path.parts or path.name == "leakcheck.yaml":
            continue
        if path.suffix.lower() in IMAGE_EXT and path not in keep:
            continue
        dest = target / path.relative_to(root)
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.link(path, dest)
    return target


def error_links(report: dict, severity: str = "error") -> list[dict]:
    """Each member's link in a pixel finding of ``severity``: at error, the pairs the gate fails on;
    at warning (across splits), where a copy the gate should fail on may hide."""
    links = []
    for finding in report["findings"]:
        if finding["severity"] != severity or finding["kind"] not in PIXEL_KINDS:
            continue
        split = {m["path"]: m["split"] for m in finding["members"]}
        for member in finding["members"]:
            link = member.get("link")
            if link:
                links.append({"a": member["path"], "b": link["to"], "split_a": member["split"],
                              "split_b": split.get(link["to"], "?"), "detector": link["detector"],
                              "value": link["value"], "orientation": link["orientation"],
                              "kind": finding["kind"], "size": len(finding["members"])})
    return links


def missed(report: dict, partners: dict[str, frozenset[str]], splits: dict[str, str]) -> list[dict]:
    """Known pairs across splits that share no pixel finding (one per held-out file), for a sheet."""
    linked: set[frozenset[str]] = set()
    for finding in report["findings"]:
        if finding["kind"] in PIXEL_KINDS:
            paths = sorted(m["path"] for m in finding["members"])
            linked.update(frozenset((a, b)) for a in paths for b in paths if a < b)
    out = []
    for path in sorted(partners):
        if splits.get(path) == "train":
            continue
        for other in sorted(partners[path]):
            if frozenset((path, other)) not in linked:
                out.append({"a": path, "b": other, "split_a": splits.get(path, "?"), "split_b": splits.get(other, "?"),
                            "detector": "missed", "value": 0.0, "orientation": "-", "provenance": "burst", "size": 0})
                break
    return out


def recall(report: dict, partners: dict[str, frozenset[str]], splits: dict[str, str],
           kinds: set[str] | None = PIXEL_KINDS) -> dict[str, int]:
    """Held-out files (any split but ``train``) with a known partner in another split, and how
    many share a pixel finding with one (at error level, and at any level); ``kinds=None``:
    a finding of any kind (a group rule's ``group-split`` too: what the user is shown)."""
    together: dict[str, set[str]] = {"error": set(), "any": set()}
    for finding in report["findings"]:
        if kinds is not None and finding["kind"] not in kinds:
            continue
        paths = {m["path"] for m in finding["members"]}
        for path in paths:
            if partners.get(path, frozenset()) & paths:
                together["any"].add(path)
                if finding["severity"] == "error":
                    together["error"].add(path)
    held_out = "train" in splits.values()
    known = [p for p, ps in partners.items() if ps and not (held_out and splits.get(p) == "train")]
    return {"known": len(known), "error": len(together["error"] & set(known)), "any": len(together["any"] & set(known))}


def file_splits(policy: Path) -> dict[str, str]:
    """path -> split as the policy assigns them (the check's own inventory)."""
    from pytest_leakcheck.dataset.inventory import scan
    from pytest_leakcheck.policy.load import load

    return {record.path: record.split for record in scan(load(policy)).records}


def _viewable(path: Path):  # noqa: ANN202 - a PIL image
    """The image as RGB; what the check decodes for a file Pillow cannot open (DICOM, a float64 TIFF)."""
    from PIL import Image

    try:
        with Image.open(path) as image:
            return image.convert("RGB")
    except Image.UnidentifiedImageError:
        from pytest_leakcheck.signals.imagedepth import open_image, upright_rgb

        return upright_rgb(open_image(path.read_bytes(), 1 << 40), 1)


def contact_sheet(root: Path, pairs: list[dict], out: Path, start: int = 0) -> None:
    """Two pairs a row, each pair's images side by side (as stored, not turned), numbered."""
    from PIL import Image, ImageDraw

    cell, label, per_row = 300, 34, 2
    rows = (len(pairs) + per_row - 1) // per_row
    sheet = Image.new("RGB", (per_row * (2 * cell + 20), max(1, rows) * (cell + label + 10)), "white")
    draw = ImageDraw.Draw(sheet)
    for n, pair in enumerate(pairs):
        x0 = (n % per_row) * (2 * cell + 20)
        y0 = (n // per_row) * (cell + label + 10)
        for side, key in enumerate(("a", "b")):
            with _viewable(root / pair[key]) as image:
                scale = (cell - 4) / max(image.size)  # small images are enlarged too, to be seen
                image = image.resize((max(1, round(image.width * scale)), max(1, round(image.height * scale))),
                                     Image.NEAREST if scale > 1 else Image.BILINEAR)
                sheet.paste(image, (x0 + side * cell, y0 + label))
        text = (f"#{start + n} {pair['detector']} {pair['value']:.3g} {pair['orientation']} [{pair['provenance']}] "
                f"size {pair['size']}\n{pair['split_a']}:{Path(pair['a']).name[:38]} | "
                f"{pair['split_b']}:{Path(pair['b']).name[:38]}")
        draw.multiline_text((x0 + 2, y0 + 1), text, fill="black", spacing=2)
    out.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(out)


MEASURED = ("findings", "largest", "error_links", "cross_split_error_links", "provenance", "audit",
            "warning_links", "warning_audit", "audited_precision", "audited_precision_copies",
            "audited_precision_weighted", "recall_copies", "recall_bursts", "recall_bursts_all_kinds", "aligned", "same_scene", "stage_seconds")
AUDIT_FIELDS = ["dataset", "index", "a", "b", "detector", "value", "provenance", "judgment", "note"]


def write_template(name: str, pairs: list[dict], out: Path) -> None:
    with out.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, AUDIT_FIELDS)
        writer.writeheader()
        for n, pair in enumerate(pairs):
            writer.writerow({"dataset": name, "index": n, "a": pair["a"], "b": pair["b"],
                             "detector": pair["detector"], "value": f"{pair['value']:.4g}",
                             "provenance": pair["provenance"], "judgment": "", "note": ""})


def read_audit(audit: Path, name: str) -> dict[frozenset[str], str]:
    """Judged pairs of ``name`` from ``audit`` (a CSV, or a folder of them): {a, b} -> judgment."""
    files = [audit] if audit.is_file() else sorted(audit.glob("*.csv")) if audit.is_dir() else []
    judged: dict[frozenset[str], str] = {}
    for path in files:
        with path.open(newline="") as handle:
            for row in csv.DictReader(handle):
                if row.get("dataset") == name and row.get("judgment", "").strip():
                    judged[frozenset((row["a"], row["b"]))] = row["judgment"].strip().lower()
    return judged


def audited(pairs: list[dict], judged: dict[frozenset[str], str]) -> dict[str, int]:
    counts = collections.Counter(judged.get(frozenset((p["a"], p["b"])), "unjudged") for p in pairs)
    return dict(counts)


def weighted_precision(links: list[dict], sample: list[dict], judged: dict[frozenset[str], str]) -> float | None:
    """Precision of all error links, estimated per detector from its judged sample and weighted by
    how many error links each detector made (the sample takes the same number from each)."""
    total, right, weight = 0.0, 0.0, 0
    for detector in {link["detector"] for link in links}:
        verdicts = [judged.get(frozenset((p["a"], p["b"]))) for p in sample if p["detector"] == detector]
        sure = [v for v in verdicts if v in ("same", "subject", "different")]
        if not sure:
            return None  # a detector with no judged link: no estimate for the whole
        n = sum(link["detector"] == detector for link in links)
        right += n * sum(v != "different" for v in sure) / len(sure)
        weight += n
    return round(right / weight, 3) if weight else None


def largest(report: dict) -> dict:
    """The largest finding of linked files (members), beside what a note or a group stands for.

    A shared-scene note lists a few members of each split for the images it folds, and a
    group-split finding a few files of each split for its group: their sizes are the note's
    image count and the group's file count, reported apart (``note_images``, ``group_files``).
    """
    linked = [f for f in report["findings"] if f["kind"] not in ("shared-scene", "group-split")]
    out: dict = {}
    if linked:
        top = max(linked, key=lambda f: len(f["members"]))
        out = {"members": len(top["members"]), "kind": top["kind"], "severity": top["severity"],
               "split_pair": top["split_pair"], "evidence": top.get("evidence", {})}
    notes = [int(m.group(1)) for f in report["findings"] if f["kind"] == "shared-scene"
             if (m := re.match(r"(\d+) images", f.get("message", "")))]
    groups = [int(sum(f.get("evidence", {}).values())) for f in report["findings"] if f["kind"] == "group-split"]
    if notes:
        out["note_images"] = max(notes)
    if groups:
        out["group_files"] = max(groups)
    return out


def _largest_text(big: dict) -> str:
    text = f"{big.get('members', 0)} ({big.get('kind', '-')}/{big.get('severity', '-')})"
    if "note_images" in big:
        text += f"; note of {big['note_images']} images"
    if "group_files" in big:
        text += f"; group of {big['group_files']} files"
    return text


def run_dataset(source: field_sources.Source, args: argparse.Namespace) -> dict:
    root = field_sources.ensure(source, args.data, args.fetch)
    out = args.out / source.name
    out.mkdir(parents=True, exist_ok=True)
    if args.max_images:
        root = subset(root, out, args.max_images, args.seed)
    policy = root / "leakcheck.yaml"
    previous = out / "result.json"
    if args.reuse and previous.is_file() and (out / "report.json").is_file() and policy.is_file():
        # Judge again (audit CSVs, provenance) without running the check again: the timings are the last run's.
        result = {k: v for k, v in json.loads(previous.read_text()).items() if k not in MEASURED}
        result.update(measure(source, root, json.loads((out / "report.json").read_text()), out, args))
        pixels = out / "report-pixels.json"
        if pixels.is_file() and result.get("recall_bursts_pixels"):
            splits = file_splits(policy)
            truth = field_truth.build(splits, None, source.numbers_identify)
            result["recall_bursts_pixels"] = recall(json.loads(pixels.read_text()), truth.bursts, splits)
        return result
    policy.unlink(missing_ok=True)
    shutil.rmtree(root / ".leakcheck", ignore_errors=True)
    result: dict = {"name": source.name, "repo": source.repo, "commit": source.commit, "kind": source.kind}
    code, init_out, init_err, _, _ = cli("init", str(root), timeout=120)
    result["init"] = (init_out + init_err).strip().splitlines()
    if code != 0:
        result["error"] = f"init exited {code}"
        return result
    paths = images_under(root)
    result["images"] = len(paths)
    report_path = out / "report.json"
    before = bare_decode(paths, args.timeout)
    code, _, err, seconds, rss = cli("check", "--policy", str(policy), "--format", "json", "-o", str(report_path),
                                     "-j", str(args.jobs), "-q", timeout=args.timeout, rss=True)
    result.update(exit_code=code, check_seconds=round(seconds, 1), check_cpu_seconds=cpu_seconds(err),
                  peak_rss_mb=round(rss), load_average=round(os.getloadavg()[0], 1))
    if code not in (0, 1):
        result["error"] = f"check exited {code}: {err.strip().splitlines()[-3:]}"
        return result
    # Decoded just before and just after the check, so a load that changed meanwhile shows as a spread.
    bare = [before, bare_decode(paths, args.timeout)]
    result["bare_decode_seconds"] = round(sum(b[0] for b in bare) / 2, 1)
    result["bare_decode_cpu_seconds"] = round(sum(b[1] for b in bare) / 2, 1)
    result["time_ratio"] = round(seconds / max(result["bare_decode_seconds"], 1e-3), 1)
    result["cpu_ratio"] = round(result["check_cpu_seconds"] / max(result["bare_decode_cpu_seconds"], 1e-3), 1)
    report = json.loads(report_path.read_text())
    _, text, _, _, _ = cli("render", str(report_path), timeout=120)
    summary = [line for line in text.splitlines() if line.startswith("leakcheck:")]
    result["summary_line"] = summary[-1] if summary else ""
    result["summary_chars"] = len(result["summary_line"])
    result.update(measure(source, root, report, out, args))
    result["recall_bursts_pixels"] = bursts_by_pixels(source, root, policy, out, args)
    return result


def bursts_by_pixels(source: field_sources.Source, root: Path, policy: Path, out: Path,
                     args: argparse.Namespace) -> dict[str, int] | None:
    """Burst recall of a check whose policy has no group rule: what the pixels alone flag.

    With the burst rule ``init`` proposes, a burst in two splits is one group-split finding and
    its shots' pixel links inside the group are not reported apart, so the main check cannot say
    whether the pixels would have found it (issue 37: "even when nothing in its names or metadata
    says so").  Only for datasets with capture-time bursts across splits; a cold check of its own.
    """
    import yaml

    splits = file_splits(policy)
    truth = field_truth.build(splits, None, source.numbers_identify)
    if not any(truth.bursts.values()):
        return None
    raw = yaml.safe_load(policy.read_text())
    raw.pop("groups", None)
    raw.pop("cache", None)
    # Beside the dataset's own policy: its globs and tables are relative to the policy's folder.
    bare = root / "leakcheck-pixels-only.yaml"
    bare.write_text(yaml.safe_dump(raw, sort_keys=False))
    report_path = out / "report-pixels.json"
    try:
        code, _, err, _, _ = cli("check", "--policy", str(bare), "--format", "json", "-o", str(report_path),
                                 "-j", str(args.jobs), "-q", "--no-cache", timeout=args.timeout)
    finally:
        bare.unlink(missing_ok=True)
    if code not in (0, 1):
        return {"known": 0, "error": 0, "any": 0}
    return recall(json.loads(report_path.read_text()), truth.bursts, splits)


def measure(source: field_sources.Source, root: Path, report: dict, out: Path, args: argparse.Namespace) -> dict:
    splits = file_splits(root / "leakcheck.yaml")
    planted = args.data / f"{source.name}.truth.json"
    truth = field_truth.build(splits, planted if planted.is_file() else None, source.numbers_identify)
    links = error_links(report)
    for link in links:
        link["provenance"] = truth.judge(link["a"], link["b"])
    warned = [link for link in error_links(report, "warning") if link["split_a"] != link["split_b"]]
    for link in warned:
        link["provenance"] = "warning:" + truth.judge(link["a"], link["b"])
    sample, warn_sample = draw(root, links, warned, out, args)
    if sample or warn_sample:
        write_template(source.name, sample + warn_sample, out / "audit_template.csv")
    verdicts = read_audit(args.audit, source.name)
    judged = audited(sample, verdicts)
    for what, partners in (("copies", truth.copies), ("bursts", truth.bursts)):
        lost = missed(report, partners, splits)
        for pair in lost:
            pair["provenance"] = what
        if lost:
            contact_sheet(root, random.Random(args.seed).sample(lost, min(args.sample, len(lost))),
                          out / f"missed_{what}.png")
    # same: one photograph, or a burst shot of one subject seconds apart (a copy); subject: the same
    # subject in another session (a group leak, not a copy); different; unsure (left out).
    same, subject, different = judged.get("same", 0), judged.get("subject", 0), judged.get("different", 0)
    sure = same + subject + different
    by = collections.Counter(f"{f['kind']}/{f['severity']}" for f in report["findings"])
    return {
        "findings": dict(sorted(by.items())), "largest": largest(report),
        "error_links": len(links), "cross_split_error_links": sum(x["split_a"] != x["split_b"] for x in links),
        "provenance": dict(collections.Counter(x["provenance"] for x in links)),
        "audit": judged, "warning_links": len(warned), "warning_audit": audited(warn_sample, verdicts),
        "audited_precision": round((same + subject) / sure, 3) if sure else None,
        "audited_precision_copies": round(same / sure, 3) if sure else None,
        "audited_precision_weighted": weighted_precision(links, sample, verdicts),
        "recall_copies": recall(report, truth.copies, splits), "recall_bursts": recall(report, truth.bursts, splits),
        "recall_bursts_all_kinds": recall(report, truth.bursts, splits, kinds=None),
        **levels(report),
    }


def draw(root: Path, links: list[dict], warned: list[dict], out: Path,
         args: argparse.Namespace) -> tuple[list[dict], list[dict]]:
    """The seeded samples to judge, drawn on contact sheets: up to ``--sample`` error links of
    each detector (every detector's precision is seen, not only the commonest's), and as many
    cross-split warning links (copies the gate only warns about are missed errors)."""
    sample: list[dict] = []
    for detector in sorted({link["detector"] for link in links}):
        mine = [link for link in links if link["detector"] == detector]
        picked = random.Random(args.seed).sample(mine, min(args.sample, len(mine)))
        contact_sheet(root, picked, out / f"contact_{detector}.png", start=len(sample))
        sample += picked
    warn_sample = random.Random(args.seed).sample(warned, min(args.sample, len(warned)))
    if warn_sample:
        contact_sheet(root, warn_sample, out / "contact_warnings.png", start=len(sample))
    return sample, warn_sample


def levels(report: dict) -> dict:
    """The calibrated levels and stage times the report states, for the diagnosis."""
    stats = report["stats"]
    return {
        "aligned": {k: stats.get("aligned", {}).get(k) for k in
                    ("threshold", "error_threshold", "false_alarms_per_10k", "calibrated_on", "fine_threshold",
                     "fine_largest_impostor", "fine_judged", "fine_demoted")},
        "same_scene": {k: stats.get("same_scene", {}).get(k) for k in
                       ("threshold", "error_threshold", "largest_impostor", "calibrated_on")},
        "stage_seconds": {k[len("seconds_"):]: v for k, v in stats.items() if k.startswith("seconds_")},
    }


def row(r: dict) -> str:
    if "error" in r:
        return f"| {r['name']} | {r.get('images', '-')} | {r['error']} |" + " |" * 9
    rc, rb = r["recall_copies"], r["recall_bursts"]
    big = r["largest"]
    return (f"| {r['name']} | {r['images']} | {r['exit_code']} | "
            f"{', '.join(f'{k} {v}' for k, v in r['findings'].items()) or '-'} | "
            f"{_largest_text(big)} | "
            f"{r['error_links']} ({', '.join(f'{k} {v}' for k, v in r['provenance'].items()) or '-'}) | "
            f"{_audit_text(r)} | {_warn_text(r)} | {rc['error']}/{rc['known']} ({rc['any']} any) | "
            f"{rb['error']}/{rb['known']} ({rb['any']} any{_with_groups(r)}) | {r['check_seconds']} s / {r['bare_decode_seconds']} s "
            f"= {r['time_ratio']}x (CPU {r.get('cpu_ratio', '-')}x) | {r['peak_rss_mb']} MB |")


def _with_groups(r: dict) -> str:
    """Bursts flagged at error by a finding of any kind (the group rule init proposed, too), and
    by the pixels of a check without the group rule (error level; any level)."""
    g, p = r.get("recall_bursts_all_kinds"), r.get("recall_bursts_pixels")
    text = f"; {g['error']} at error with groups" if g and g["known"] else ""
    return text + (f"; no group rule: {p['error']} at error, {p['any']} any" if p and p["known"] else "")


def _warn_text(r: dict) -> str:
    judged = ", ".join(f"{k} {v}" for k, v in sorted(r.get("warning_audit", {}).items()))
    return f"{r.get('warning_links', 0)}" + (f" ({judged})" if judged else "")


def _audit_text(r: dict) -> str:
    a = r["audit"]
    if not a:
        return "-"
    judged = ", ".join(f"{k} {v}" for k, v in sorted(a.items()))
    return (f"{r['audited_precision_weighted'] if r.get('audited_precision_weighted') is not None else '-'} "
            f"(sample {r['audited_precision']}: {judged})")


HEADER = ("| dataset | images | exit | findings (kind/severity) | largest finding | error links (provenance) | "
          "audited precision: weighted (sample: judgments) | cross-split warning links (sample judged) | "
          "copy recall: error/known | burst recall (10 s): pixels at error/known (any level; any kind at error) | "
          "cold check / bare decode (2 procs), wall (CPU) | peak RSS |\n|" + "---|" * 12)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("/work/field-data"))
    parser.add_argument("--out", type=Path, default=Path("/work/field-runs"))
    parser.add_argument("--only", default="", help="comma-separated dataset names")
    parser.add_argument("--fetch", action="store_true", help="clone missing datasets (network or mirrors)")
    parser.add_argument("--max-images", type=int, default=0, help="check a seeded sample of N images")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per check")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--sample", type=int, default=8, help="error links per detector on the contact sheets")
    parser.add_argument("--seed", type=int, default=37)
    parser.add_argument("--reuse", action="store_true",
                        help="judge the last run's reports again (audit, provenance) without checking again")
    parser.add_argument("--audit", type=Path, default=REPO / "benchmarks" / "field_audit")
    args = parser.parse_args(argv)
    chosen = [field_sources.by_name(n) for n in args.only.split(",") if n] or list(field_sources.SOURCES)
    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    for source in chosen:
        print(f"== {source.name}: {source.repo or 'built'} {source.commit[:12]}", flush=True)
        result = run_dataset(source, args)
        results.append(result)
        print(json.dumps({k: v for k, v in result.items() if k != "init"}, indent=1), flush=True)
        (args.out / source.name / "result.json").write_text(json.dumps(result, indent=1))
    table = HEADER + "\n" + "\n".join(row(r) for r in results)
    print(table)
    (args.out / "field.md").write_text(table + "\n")
    (args.out / "field.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
