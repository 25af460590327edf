"""Which upside-down impostors ``aligned`` calibrates on, and what its levels are without the copies among them.

Run by hand from a dataset root that has a policy (a ``cp -al`` copy: the check writes ``.leakcheck/``)::

    PYTHONPATH=<worktree> python benchmarks/impostor_copies.py OUT.json [--audit CSV] [--top 32] [--sheet OUT.png]

It runs ``leakcheck check -j 1`` in this process with the impostor search wrapped, and records, for
every sampled row and every other split it asks, its best upside-down candidate there: the score,
the 32 px pHash distance of the turned row to it (mirrored or not), and whether the report's
findings hold both files.  Per row the best across splits is what the calibration takes
(``levels.calibration``: ``cross``).  It prints the levels from them (the small-set floor left
out), the top pairs, and, given ``--audit`` (pairs judged by eye on ``--sheet``, each upside-down row
beside its candidate, in the columns of ``field_audit``; ``benchmarks/impostor_audit/tracks.csv``),
the levels without the rows judged ``same``.  OUT is read back when it exists.

Issue 37 part 2 (stop 56): on ``tracks`` of ``benchmarks/field.py`` 25 of the 32 best pairs are
flipped or turned copies, most zoomed, 12-30 pHash bits apart; without their 39 rows the levels
are 0.856 / 0.885 instead of 0.941 / 0.959.  Each row also says whether ``aligned.confirmed`` left it
out (a half turn by keypoints and detail), and the levels without those rows are printed beside.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
from pathlib import Path

import numpy as np

from pytest_leakcheck.cli import main as leakcheck
from pytest_leakcheck.detectors.aligned import confirmed, levels, pairs, turned

_SEEN: dict[str, np.ndarray] = {}
_ROWS: list[tuple[int, int, float, int]] = []
_PATHS: list[str] = []


def _recording_drop(fwd: np.ndarray, grey: np.ndarray, cand: np.ndarray, data_grey: np.ndarray) -> None:
    _DROP(fwd, grey, cand, data_grey)
    _SEEN.update(fwd=fwd.copy(), turned=grey.copy(), cand=cand.copy())


def _recording_maxima(data, p, a, rows, full=False):  # type: ignore[no-untyped-def]
    if full:  # ``confirmed`` asking for a row's candidates again: recorded where it answers (_recording_judged)
        return _MAXIMA(data, p, a, rows, full=True)
    out = _MAXIMA(data, p, a, rows)
    n, groups = len(rows), len(p.targets[a])
    fwd, cand = _SEEN["fwd"].reshape(n, groups, p.k), _SEEN["cand"].reshape(n, groups, p.k)
    mine = turned._phash32(np.concatenate([_SEEN["turned"], _SEEN["turned"][:, :, ::-1]]))
    for g, b in enumerate(p.targets[a]):
        if b == a:
            continue
        best = np.argmax(fwd[:, g], 1)
        c, s = cand[np.arange(n), g, best], fwd[np.arange(n), g, best]
        theirs = turned._phash32(data.grey[np.maximum(c, 0)])
        bits = np.minimum((mine[:n] != theirs).sum(1), (mine[n:] != theirs).sum(1))
        _ROWS.extend((int(r), int(cc), float(ss), int(bb)) for r, cc, ss, bb in zip(rows, c, s, bits) if cc >= 0)
    return out


def _recording_judged(run, data, p, a, rows, best):  # type: ignore[no-untyped-def]
    out = _JUDGED(run, data, p, a, rows, best)
    _CONFIRMED.update(int(r) for r in rows[((out >= turned.COPY) & (best < turned.COPY)).any(1)])
    return out


def _recording_estimate(run, *args, **kwargs):  # type: ignore[no-untyped-def]
    _PATHS[:] = list(run.paths)
    return _ESTIMATE(run, *args, **kwargs)


_DROP, _MAXIMA, _ESTIMATE, _JUDGED = turned.drop_copies, pairs._impostor_maxima, levels._estimate, confirmed._judged
_CONFIRMED: set[int] = set()


def record() -> tuple[dict, list[dict]]:
    """The check's report and each sampled row's best cross-split upside-down candidate."""
    turned.drop_copies, pairs._impostor_maxima, levels._estimate = _recording_drop, _recording_maxima, _recording_estimate
    confirmed._judged = _recording_judged
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            leakcheck(["check", "--format", "json", "-j", "1"])
    finally:
        turned.drop_copies, pairs._impostor_maxima, levels._estimate = _DROP, _MAXIMA, _ESTIMATE
        confirmed._judged = _JUDGED
    report = json.loads(buf.getvalue())
    finding_of: dict[str, set[int]] = {}
    for k, f in enumerate(report["findings"]):
        for m in f["members"]:
            finding_of.setdefault(m["path"], set()).add(k)
    best: dict[int, tuple[int, int, float, int]] = {}
    for rec in _ROWS:
        if rec[0] not in best or rec[2] > best[rec[0]][2]:
            best[rec[0]] = rec
    rows = [{"row": _PATHS[r], "cand": _PATHS[c], "score": round(s, 4), "hash_bits": b,
             "same_finding": bool(finding_of.get(_PATHS[r], set()) & finding_of.get(_PATHS[c], set())),
             "confirmed": r in _CONFIRMED}
            for r, c, s, b in best.values()]
    return report, rows


class _Asked:
    false_alarms_per_10k, error_false_alarms_per_10k = 5.0, 2.0


def summary(rows: list[dict], copies: set[frozenset[str]], top: int) -> None:
    kept = [r for r in rows if r["score"] < levels.TURNED_COPY]
    s = np.array([r["score"] for r in kept])
    print(f"impostor rows {len(rows)}, under TURNED_COPY {len(kept)}; levels {levels.levels(s, _Asked, False)[:2]}")
    if copies:
        m = np.array([frozenset((r["row"], r["cand"])) not in copies for r in kept])
        print(f"without the {int((~m).sum())} rows judged copies: levels {levels.levels(s[m], _Asked, False)[:2]}")
        judged = np.array([r.get("confirmed", False) for r in kept])
        print(f"judged copies {int((~m).sum())}, confirmed by aligned.confirmed {int(judged.sum())} "
              f"({int((judged & ~m).sum())} of them judged copies); without the confirmed rows: levels "
              f"{levels.levels(s[~judged], _Asked, False)[:2]}")
    for r in sorted(kept, key=lambda r: -r["score"])[:top]:
        print(r["score"], r["hash_bits"], int(r["same_finding"]), int(r.get("confirmed", False)), r["row"], r["cand"])


def sheet(rows: list[dict], out: Path, top: int, side: int = 180) -> None:
    """Each of the ``top`` best pairs (one per unordered pair): the row turned upside down, its candidate."""
    from PIL import Image, ImageDraw

    seen: set[frozenset[str]] = set()
    best = [r for r in sorted(rows, key=lambda r: -r["score"]) if r["score"] < levels.TURNED_COPY
            and not (frozenset((r["row"], r["cand"])) in seen or seen.add(frozenset((r["row"], r["cand"]))))][:top]
    img = Image.new("RGB", (2 * (2 * side + 20), (side + 16) * ((len(best) + 1) // 2)), "white")
    draw = ImageDraw.Draw(img)
    for k, r in enumerate(best):
        x0, y0 = (k % 2) * (2 * side + 20), (k // 2) * (side + 16)
        for n, (path, turn) in enumerate(((r["row"], 180), (r["cand"], 0))):
            with Image.open(path) as im:
                pic = im.convert("RGB").rotate(turn)
            pic.thumbnail((side, side))
            img.paste(pic, (x0 + n * side, y0 + 14))
        draw.text((x0, y0 + 1), f"{k} {r['score']}", fill="red")
        print(k, r["score"], r["row"], r["cand"])
    img.save(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--audit", type=Path)
    parser.add_argument("--top", type=int, default=32)
    parser.add_argument("--sheet", type=Path)
    args = parser.parse_args()
    if args.out.exists():
        rows = json.loads(args.out.read_text())["rows"]
    else:
        report, rows = record()
        args.out.write_text(json.dumps({"aligned": report["stats"]["aligned"], "rows": rows}))
    copies = set()
    if args.audit:
        with args.audit.open(newline="") as fh:
            copies = {frozenset((r["a"], r["b"])) for r in csv.DictReader(fh) if r["judgment"] == "same"}
    summary(rows, copies, args.top)
    if args.sheet:
        sheet(rows, args.sheet, args.top)


if __name__ == "__main__":
    main()
