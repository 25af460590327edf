"""Findings people can act on (issue 37): a finding's kind and severity agree with its links,
warning-level links never merge or raise clusters, chains are capped, a shared scene is one note."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pytest_leakcheck import check
from pytest_leakcheck.dataset import groups, inventory
from pytest_leakcheck.pipeline import findings, signatures
from pytest_leakcheck.pipeline.clusters import MAX_MEMBERS
from pytest_leakcheck.pipeline.run import RunOptions
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.search.kernels import Match
from pytest_leakcheck.store.db import open_store
from pytest_leakcheck.testing import photo, save

POLICY = "version: 1\nsplits:\n  train: [train/**]\n  test: [test/**]\n"


def _dataset(root: Path, n: int, extra: str = "") -> tuple:
    """``n`` distinct files of one small photo, each a little brighter, alternately in train and test;
    the pipeline's real signatures.  One photo: the hash links these tests make are backed by the
    thumbnail, as a real hash match is (a pHash link the thumbnail contradicts is weak, ``phash.weak``)."""
    base = photo(500, (64, 48))
    for k in range(n):
        save(base.point(lambda v, k=k: min(255, v + k)), root / ("train" if k % 2 == 0 else "test") / f"p{k:03d}.jpg",
             quality=90)
    (root / "leakcheck.yaml").write_text(POLICY + extra)
    policy = load(root / "leakcheck.yaml")
    inv = groups.resolve(inventory.scan(policy))
    sigs = signatures.compute(inv.records, policy, open_store(None), RunOptions(jobs=1))
    row = {r.path: n for n, r in enumerate(inv.records)}
    return policy, inv, sigs, [row[f"{'train' if k % 2 == 0 else 'test'}/p{k:03d}.jpg"] for k in range(n)]


def _by_members(report) -> dict:
    return {frozenset(m.path for m in f.members): f for f in report.findings}


def test_copies_plus_a_same_scene_link_stay_copies_at_error(tmp_path: Path) -> None:
    """Two exact copies and a same-scene link at warning from one of them: the copies are an
    identical-file error, the same-scene link a warning of its own (not `same-scene` at error)."""
    policy, inv, sigs, r = _dataset(tmp_path, 4)
    report = findings.build([Match(r[0], r[1], "identical-file", 0.0), Match(r[1], r[2], "same-scene", 80.0)],
                            inv, sigs, policy)
    copies = [f for f in report.findings if f.is_copy]
    assert len(copies) == 2
    (exact,) = [f for f in copies if f.kind == "identical-file"]
    assert exact.severity == "error" and len(exact.members) == 2
    (scene,) = [f for f in copies if f.kind == "same-scene"]
    assert scene.severity == "warning"
    assert all(f.kind != "same-scene" for f in report.errors)


def test_a_warning_level_link_never_raises_a_cluster_to_error(tmp_path: Path) -> None:
    """With pHash at warning, a pHash link from an exact pair to another file is a warning
    between them: the exact pair stays exact at error, the other file is in no error finding."""
    policy, inv, sigs, r = _dataset(tmp_path, 4, "detectors:\n  phash: {severity: warning}\n")
    report = findings.build([Match(r[0], r[1], "identical-file", 0.0), Match(r[1], r[2], "phash", 3.0)],
                            inv, sigs, policy)
    found = _by_members(report)
    paths = [inv.records[k].path for k in r]
    assert found[frozenset(paths[:2])].kind == "identical-file"
    assert found[frozenset(paths[:2])].severity == "error"
    assert found[frozenset(paths[1:3])].severity == "warning"
    assert all(paths[2] not in {m.path for m in f.members} for f in report.errors)


def test_a_chain_of_near_matches_is_cut_into_clusters_of_at_most_max_members(tmp_path: Path) -> None:
    """40 files chained by error-level pHash links (each only like its neighbours) in a set of 90:
    no finding holds more than MAX_MEMBERS files, and every link of the chain is still an error."""
    policy, inv, sigs, r = _dataset(tmp_path, 90)
    chain = [Match(r[k], r[k + 1], "phash", float(1 + k % 4)) for k in range(39)]
    report = findings.build(chain, inv, sigs, policy)
    assert report.errors
    assert max(len(f.members) for f in report.findings) <= MAX_MEMBERS
    together = {frozenset((a.path, b.path)) for f in report.errors for a in f.members for b in f.members}
    assert all(frozenset((inv.records[m.i].path, inv.records[m.j].path)) in together for m in chain)


def test_a_file_cut_off_by_the_cap_joins_the_cluster_holding_more_of_its_leaks(tmp_path: Path) -> None:
    """A test file joined a full cluster by one pHash link (pHash links merge before aligned ones)
    while three aligned error links lead it to train files of another cluster with room: it moves
    there, so each of those leaks is in one finding, and its pHash link becomes a bridge."""
    policy, inv, sigs, r = _dataset(tmp_path, 110)  # the web is under half the set: no scene
    first = [Match(r[k], r[k + 1], "phash", 2.0) for k in range(2, 25)]  # 24 files
    second = [Match(r[k], r[k + 1], "phash", 2.0) for k in range(26, 49)]  # 24 files
    leaks = [Match(r[1], r[k], "aligned", 0.95) for k in (26, 28, 30)]  # test r[1] ~ train r[26], r[28], r[30]
    report = findings.build([*first, *second, Match(r[1], r[2], "phash", 6.0), *leaks], inv, sigs, policy)
    assert max(len(f.members) for f in report.findings) <= MAX_MEMBERS
    test = inv.records[r[1]].path
    (home,) = [f for f in report.errors if len(f.members) > 2 and test in {m.path for m in f.members}]
    assert {inv.records[r[k]].path for k in (26, 28, 30)} <= {m.path for m in home.members}
    assert inv.records[r[2]].path not in {m.path for m in home.members}
    bridged = {frozenset(m.path for m in f.members) for f in report.errors if len(f.members) == 2}
    assert frozenset((test, inv.records[r[2]].path)) in bridged


def test_a_dataset_sharing_one_scene_is_one_note(tmp_path: Path) -> None:
    """36 of 40 files linked to each other by pHash (a fixed camera): one shared-scene warning,
    listing a few of them, and no near-duplicate error; an exact copy among them still fails."""
    policy, inv, sigs, r = _dataset(tmp_path, 40)
    web = [Match(r[a], r[b], "phash", float(2 + (a + b) % 5)) for a in range(36) for b in range(a + 1, 36)]
    report = findings.build([*web, Match(r[0], r[1], "identical-file", 0.0)], inv, sigs, policy)
    (note,) = [f for f in report.findings if f.kind == "shared-scene"]
    assert note.severity == "warning" and len(note.members) <= 6 and "36 images" in note.message
    assert [f.kind for f in report.errors] == ["identical-file"]
    assert len(report.errors[0].members) == 2


def test_a_copy_standing_out_of_a_web_of_warning_links_stays_an_error(tmp_path: Path) -> None:
    """36 of 40 files joined by weak same-scene links (chest X-rays of different children alike) and,
    among them, one pHash-0 copy across splits: the copy is a near-duplicate error, the web a note.
    An error-level web over the same files (a fixed camera passing the hash level) is folded whole."""
    policy, inv, sigs, r = _dataset(tmp_path, 40)
    web = [Match(r[a], r[b], "same-scene", 60.0) for a in range(36) for b in range(a + 1, 36)]
    report = findings.build([*web, Match(r[2], r[3], "phash", 0.0)], inv, sigs, policy)
    (note,) = [f for f in report.findings if f.kind == "shared-scene"]
    assert "36 images" in note.message
    (copy,) = report.errors
    assert copy.kind == "near-duplicate" and {m.path for m in copy.members} == {inv.records[r[2]].path,
                                                                               inv.records[r[3]].path}
    strong = [Match(r[a], r[a + 1], "phash", 2.0) for a in range(35)]
    report = findings.build([*web, *strong], inv, sigs, policy)
    assert not report.errors and [f.kind for f in report.findings] == ["shared-scene"]


def test_turned_copies_stand_out_of_a_web_however_many_files_they_touch(tmp_path: Path) -> None:
    """36 of 40 files joined by weak same-scene links (one part shot again and again) and 18 turned copies
    across splits among them, touching every file of the web (``brush``: bearing shells, each shell's turned
    copies in train and test): each copy is a near-duplicate error, the web still a note.  Error links that
    touch as much of the web by pHash (a fixed camera passing the hash level) are folded with it."""
    policy, inv, sigs, r = _dataset(tmp_path, 40)
    web = [Match(r[a], r[b], "same-scene", 60.0) for a in range(36) for b in range(a + 1, 36)]
    turned = [Match(r[a], r[a + 1], "turned-copy", 0.95) for a in range(0, 36, 2)]
    report = findings.build([*web, *turned], inv, sigs, policy)
    assert [f.kind for f in report.findings if f.kind == "shared-scene"] == ["shared-scene"]
    assert len(report.errors) == 18
    assert all(f.kind == "near-duplicate" and len(f.members) == 2 for f in report.errors)
    assert {frozenset(m.path for m in f.members) for f in report.errors} == {
        frozenset((inv.records[r[a]].path, inv.records[r[a + 1]].path)) for a in range(0, 36, 2)}
    hashed = [Match(m.i, m.j, "phash", 2.0) for m in turned]
    assert not findings.build([*web, *hashed], inv, sigs, policy).errors


def test_a_web_of_warning_links_is_one_note_not_a_finding_per_pair(tmp_path: Path) -> None:
    """30 files of 80 linked pairwise by same-scene links at warning (one board design among
    others): one note, not 435 pair warnings nor one finding of 30 files."""
    policy, inv, sigs, r = _dataset(tmp_path, 80)
    web = [Match(r[a], r[b], "same-scene", 60.0) for a in range(30) for b in range(a + 1, 30)]
    report = findings.build(web, inv, sigs, policy)
    assert [f.kind for f in report.findings] == ["shared-scene"]
    assert "30 images" in report.findings[0].message


def test_a_note_lists_its_links_across_splits_first(tmp_path: Path) -> None:
    """A copy folded into a note of look-alikes is found by its strongest link across splits: listed
    first, and shown in the text, however strong the note's links within a split are."""
    from pytest_leakcheck.render.text import render as render_text

    policy, inv, sigs, r = _dataset(tmp_path, 80)
    # Even rows are train, odd ones test: within-split links at 200 inliers, across at 60 and one at 90.
    web = [Match(r[a], r[b], "same-scene", 200.0 if (a - b) % 2 == 0 else 90.0 if (a, b) == (1, 2) else 60.0)
           for a in range(30) for b in range(a + 1, 30)]
    report = findings.build(web, inv, sigs, policy)
    (note,) = report.findings
    assert {note.pairs[0].a, note.pairs[0].b} == {inv.records[r[1]].path, inv.records[r[2]].path}
    assert "; 225 of them cross splits, the strongest listed first" in note.message
    assert f"    strongest: {note.pairs[0].a} ~ {note.pairs[0].b} (same-scene 90)" in render_text(report)


