"""`leakcheck export`: one row per image (split, group, digests, hashes, copy cluster)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ...errors import EXIT_CLEAN, UsageError
from ...policy.locate import policy_path
from ..options import Engine, add_engine_options, add_policy, command, engine


def add_parser(sub: argparse._SubParsersAction) -> None:
    exp = command(sub, "export", "write one row per image (split, group, digests, hashes, copy cluster)")
    exp.add_argument("-o", "--output", type=Path, help="CSV, JSON lines or Parquet file (default: CSV on stdout)")
    exp.add_argument("--format", choices=("csv", "jsonl", "parquet"), help="default: from the output suffix")
    add_policy(exp)
    add_engine_options(exp)


def run(args: argparse.Namespace) -> int:
    return export(args.policy, engine(args), args.output, args.format)


def export(policy_file: Path | None, run_with: Engine, out: Path | None, fmt_name: str | None) -> int:
    from ...integrations import export as exporter
    from ...policy.load import load

    policy = load(policy_path(policy_file))
    fmt = exporter.format_of(out, fmt_name)
    if out is None and fmt == "parquet":
        raise UsageError("Parquet cannot go to stdout", fix="pass -o FILE.parquet")
    table = exporter.table(policy, jobs=run_with.jobs, use_cache=run_with.use_cache)
    if out is None:
        sys.stdout.write(exporter.to_text(table, fmt))
        return EXIT_CLEAN
    exporter.write(table, out, fmt)
    copies = sum(1 for c in table.column("cluster") if c)
    print(f"leakcheck export: {len(table.rows)} images, {copies} in copy clusters, written to {out}",
          file=sys.stderr)
    return EXIT_CLEAN
