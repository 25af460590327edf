"""Great Expectations: import time of pytest_leakcheck.integrations.gx, and validate_table() on 50,000 rows.

Run by hand: ``python benchmarks/gx_validate.py [--rows 50000] [--repeat 3]``.  It measures:

- the import of ``pytest_leakcheck.integrations.gx`` in a fresh interpreter each time, beside two
  baselines measured the same way: ``import pytest_leakcheck`` (the core) and
  ``import great_expectations`` alone (what GX itself costs);
- ``validate_table()`` on a synthetic export table (no images: 80/10/10 splits,
  3 % of rows in copy clusters of two, groups of ten), in one ephemeral context,
  beside a baseline: the same context validating GX's own
  ``ExpectCompoundColumnsToBeUnique`` twice over the same columns (a built-in
  multicolumn map expectation, so the difference is our metric, not GX's overhead).

Every figure is given as its range over the repeats (wall seconds; CPU seconds
for the imports, which a shared, busy machine distorts least).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time

import numpy as np


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def import_seconds(module: str) -> tuple[float, float]:
    """(seconds inside the fresh process for the import alone, CPU seconds of the whole process)."""
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    c = _children_cpu()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip()), _children_cpu() - c


def synthetic(rows: int, seed: int = 0):  # -> export.Table
    """An export table with planted copy clusters and groups, without a single image."""
    from pytest_leakcheck.integrations.export import Table

    rng = np.random.default_rng(seed)
    # Groups of ten in one split each, then one file of every hundredth group moved: a group split.
    names = np.array(["train", "val", "test"])
    split = np.repeat(rng.choice(names, size=rows // 10 + 1, p=[0.8, 0.1, 0.1]), 10)[:rows]
    group = np.array([f"g{i // 10:05d}" for i in range(rows)])
    for i in range(0, rows, 1000):
        split[i] = names[(list(names).index(split[i]) + 1) % 3]
    # 3 % of rows in copy clusters of two, drawn at random: about a third of them cross splits.
    cluster = np.full(rows, "", dtype=object)
    pairs = rng.choice(rows, size=(int(rows * 0.015), 2), replace=False)
    for n, (a, b) in enumerate(pairs):
        cluster[a] = cluster[b] = f"{n:012x}"
    hexes = [f"{v:016x}" for v in rng.integers(0, 2**63, size=rows)]
    columns = ("path", "split", "group", "digest", "pixel_digest", "phash_identity", "phash_hflip",
               "cluster", "kind", "severity", "status", "findings")
    table = tuple(
        (f"{split[i]}/img_{i:06d}.jpg", str(split[i]), str(group[i]), f"{i:064x}", "", hexes[i], hexes[i],
         cluster[i], "near-duplicate" if cluster[i] else "", "error" if cluster[i] else "",
         "new" if cluster[i] else "", cluster[i])
        for i in range(rows)
    )
    return Table(columns, table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")

    def fmt(values: list[float]) -> str:
        return f"{min(values):6.2f} - {max(values):6.2f}"

    print(f"import in a fresh process, {args.repeat}x: import seconds range | process CPU seconds range")
    for module in ("pytest_leakcheck", "great_expectations", "pytest_leakcheck.integrations.gx"):
        runs = [import_seconds(module) for _ in range(args.repeat)]
        print(f"  {module:22} {fmt([w for w, _ in runs])} s | {fmt([c for _, c in runs])} s", flush=True)

    import great_expectations as gx
    import pandas as pd

    from pytest_leakcheck.integrations import gx as lgx

    table = synthetic(args.rows)
    # The columns validate_table() passes to GX, for the baseline.
    frame = pd.DataFrame({name: table.column(name) for name in ("path", "split", "group", "cluster")})
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = gx.data_context.types.base.ProgressBarsConfig(globally=False)

    ours, counts = [], {}
    for _ in range(args.repeat):
        t = time.perf_counter()
        result = lgx.validate_table(table, context)
        ours.append(time.perf_counter() - t)
        counts = {r.expectation_config.type: r.result["unexpected_count"] for r in result.results}

    baseline = []
    suite = context.suites.add(gx.ExpectationSuite(name="baseline", expectations=[
        gx.expectations.ExpectCompoundColumnsToBeUnique(column_list=["cluster", "split", "path"]),
        gx.expectations.ExpectCompoundColumnsToBeUnique(column_list=["group", "split", "path"]),
    ]))
    batch = context.data_sources.get(lgx.DATASOURCE).get_asset(lgx.ASSET).get_batch_definition(lgx.ASSET)
    definition = context.validation_definitions.add(gx.ValidationDefinition(name="baseline", data=batch,
                                                                            suite=suite))
    for _ in range(args.repeat):
        t = time.perf_counter()
        definition.run(batch_parameters={"dataframe": frame}, result_format="COMPLETE")
        baseline.append(time.perf_counter() - t)

    print(f"validate {args.rows:,} rows, {args.repeat}x, wall seconds range (unexpected rows: {counts}):")
    print(f"  baseline: 2x ExpectCompoundColumnsToBeUnique   {fmt(baseline)} s")
    print(f"  validate_table(): our two expectations         {fmt(ours)} s"
          " (from the export table: includes building the DataFrame)"
          f"\n  ratio of bests: {min(ours) / min(baseline):.2f}")


if __name__ == "__main__":
    main()
