"""Wording shared by the text-like formats: a finding's headline, its lines, its signals.

What a detector's values and signals look like is the detector's to say
(``Detector.link_value``, ``evidence_value``, ``signal_text``): this module
asks the registry, so a new detector needs no change here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ..detectors import registry
from ..detectors.base import Detector
from ..detectors.homogeneity import noted
from ..files.names import display, log_line
from ..report.model import COPY_KINDS, Finding, Link, Member, per_split

#: Stands in for a detector a saved report names but this version does not have.
_UNKNOWN = Detector()
#: Files of each split a group-split finding shows to people; the JSON report lists every one.
GROUP_SHOWN = 3
#: Members of a copy cluster the text report shows.
CLUSTER_SHOWN = 10


def detector(name: str) -> Detector:
    """The registered detector called ``name``, or the protocol's defaults."""
    return next((d for d in registry() if d.name == name), _UNKNOWN)


def link_words(link: Link) -> str:
    """``aligned 0.555 after hflip``: the detector, its value when it has one, the orientation."""
    value = detector(link.detector).link_value
    out = link.detector if value is None else f"{link.detector} {value.format(link.value)}"
    if link.orientation != "identity":
        out += f" after {link.orientation}"
    return out + (" (weak)" if link.weak else "")


def link_text(m: Member) -> str:
    """``linked by aligned 0.555 to train/x.jpg``: how a member joined its cluster ("" if it did not)."""
    return "" if m.link is None else f"linked by {link_words(m.link)} to {m.link.to}"


