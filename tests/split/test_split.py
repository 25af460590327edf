"""`leakcheck split`: components stay whole, copies stay together, output is deterministic."""

from __future__ import annotations

import csv
import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from pytest_leakcheck import EXIT_CLEAN, EXIT_USAGE
from pytest_leakcheck.cli import main
from pytest_leakcheck.split.plan import Kept, assign, components
from pytest_leakcheck.testing import brighter, jpeg_quality, photo, save

from ..conftest import write_policy

GROUPED = """\
version: 1
splits: {train: [train/**], val: [val/**], test: [test/**]}
groups:
  - regex: '(?P<group>part\\d+)_shot'
ungrouped: own-group
"""
CHAIN = ("test/chain_copy.jpg", "train/chain_original.jpg", "val/chain_copy.jpg")


@pytest.fixture
def grouped_dataset(tmp_path: Path) -> Path:
    """12 parts x 3 shots scattered over train/val/test in cat/ and dog/ folders, plus a copy chain
    test/chain_copy ~ train/chain_original ~ val/chain_copy (ungrouped files)."""
    rng = np.random.default_rng(7)
    splits = ("train", "val", "test")
    for part in range(12):
        label = "dog" if part % 3 == 0 else "cat"
        for shot in range(3):
            split = splits[int(rng.integers(0, 3))]
            save(
                photo(part * 10 + shot, (96, 72)),
                tmp_path / f"{split}/{label}/part{part:02d}_shot{shot}.jpg",
                quality=90,
            )
    original = photo(999, (96, 72))
    save(original, tmp_path / CHAIN[1], quality=92)
    save(jpeg_quality(original, 40), tmp_path / CHAIN[0], quality=90)
    save(brighter(original, 1.2), tmp_path / CHAIN[2], quality=90)
    write_policy(tmp_path, GROUPED)
    return tmp_path


def _split(root: Path, *extra: str, out: str = "splits.csv") -> int:
    return main(
        [
            "split",
            "--policy",
            str(root / "leakcheck.yaml"),
            "--test",
            "0.25",
            "--val",
            "0.15",
            "-o",
            str(root / out),
            *extra,
        ]
    )


def _manifest(path: Path) -> dict[str, dict[str, str]]:
    with open(path, newline="") as fh:
        return {row["path"]: row for row in csv.DictReader(fh)}


# --------------------------------------------------------------------------
# The algorithm


def test_components_merge_groups_and_clusters() -> None:
    """A cluster linking two groups makes one component; chains close transitively."""
    gids = np.array([0, 0, 1, 1, 2, 3, 4])
    comp = components(gids, [[1, 2], [4, 5]])
    assert comp[0] == comp[1] == comp[2] == comp[3]
    assert comp[4] == comp[5]
    assert len({comp[0], comp[4], comp[6]}) == 3


def _random_groups(n: int, n_groups: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n_groups, n)


def test_assign_keeps_components_whole_and_meets_targets() -> None:
    """Every component lands in one split, and the shares come close to the targets."""
    comp = components(_random_groups(20_000, 800))
    split = assign(comp, (0.7, 0.1, 0.2), seed=3).split
    per_comp = {(int(c), int(s)) for c, s in zip(comp, split)}
    assert len(per_comp) == len(set(comp.tolist()))
    shares = np.bincount(split, minlength=3) / len(split)
    assert np.abs(shares - [0.7, 0.1, 0.2]).max() < 0.01


def test_assign_is_deterministic_per_seed() -> None:
    """The same seed gives the same assignment; another seed gives another."""
    comp = components(_random_groups(5_000, 400))
    a = assign(comp, (0.7, 0.1, 0.2), seed=0).split
    assert np.array_equal(a, assign(comp, (0.7, 0.1, 0.2), seed=0).split)
    assert not np.array_equal(a, assign(comp, (0.7, 0.1, 0.2), seed=1).split)


