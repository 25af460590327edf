"""How findings are formed: each member says how it was linked, the headline
kind is never stronger than the weakest link, and weak links never merge
clusters (issue 12)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
from PIL import Image, ImageEnhance

from pytest_leakcheck.files import escape
from pytest_leakcheck import check
from pytest_leakcheck.pipeline import findings, signatures
from pytest_leakcheck.pipeline.run import RunOptions
from pytest_leakcheck.dataset import groups, inventory
from pytest_leakcheck.split import plan as split
from pytest_leakcheck.search.kernels import Match
from pytest_leakcheck.report.model import load_report
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.render import render
from pytest_leakcheck.render import link_words
from pytest_leakcheck.store.db import open_store
from pytest_leakcheck.testing import brighter, cropped, photo, save

POLICY = "version: 1\nsplits:\n  train: [train/**]\n  test: [test/**]\n"
# The torn-edge padded photos below link by thumbnail at pHash 22-32 in turned
# orientations; searched in all 8 they exercise the weak-link rule.  Under the
# default (mirror only) some pairs link at pHash 14-16, below the weak cut-off
# (an open case, noted in issue 12's closing note).
EVERY = "augmentations: [hflip, vflip, rot90, rot180, rot270, transpose, transverse]\n"


def _chained(root: Path) -> Path:
    """An exact copy pair across splits, and a distinct-looking image (brighter,
    cropped) in test that only a near-duplicate detector links to it."""
    img = photo(21)
    save(img, root / "train/a.jpg", quality=92)
    (root / "test").mkdir()
    shutil.copyfile(root / "train/a.jpg", root / "test/a_copy.jpg")
    save(cropped(brighter(img, 1.3), 0.06), root / "test/c.jpg", quality=70)
    for k in range(6):
        save(photo(60 + k), root / f"train/other_{k}.jpg", quality=92)
    (root / "leakcheck.yaml").write_text(POLICY)
    return root / "leakcheck.yaml"


def test_chained_cluster_takes_the_kind_of_its_weakest_link(tmp_path: Path) -> None:
    """The exact pair plus a near-duplicate chained to it is a near-duplicate finding,
    not `identical-file ... same bytes`; each member states how it joined."""
    report = check(_chained(tmp_path), use_cache=False)
    (finding,) = [f for f in report.findings if f.is_copy]
    assert {m.path for m in finding.members} == {"train/a.jpg", "test/a_copy.jpg", "test/c.jpg"}
    assert finding.kind == "near-duplicate"
    links = {m.path: m.link for m in finding.members}
    unlinked = [p for p, link in links.items() if link is None]
    assert len(unlinked) == 1  # the tree's root
    exact = {p for p, link in links.items() if link and link.detector == "identical-file"}
    assert exact and exact | {links[p].to for p in exact} == {"train/a.jpg", "test/a_copy.jpg"}
    c = links["test/c.jpg"]
    assert c is not None and c.detector in ("phash", "thumbnail", "dhash") and c.to in ("train/a.jpg",
                                                                                         "test/a_copy.jpg")
    text = render(report, "text")
    assert f"linked by {link_words(c)} to {c.to}" in text
    assert "linked by identical-file to" in text
    assert "same bytes" not in text


def test_member_links_survive_the_json_report(tmp_path: Path) -> None:
    """The JSON report carries each member's link, and re-rendering it shows them."""
    report = check(_chained(tmp_path), use_cache=False)
    path = tmp_path / "report.json"
    path.write_text(render(report, "json"))
    data = json.loads(path.read_text())
    (finding,) = [f for f in data["findings"] if f["kind"] == "near-duplicate"]
    links = [m["link"] for m in finding["members"]]
    assert links.count(None) == 1
    assert all({"to", "detector", "value", "orientation", "weak"} <= set(link) for link in links if link)
    again = load_report(path)
    assert [m.link for f in again.findings for m in f.members] == [m.link for f in report.findings for m in f.members]
    c = next(m.link for f in again.findings for m in f.members if m.path == "test/c.jpg")
    for fmt in ("text", "markdown", "html", "sarif", "annotations"):
        out = render(again, fmt)
        # Annotations sit on one member (test/c.jpg) and state its link; the rest list every member's.
        # Markdown shows names through its own escape (escape.markdown: `a\_copy.jpg`).
        shown = escape.markdown if fmt == "markdown" else str
        assert shown(f"linked by {link_words(c)} to {c.to}") in out, fmt
        assert fmt == "annotations" or "linked by identical-file to" in out, fmt