def checked_text(checked: dict) -> str:
    """``identical-file, phash/thumbnail in 8 orientations, aligned in identity+hflip``:
    the detectors that ran, grouped by the orientations each searched."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for name, orientations in checked.items():
        groups.setdefault(tuple(orientations), []).append(str(name))
    parts = []
    for orientations, names in groups.items():
        if not orientations:
            parts += names
            continue
        where = "8 orientations" if len(orientations) == 8 else "+".join(orientations)
        parts.append(f"{'/'.join(names)} in {where}")
    return ", ".join(parts)


def calibration_text(stats: dict) -> str:
    """The calibrated levels and what they rest on, for a summary line ("" when none were calibrated).

    A small dataset cannot show a rate below one impostor in its sample, nor
    estimate a few per 10,000 at all: the line says so rather than print a
    measured rate five times the one asked for without a word.
    """
    # Each detector words its own levels (Detector.summary): a renderer names none.
    said = (d.summary(stats.get(d.section)) for d in registry())
    return "".join(f"; {text}" for text in said if text)


def unsearched_lines(stats: dict) -> list[str]:
    """A note when ``same-scene`` searched only some of the images: a re-shot among the rest is not
    looked for, and "checked: same-scene" alone would read as if it had been (issue 37, a probe of
    2,830 coin crops of 150 px: none searched, nothing said)."""
    scene = stats.get("same_scene")
    if not isinstance(scene, dict) or not int(scene.get("skipped", 0) or 0):
        return []
    from ..detectors.same_scene.features import MIN_SIDE

    searched, skipped = int(scene.get("images", 0) or 0), int(scene["skipped"])
    return [f"note: same-scene searched {searched} of {searched + skipped} images for other shots of a "
            f"scene; {skipped} are under {MIN_SIDE} px or too plain to carry keypoints, and only their "
            f"copies are looked for"]


def animated_lines(stats: dict) -> list[str]:
    """A note when images hold several frames: only the first of each was decoded, so a copy in a
    later frame of an animated emoji or sprite is not looked for (a probe of EmojiOne's PNGs)."""
    anim = stats.get("animated")
    if not isinstance(anim, dict) or not int(anim.get("images", 0) or 0):
        return []
    n = int(anim["images"])
    what = "image holds" if n == 1 else "images hold"
    return [f"note: {n} {what} several frames (animated GIF, PNG or WebP; {anim.get('first', '')} first): "
            "only the first frame of each is checked; export the frames as images to check them all"]


def inseparable_lines(stats: dict) -> list[str]:
    """A note per detector that could not tell copies from the rest of this dataset: shown by
    default, since it explains why that detector raised no error (the levels are in ``--verbose``)."""
    out = []
    for d in registry():
        mine = stats.get(d.section)
        if noted(mine) and (text := d.summary(mine)):
            out.append(f"note: {text}")
    return out


def recording_lines(findings: Sequence[Finding]) -> list[str]:
    """One note for the shared-scene warnings that join frames named as one recording across splits:
    shown by default, since the text report lists 50 findings and such a note, the only word on a
    clip split at random, comes after every copy."""
    notes = [f for f in findings if f.kind == "shared-scene" and f.evidence.get("recording_links")]
    near = [f for f in findings if f.kind == "shared-scene" and f.evidence.get("neighbour_links")]
    out = []
    if notes:
        links = int(sum(f.evidence["recording_links"] for f in notes))
        out.append(f"note: {len(notes)} shared-scene warning{'s' * (len(notes) != 1)} join{'s' * (len(notes) == 1)} "
                   f"files named as one recording across splits ({links} links: frames of one video?); the pixel "
                   "search cannot prove such a leak, a group rule can (`regex:` on the names, `folder_depth:` on "
                   "folders: docs/policy-groups.md); each note names its recordings and a rule (`--max-findings 0` "
                   "shows every note)")
    if near:
        out.append(f"note: {len(near)} shared-scene warning{'s' * (len(near) != 1)} join{'s' * (len(near) == 1)} "
                   "neighbouring frames of one recording across splits (their strongest links: near copies of one "
                   "moment, which the pixel search cannot tell from other shots of the scene); each note names an "
                   "example (`--max-findings 0` shows every note)")
    return out


def headline(f: Finding, max_members: int = 4) -> str:
    """One line for a finding, for annotations, SARIF messages and summaries."""
    if f.kind not in COPY_KINDS:
        return f"{f.members[0].path}: {f.message or f.kind}" if f.members else f.message
    names = ", ".join(f"{m.path} ({m.split})" for m in shown_members(f, max_members))
    if len(f.members) > max_members:
        names += f" and {len(f.members) - max_members} more"
    what = {"identical-file": "same bytes", "identical-pixels": "same decoded pixels"}.get(f.kind)
    if f.kind == "label-conflict":
        return f"label-conflict in {f.split_pair}: {names}; {f.message}"
    if what is None:
        parts = signal_parts(f.pairs[0].signals if f.pairs else f.evidence)
        if f.orientation != "identity":
            parts.append(f"after {f.orientation}")
        what = ", ".join(parts) or "near-duplicate"
    return f"{f.kind} across {f.split_pair}: {names}; {what}"


def shown_members(f: Finding, limit: int) -> list[Member]:
    """Up to ``limit`` members in report order, one of every split among them: a cluster of four
    train copies and one test image must show the test image, which is the leak."""
    first: dict[str, Member] = {}
    for m in f.members:
        first.setdefault(m.split, m)
    keep = {id(m) for m in list(first.values())[:limit]}
    for m in f.members:
        if len(keep) >= limit:
            break
        keep.add(id(m))
    return [m for m in f.members if id(m) in keep]


def signal_parts(sig: dict) -> list[str]:
    """The cheap signals of a pair, as a reader wants them: in the detectors' order, each as its detector words it."""
    worded = {key: text for d in registry() for key, text in d.signal_text.items()}
    parts = [text.format(float(sig[key])) for key, text in worded.items() if key in sig]
    # A signal no detector words (one from an older report): by its own name.
    parts += [f"{k.replace('_', ' ')} {v:g}" for k, v in sig.items() if k not in worded and isinstance(v, (int, float))]
    return parts


def examples(f: Finding, limit: int) -> tuple[Member, ...]:
    """Up to ``limit`` members of a finding that is not a copy cluster, as many of each split: a
    group's training files come first and must not hide its test files."""
    k = max(1, limit // max(1, len(f.splits)))
    return per_split(f.members, k)[:limit]


def group_rest(f: Finding, shown: Sequence[Member]) -> str:
    """``... and 405 more train files, 99 more test files of this group: ...`` ("" when all are shown).

    Counted from ``evidence`` (files per split): a report saved before group-split findings listed every
    file holds only examples, and then says so rather than point at a JSON report that lacks them.
    """
    counts = {s: int(n) for s, n in f.evidence.items() if s in f.splits}
    if not counts:
        counts = dict(Counter(m.split for m in f.members))
    have = Counter(m.split for m in shown)
    more = [f"{n - have[s]} more {s} file{'s' * (n - have[s] != 1)}" for s, n in counts.items() if n > have[s]]
    if not more:
        return ""
    where = ("`--format json` lists every one, `leakcheck export` each file's findings"
             if len(f.members) >= sum(counts.values()) else
             "this saved report lists only these; `leakcheck check --format json` lists every one")
    return f"... and {', '.join(more)} of this group: {where}"


def _describe(f: Finding) -> list[str]:
    lines = []
    members = list(per_split(f.members, GROUP_SHOWN)) if f.kind == "group-split" else shown_members(f, CLUSTER_SHOWN)
    paths = [display(m.path) for m in members]  # aligned as shown, escapes included
    width = max(map(len, paths), default=0)
    splits = [f"({m.split})" if m.split else "" for m in members]
    split_width = max(map(len, splits), default=0)
    for m, path, split in zip(members, paths, splits):
        # Each member says how it joined: a file chained in by a weaker
        # detector must not read as an exact copy.
        link = f"  {link_text(m)}" if m.link is not None else ""
        lines.append(f"    {path.ljust(width)}  {split.ljust(split_width) if link else split}{link}".rstrip())
    if f.kind == "group-split":
        if rest := group_rest(f, members):
            lines.append(f"    {rest}")
    elif len(f.members) > CLUSTER_SHOWN:
        lines.append(f"    ... and {len(f.members) - CLUSTER_SHOWN} more files in this cluster")
    if f.kind == "label-conflict" or (f.message and f.kind in ("identical-file", "identical-pixels",
                                                                "near-duplicate")):
        lines.append(f"    {f.message}")  # the labels: data, escaped with the line (finding_lines)
    if f.kind in ("identical-file", "identical-pixels"):
        what = "same bytes" if f.kind == "identical-file" else "same decoded pixels, different files"
        lines.append(f"    evidence: {what}")
    elif f.kind in ("near-duplicate", "label-conflict"):
        best = f.pairs[0] if f.pairs else None
        parts = []
        if best is not None:
            value = detector(best.detector).evidence_value
            if value is not None:
                parts.append(value.format(best.value))
            parts += signal_parts(best.signals)
            if best.orientation != "identity":
                parts.append(f"{best.b} = {best.a} after {best.orientation}")
        lines.append("    evidence: " + ", ".join(parts))
    elif f.message and f.kind != "label-conflict":
        lines.append(f"    {f.message}")
    if f.kind == "shared-scene" and f.pairs:  # its strongest link, across splits when one is
        best = f.pairs[0]
        value = detector(best.detector).evidence_value
        shown = value.format(best.value) if value is not None else f"{best.detector} {best.value:g}"
        lines.append(f"    strongest: {display(best.a)} ~ {display(best.b)} ({shown})")
    return lines


def finding_lines(f: Finding) -> list[str]:
    """One finding as the text report shows it: a head line, then files and evidence.

    Each line is a :func:`~pytest_leakcheck.files.names.log_line`: a file name may hold
    a newline, a control character or a workflow command, and none may reach
    a terminal or a CI log as such.
    """
    head = f"{f.severity.upper()} {f.kind}"
    if f.kind in COPY_KINDS:
        head += f"  {f.split_pair}"
    if f.status == "known":
        head += "  (known: in the baseline)"
    elif f.status != "new":
        head += f"  ({f.status})"
    return [log_line(line) for line in (f"{head}  [{f.id}]", *_describe(f))]