def test_warnings_inside_a_group_in_two_splits_are_counted_by_its_group_split(tmp_path: Path) -> None:
    """Frames of one video in train and test: moving the video into one split ends every link between
    its frames, so its warnings are counted on its group-split finding, not listed; errors stay."""
    rule = "groups:\n  - regex: 'p0(?P<group>\\d)\\d'\nungrouped: own-group\n"  # p000-p009: group 0
    policy, inv, sigs, r = _dataset(tmp_path, 40, rule)
    links = [Match(r[0], r[1], "same-scene", 30.0), Match(r[2], r[4], "same-scene", 30.0),  # inside group 0
             Match(r[10], r[21], "same-scene", 30.0),  # groups 1 and 2: listed
             Match(r[6], r[7], "phash", 2.0)]  # an error inside group 0: listed
    report = findings.build(links, inv, sigs, policy, extra=groups.findings(inv))
    kinds = sorted((f.kind, f.severity, frozenset(m.path for m in f.members)) for f in report.findings
                   if f.kind != "group-split")
    path = [inv.records[x].path for x in r]
    assert kinds == [("near-duplicate", "error", frozenset({path[6], path[7]})),
                     ("same-scene", "warning", frozenset({path[10], path[21]}))]
    (zero,) = [f for f in report.findings if f.kind == "group-split" and "group '0'" in f.message]
    assert zero.message.endswith("; 2 near links between its files at warning level are not listed apart")
    assert all("not listed" not in f.message for f in report.findings if f is not zero)