def _pipeline(root: Path):
    policy = load(root / "leakcheck.yaml")
    inv = groups.resolve(inventory.scan(policy))
    sigs = signatures.compute(inv.records, policy, open_store(None), RunOptions(jobs=1))
    return policy, inv, sigs, {r.path: n for n, r in enumerate(inv.records)}


def test_weak_links_do_not_merge_clusters(tmp_path: Path) -> None:
    """Two strong pairs joined by a weak link stay two error findings; the weak link
    is a warning of its own, and a weak link inside a cluster adds nothing."""
    # Each strong pair one photo (its hash link backed by the thumbnail, as a real one is), the pairs different.
    for name, seed, lift in (("train/a", 1, 0), ("test/b", 1, 6), ("train/c", 3, 0), ("test/d", 3, 6)):
        save(photo(seed).point(lambda v, lift=lift: min(255, v + lift)), tmp_path / f"{name}.jpg", quality=92)
    (tmp_path / "leakcheck.yaml").write_text(POLICY)
    policy, inv, sigs, row = _pipeline(tmp_path)
    a, b, c, d = (row[p] for p in ("train/a.jpg", "test/b.jpg", "train/c.jpg", "test/d.jpg"))
    matches = [
        Match(a, b, "phash", 2.0), Match(c, d, "phash", 3.0),
        Match(b, c, "thumbnail", 0.96, weak=True),  # "probably the same shot": not a merge
        Match(a, b, "thumbnail", 0.97, weak=True),  # weak, inside a strong cluster
    ]
    report = findings.build(matches, inv, sigs, policy)
    by_members = {frozenset(m.path for m in f.members): f for f in report.findings}
    assert set(by_members) == {frozenset({"train/a.jpg", "test/b.jpg"}), frozenset({"train/c.jpg", "test/d.jpg"}),
                               frozenset({"test/b.jpg", "train/c.jpg"})}
    weak = by_members[frozenset({"test/b.jpg", "train/c.jpg"})]
    assert weak.severity == "warning" and weak.kind == "near-duplicate"
    assert [m.link.weak for m in weak.members if m.link] == [True]
    assert all(f.severity == "error" for f in report.findings if f is not weak)
    assert len({f.id for f in report.findings}) == 3


def _torn(seed: int) -> Image.Image:
    """A low-contrast portrait pillar-boxed in white, with torn (noisy) film edges,
    so no border is uniform enough to remove: the thumbnail sees mostly bars."""
    content = ImageEnhance.Contrast(photo(7000 + seed, (90, 160))).enhance(0.5)
    canvas = Image.new("RGB", (284, 160), (255, 255, 255))
    canvas.paste(content, (97, 0))
    a = np.asarray(canvas).copy()
    rng = np.random.default_rng(seed)
    a[:, :3] = rng.integers(0, 256, (a.shape[0], 3, 3))
    a[:, -3:] = rng.integers(0, 256, (a.shape[0], 3, 3))
    return Image.fromarray(a)


def test_a_thumbnail_match_far_in_phash_cannot_chain_photos(tmp_path: Path) -> None:
    """Thumbnails of padded photos agree at cosine >= 0.95 whatever they show; with
    pHash past twice its threshold such a link is weak: a warning, never a cluster."""
    for k in range(12):
        save(_torn(k), tmp_path / ("train" if k % 2 else "test") / f"pad_{k:02d}.jpg", quality=90)
    (tmp_path / "leakcheck.yaml").write_text(POLICY + EVERY)
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    copies = [f for f in report.findings if f.is_copy]
    assert copies, "the thumbnail still sees these as alike; the test needs such links"
    assert max(len(f.members) for f in copies) == 2
    far = [f for f in copies if f.pairs[0].signals.get("phash_distance", 0) > 16]
    assert far and all(f.severity == "warning" for f in far)
    assert all(m.link.weak for f in far for m in f.members if m.link)


def test_split_planning_does_not_chain_weak_links(tmp_path: Path) -> None:
    """`leakcheck split` keeps clusters together, but not the pairs a weak link joins."""
    for k in range(12):
        save(_torn(k), tmp_path / ("train" if k % 2 else "test") / f"pad_{k:02d}.jpg", quality=90)
    (tmp_path / "leakcheck.yaml").write_text(POLICY + EVERY)
    policy = load(tmp_path / "leakcheck.yaml")
    report = check(policy=policy, use_cache=False)
    weak = [f for f in report.findings if f.weak]
    assert weak and all(f.severity == "warning" for f in weak)
    clusters = split.copy_clusters(policy, policy, opts=RunOptions(use_cache=False))
    assert sorted(map(sorted, clusters)) == sorted(sorted(m.path for m in f.members)
                                                   for f in report.findings if f.is_copy and not f.weak)
