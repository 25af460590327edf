"""How long `leakcheck split` takes to assign 1,000,000 file names in 50,000 groups.

No images: the names are generated, groups come from the policy's regex rule
(``groups.group_of``), and the split module's ``components`` and ``assign``
do the rest, as ``leakcheck split`` does after the near-duplicate search.
The baseline, measured in the same run, is a plain seeded random split of the
same names, file by file (what leaks groups).  Run by hand:

    python benchmarks/split_speed.py [--files 1000000] [--groups 50000] [--labels 10]

Target: the grouped split under 10 s.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from pytest_leakcheck.dataset import groups
from pytest_leakcheck.dataset.groups import GroupRule
from pytest_leakcheck.policy.load import Policy
from pytest_leakcheck.split.plan import assign, components, factorize


def names(
    n_files: int, n_groups: int, n_labels: int, seed: int = 0
) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    part = rng.integers(0, n_groups, n_files)
    label = part % n_labels  # a part has one label, as a real object does
    return [
        f"images/class{lab:02d}/part{p:06d}_shot{i:07d}.jpg"
        for i, (p, lab) in enumerate(zip(part.tolist(), label.tolist()))
    ], label


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=1_000_000)
    ap.add_argument("--groups", type=int, default=50_000)
    ap.add_argument("--labels", type=int, default=10)
    args = ap.parse_args()
    paths, labels = names(args.files, args.groups, args.labels)
    policy = Policy(
        path=Path("leakcheck.yaml"),
        root=Path("."),
        groups=(GroupRule("regex", r"(?P<group>part\d+)_shot"),),
    )
    targets = (0.7, 0.1, 0.2)

    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    baseline = rng.choice(3, size=len(paths), p=targets)
    t_base = time.perf_counter() - t0

    t0 = time.perf_counter()
    found = groups.group_of(paths, policy)
    t_rules = time.perf_counter() - t0
    comp = components(factorize(found, paths))
    t_comp = time.perf_counter() - t0 - t_rules
    plain = assign(comp, targets, seed=0).split
    t_assign = time.perf_counter() - t0 - t_rules - t_comp
    strat = assign(comp, targets, labels=labels, seed=0).split
    t_strat = time.perf_counter() - t0 - t_rules - t_comp - t_assign
    total = t_rules + t_comp + t_assign

    spread = np.bincount(np.unique(comp * 3 + baseline) // 3)
    leaked = int((spread > 1).sum())
    whole = all(
        len(set(plain[comp == c].tolist())) == 1 for c in range(0, int(comp.max()) + 1, 997)
    )
    print(f"{len(paths):,} files, {int(comp.max()) + 1:,} groups, {args.labels} labels")
    print(f"  baseline random per-file split:  {t_base:7.3f} s  ({leaked:,} groups leak)")
    print(f"  group rules (regex):             {t_rules:7.3f} s")
    print(f"  components (union-find):         {t_comp:7.3f} s")
    print(
        f"  assign, groups whole:            {t_assign:7.3f} s  (groups whole in sample: {whole})"
    )
    print(f"  assign, stratified by label:     {t_strat:7.3f} s")
    print(
        f"  leakcheck split total (rules + components + assign): {total:.2f} s, "
        f"{total / max(t_base, 1e-9):.0f}x the random baseline; target < 10 s"
    )
    print(
        "  shares:",
        np.round(np.bincount(plain, minlength=3) / len(plain), 4).tolist(),
        "stratified:",
        np.round(np.bincount(strat, minlength=3) / len(strat), 4).tolist(),
    )


if __name__ == "__main__":
    main()