def test_stratification_balances_labels() -> None:
    """With labels, each split's label mix matches the dataset's far better than without."""
    rng = np.random.default_rng(5)
    n_groups = 600
    group_label = (rng.random(n_groups) < 0.15).astype(np.int64)  # 15% rare label
    gids = rng.integers(0, n_groups, 12_000)
    comp, labels = components(gids), group_label[gids]

    def worst_gap(split: np.ndarray) -> float:
        overall = labels.mean()
        return max(abs(labels[split == k].mean() - overall) for k in range(3))

    plain = assign(comp, (0.6, 0.2, 0.2), seed=0).split
    strat = assign(comp, (0.6, 0.2, 0.2), labels=labels, seed=0).split
    assert worst_gap(strat) < 0.005
    assert worst_gap(strat) < worst_gap(plain)


def test_keep_moves_only_components_that_span_splits() -> None:
    """With keep, a valid assignment stays, and a split group moves whole to its majority split."""
    comp = np.array([0, 0, 0, 1, 1, 2, 3, 4, 4])
    keep = np.array([0, 0, 2, 2, 2, 0, 1, 0, -1])  # component 0 spans train and test
    got = assign(comp, (0.6, 0.2, 0.2), kept=Kept(keep), seed=0)
    assert got.split.tolist() == [0, 0, 0, 2, 2, 0, 1, 0, 0]
    assert got.moved == 1


def test_keep_repairs_shares_with_fewest_moves() -> None:
    """A test split below its minimum takes the smallest component that fixes it, nothing more."""
    comp = np.arange(10).repeat([5, 5, 5, 5, 5, 5, 3, 1, 2, 4])  # 40 files
    keep = np.where(comp < 9, 0, 2)  # test holds 4 of 40 files: 10%
    got = assign(comp, (0.8, 0.0, 0.2), kept=Kept(keep, [(0, 1), (0, 1), (0.15, 0.25)]), seed=0)
    # 15% of 40 is 6: the 2-file component is the smallest that fills the gap alone.
    assert np.bincount(got.split, minlength=3)[2] == 6
    assert got.moved == 2
    assert got.split[comp == 8].tolist() == [2, 2]


# --------------------------------------------------------------------------
# The command


def test_chained_copies_stay_in_one_split(grouped_dataset: Path, capsys) -> None:
    """A copy chain spread over test, train and val ends up in one split, groups stay whole."""
    assert _split(grouped_dataset, "--seed", "0") == EXIT_CLEAN
    rows = _manifest(grouped_dataset / "splits.csv")
    assert len({rows[p]["split"] for p in CHAIN}) == 1
    by_group: dict[str, set[str]] = {}
    for row in rows.values():
        if row["group"]:
            by_group.setdefault(row["group"], set()).add(row["split"])
    assert len(by_group) == 12 and all(len(s) == 1 for s in by_group.values())
    assert "copy clusters merged" in capsys.readouterr().out


@pytest.mark.slow
def test_repaired_manifest_checks_clean(grouped_dataset: Path, capsys) -> None:
    """The check is red before `leakcheck split`, and exits 0 on the manifest it writes."""
    policy = str(grouped_dataset / "leakcheck.yaml")
    assert main(["check", "--no-cache", "--policy", policy]) == 1
    assert _split(grouped_dataset, "--stratify", "folder") == EXIT_CLEAN
    write_policy(
        grouped_dataset,
        GROUPED.replace(
            "{train: [train/**], val: [val/**], test: [test/**]}", "{manifest: splits.csv}"
        ),
    )
    capsys.readouterr()
    assert main(["check", "--no-cache", "--format", "json", "--policy", policy]) == EXIT_CLEAN
    report = json.loads(capsys.readouterr().out)
    cross = [f for f in report["findings"] if len({m["split"] for m in f["members"]}) > 1]
    assert cross == []


def test_split_is_deterministic_and_seeded(grouped_dataset: Path) -> None:
    """Two runs with one seed write the same bytes; another seed writes another manifest."""
    for name, seed in (("a.csv", "0"), ("b.csv", "0"), ("c.csv", "5")):
        assert _split(grouped_dataset, "--seed", seed, out=name) == EXIT_CLEAN
    a, b, c = ((grouped_dataset / n).read_bytes() for n in ("a.csv", "b.csv", "c.csv"))
    assert a == b
    assert a != c