def test_a_group_split_says_whether_its_files_across_splits_look_alike(tmp_path: Path) -> None:
    """Held-out: a burst rule joined 4 different boards shot 4 s apart, and nothing told the reviewer
    that no two of them look alike.  A group-split finding now says what the pixel search found between
    its files across splits; a focused check, which searched only some pairs, says nothing of the kind."""
    rule = "groups:\n  - regex: 'p0(?P<group>\\d)\\d'\nungrouped: own-group\n"  # p000-p009: group 0
    policy, inv, sigs, r = _dataset(tmp_path, 40, rule)
    links = [Match(r[0], r[1], "same-scene", 30.0), Match(r[2], r[4], "same-scene", 30.0),  # 0-1 across, 2-4 within
             Match(r[6], r[7], "phash", 2.0), Match(r[10], r[21], "same-scene", 30.0)]  # 10-21: two groups
    report = findings.build(links, inv, sigs, policy, extra=groups.findings(inv))
    message = {f.message.split("'")[1]: f.message for f in report.findings if f.kind == "group-split"}
    assert "; 4 of its files across splits are also linked by their pixels; 2 near links" in message["0"]
    for other in ("1", "2", "3"):
        assert message[other].endswith("; no two of its files across splits look alike (pixel search)")
    path = inv.records[r[12]].path
    focused = findings.build(links, inv, sigs, policy, focus={path}, extra=groups.findings(inv))
    (one,) = [f for f in focused.findings if f.kind == "group-split"]
    assert "group '1'" in one.message and "look alike" not in one.message and "linked by" not in one.message


def test_a_dense_web_of_error_links_over_part_of_the_dataset_stays_errors(tmp_path: Path) -> None:
    """30 files of 80 each within pHash 2-6 of every other: a family of copies as often as one
    scene (CIFAR-10's near-identical car photos are such a web), so it is not folded into a note:
    error findings of at most MAX_MEMBERS files that hold every file, joined by error bridges."""
    policy, inv, sigs, r = _dataset(tmp_path, 80)
    web = [Match(r[a], r[b], "phash", float(2 + (a * b) % 5)) for a in range(30) for b in range(a + 1, 30)]
    report = findings.build(web, inv, sigs, policy)
    assert "shared-scene" not in {f.kind for f in report.findings}
    split = {inv.records[r[k]].path: inv.records[r[k]].split for k in range(30)}
    crossing = {frozenset((a.path, b.path)) for f in report.findings for a in f.members for b in f.members
                if split[a.path] != split[b.path]}
    assert crossing and all(f.severity == "error" for f in report.findings  # links within a split warn
                            if len({split[m.path] for m in f.members}) > 1)
    assert max(len(f.members) for f in report.findings) <= MAX_MEMBERS
    assert {m.path for f in report.findings for m in f.members} == set(split)


def test_a_sparse_web_of_warning_links_stays_pairs_to_review(tmp_path: Path) -> None:
    """30 files chained by same-scene warnings (a few look-alikes each): every link stays a
    warning of two files a person can judge, not folded into a note."""
    policy, inv, sigs, r = _dataset(tmp_path, 80)
    chain = [Match(r[k], r[k + 1], "same-scene", 60.0) for k in range(29)]
    report = findings.build(chain, inv, sigs, policy)
    assert len(report.findings) == 29
    assert all(f.kind == "same-scene" and f.severity == "warning" and len(f.members) == 2 for f in report.findings)


def _board(shift: int) -> Image.Image:
    """One fixed background (a chessboard-like grid) with a small piece at a moved place."""
    a = np.zeros((240, 320, 3), np.uint8)
    cells = (np.add.outer(np.arange(240) // 30, np.arange(320) // 40) % 2).astype(np.uint8)
    a[:] = (cells * 150 + 60)[..., None]
    y, x = 30 + (shift * 37) % 170, 40 + (shift * 53) % 240
    a[y:y + 18, x:x + 18] = (200, 40, 40)
    return Image.fromarray(a)


@pytest.mark.slow
def test_a_fixed_camera_set_gives_no_error(tmp_path: Path) -> None:
    """32 shots of one board with a small piece moved, split between train and test: no error
    finding, and no finding over MAX_MEMBERS files."""
    for k in range(32):
        save(_board(k), tmp_path / ("train" if k % 3 else "test") / f"shot{k:02d}.jpg", quality=90)
    (tmp_path / "leakcheck.yaml").write_text(POLICY)
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    assert not report.errors, [(f.kind, len(f.members)) for f in report.errors]
    assert all(len(f.members) <= MAX_MEMBERS for f in report.findings)


def test_a_link_within_one_group_merges_before_links_between_groups(tmp_path: Path) -> None:
    """24 files of other groups linked at pHash 0 to one train file, whose group's test file is linked
    to it at pHash 2 and to one of the 24 at pHash 1 (one picture uploaded under many names), in a set
    of 60: the cluster is full at MAX_MEMBERS files, and the pair of one group is in one error finding,
    the link left over the cap being one between groups."""
    rule = "groups:\n  - regex: '(?P<group>p05)[89][.]'\nungrouped: own-group\n"  # p058 and p059: one group
    policy, inv, sigs, r = _dataset(tmp_path, 60, rule)
    star = [Match(r[k], r[58], "phash", 0.0) for k in range(MAX_MEMBERS - 1)]
    links = [*star, Match(r[59], r[0], "phash", 1.0), Match(r[58], r[59], "phash", 2.0)]
    report = findings.build(links, inv, sigs, policy)
    pair = {inv.records[r[58]].path, inv.records[r[59]].path}
    assert any(pair <= {m.path for m in f.members} for f in report.errors)
    assert max(len(f.members) for f in report.findings) <= MAX_MEMBERS