def test_split_never_touches_images(grouped_dataset: Path) -> None:
    """Images keep their bytes and places; only the manifest is written, with no temporary left."""

    def snapshot() -> dict[str, str]:
        return {
            str(p.relative_to(grouped_dataset)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in grouped_dataset.rglob("*.jpg")
        }

    before = snapshot()
    assert _split(grouped_dataset, "--no-cache") == EXIT_CLEAN
    assert snapshot() == before
    assert sorted(p.name for p in grouped_dataset.iterdir() if p.is_file()) == [
        "leakcheck.yaml",
        "splits.csv",
    ]


def test_keep_changes_few_assignments(grouped_dataset: Path) -> None:
    """With --keep, only files of groups or clusters that span splits change split."""
    root = grouped_dataset
    assert _split(root, "--seed", "0", out="good.csv") == EXIT_CLEAN
    good = _manifest(root / "good.csv")
    # Break it: one file of a group, and one end of the copy chain, go elsewhere.
    victim = next(p for p in sorted(good) if good[p]["group"] == "part04")
    moved_to = {"train": "test", "val": "train", "test": "train"}
    broken = dict(good)
    for path in (victim, CHAIN[0]):
        broken[path] = {**good[path], "split": moved_to[good[path]["split"]]}
    with open(root / "broken.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["path", "split", "group"])
        writer.writeheader()
        writer.writerows(broken.values())
    assert (
        _split(root, "--keep", str(root / "broken.csv"), "--seed", "9", out="fixed.csv")
        == EXIT_CLEAN
    )
    fixed = _manifest(root / "fixed.csv")
    changed = sorted(p for p in fixed if fixed[p]["split"] != broken[p]["split"])
    assert changed == sorted([victim, CHAIN[0]])
    assert fixed == good


def test_keep_carries_extra_columns_and_stratifies_by_column(grouped_dataset: Path) -> None:
    """Extra manifest columns survive, and --stratify COLUMN reads one of them."""
    root = grouped_dataset
    assert _split(root, out="base.csv") == EXIT_CLEAN
    rows = _manifest(root / "base.csv")
    with open(root / "labelled.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["path", "split", "species"])
        writer.writerows(
            [p, r["split"], p.split("/")[1] if "part" in p else "other"] for p, r in rows.items()
        )
    assert (
        _split(root, "--keep", str(root / "labelled.csv"), "--stratify", "species", out="out.csv")
        == 0
    )
    out = _manifest(root / "out.csv")
    assert all(out[p]["species"] == (p.split("/")[1] if "part" in p else "other") for p in out)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--test", "1.5"], ["--test 1.5"]),
        (["--test", "0.5", "--val", "0.6"], ["leave some for train"]),
        (["--test", "0.2", "--keep", "nope.csv"], ["nope.csv", "not found"]),
        (["--test", "0.2", "--keep", "bad.csv"], ["bad.csv:1", "no `split` column"]),
        (["--test", "0.2", "--keep", "other.csv"], ["other.csv", "'holdout'", "--names"]),
        (
            ["--test", "0.2", "--keep", "other.csv", "--stratify", "species"],
            ["other.csv:1", "no `species` column"],
        ),
        (["--test", "0.2", "--stratify", "species"], ["there is no manifest"]),
        (["--test", "0.2", "--names", "a,b"], ["three different split names"]),
    ],
)
def test_split_bad_input_exits_2(tmp_path: Path, capsys, args: list[str], words: list[str]) -> None:
    """Wrong shares, manifests or columns exit 2 with the file and the problem named."""
    save(photo(1, (64, 48)), tmp_path / "train/a.jpg")
    write_policy(tmp_path, "version: 1\nsplits: {train: [train/**], test: [test/**]}\n")
    (tmp_path / "bad.csv").write_text("path,fold\ntrain/a.jpg,1\n")
    (tmp_path / "other.csv").write_text("path,split\ntrain/a.jpg,holdout\n")
    stratify_ok = "--stratify" in args and "other.csv" in args
    if stratify_ok:
        (tmp_path / "other.csv").write_text("path,split\ntrain/a.jpg,train\n")
    argv = [
        "split",
        "--no-cache",
        "--policy",
        str(tmp_path / "leakcheck.yaml"),
        "-o",
        str(tmp_path / "o.csv"),
    ]
    argv += [a if not a.endswith(".csv") else str(tmp_path / a) for a in args]
    assert main(argv) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("Error: ")
    for word in words:
        assert word in err
    assert not (tmp_path / "o.csv").exists()


def test_split_with_manifest_policy_before_the_manifest_exists(grouped_dataset: Path) -> None:
    """A policy naming splits.csv can write it: the first run needs no manifest yet."""
    for split in ("train", "val", "test"):
        shutil.move(str(grouped_dataset / split), str(grouped_dataset / "images" / split))
    write_policy(
        grouped_dataset,
        GROUPED.replace(
            "{train: [train/**], val: [val/**], test: [test/**]}", "{manifest: splits.csv}"
        ),
    )
    assert _split(grouped_dataset) == EXIT_CLEAN
    assert len(_manifest(grouped_dataset / "splits.csv")) == 12 * 3 + 3


def test_keep_share_repair_counts_groups_when_asked() -> None:
    """With weights in groups, the repair closes a group-share gap with the fewest groups."""
    comp = np.arange(4).repeat([30, 1, 1, 8])  # component 0: one big group; 3: four groups
    weight = np.array([1.0, 1.0, 1.0, 4.0])
    keep = np.where(comp == 3, 0, np.where(comp == 0, 0, 2))  # test: 2 of 7 groups
    bounds = [(0, 1), (0, 1), (0.5, 1.0)]
    got = assign(comp, (0.7, 0.0, 0.3), kept=Kept(keep, bounds, weight), seed=0)
    # 1.5 more groups needed: component 3 (4 groups) is the only one that closes the gap; counted
    # in files instead, the 30-file component would move.
    assert got.split[comp == 3].tolist() == [2] * 8
    assert got.split[comp == 0].tolist() == [0] * 30


def test_split_of_an_empty_dataset_writes_a_header(tmp_path: Path) -> None:
    """No images: the manifest is just its header, and --keep on it works too."""
    write_policy(tmp_path, "version: 1\nsplits: {manifest: splits.csv}\n")
    out = str(tmp_path / "splits.csv")
    argv = ["split", "--policy", str(tmp_path / "leakcheck.yaml"), "--test", "0.2", "-o", out]
    assert main(argv) == EXIT_CLEAN
    assert main([*argv, "--keep", out]) == EXIT_CLEAN
    assert (tmp_path / "splits.csv").read_text() == "path,split\n"


def test_splits_a_source_assigns_are_repaired_not_replaced(tmp_path: Path, capsys) -> None:
    """A benchmark's own split (split lists here; CUB's id lists, COCO, tables alike): `split -o` used to
    ask for --test, which draws a new random split in place of the benchmark's. It now keeps every
    file where the source puts it, except what a copy across splits forces to move."""
    for k in range(10):
        save(photo(k), tmp_path / f"images/im{k}.jpg")
    shutil.copy(tmp_path / "images/im1.jpg", tmp_path / "images/copy1.jpg")
    (tmp_path / "train.txt").write_text("".join(f"im{k}\n" for k in range(7)))
    (tmp_path / "test.txt").write_text("im7\nim8\nim9\ncopy1\n")
    write_policy(tmp_path, "version: 1\nsplits:\n  lists:\n    train: {file: train.txt, images: images}\n"
                 "    test: {file: test.txt, images: images}\n")
    out = tmp_path / "fixed.csv"
    assert main(["split", "--policy", str(tmp_path / "leakcheck.yaml"), "-o", str(out), "-j", "1"]) == EXIT_CLEAN
    assert "with 1 file moved" in capsys.readouterr().out
    rows = _manifest(out)
    assert rows["images/im1.jpg"]["split"] == rows["images/copy1.jpg"]["split"]
    moved = [p for p in rows if rows[p]["split"] != ("test" if p in ("images/im7.jpg", "images/im8.jpg",
                                                                       "images/im9.jpg", "images/copy1.jpg") else "train")]
    assert len(moved) == 1
    write_policy(tmp_path, "version: 1\nsplits: {manifest: fixed.csv}\n")
    assert main(["check", "--no-cache", "--policy", str(tmp_path / "leakcheck.yaml")]) == EXIT_CLEAN
