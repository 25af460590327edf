"""`leakcheck split`'s command-line options, apart from the command so that building the
parser (`leakcheck --version`, `--help`) imports nothing the split itself needs."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction, default_policy: str) -> None:
    """`leakcheck split`'s options (called by app._parser)."""
    spl = sub.add_parser("split", help=(help := "write a manifest in which no group or copy spans splits, or, for "
                                                  "split folders, print (or --apply) the moves that make it so"),
                         description=help)
    spl.add_argument("--policy", type=Path, help=f"policy file (default: nearest {default_policy})")
    spl.add_argument("--test", type=float, default=None,
                     help="share of files for test, e.g. 0.2 (needed to write a new manifest)")
    spl.add_argument("--val", type=float, default=0.0, help="share for val (default: 0: no val)")
    spl.add_argument("--seed", type=int, default=0, help="the same seed gives the same manifest")
    spl.add_argument("-o", "--output", type=Path,
                     help="manifest CSV to write (without it, a policy of split folders gets moves)")
    spl.add_argument("--apply", action="store_true",
                     help="split folders: perform the moves, all or none (git mv in a git work tree)")
    spl.add_argument("--rollback", action="store_true",
                     help="put back the files of a `split --apply` that was killed before it finished")
    spl.add_argument("--stratify", metavar="folder|COLUMN",
                     help="balance labels: the parent folder name, or a column of the manifest")
    spl.add_argument("--keep", type=Path, metavar="MANIFEST",
                     help="repair this manifest, changing as few assignments as possible")
    spl.add_argument("--names", default="train,val,test", help="split names (default: %(default)s)")
    spl.add_argument("-j", "--jobs", type=int, default=None, help="worker processes (default: all)")
    spl.add_argument("--no-cache", action="store_true", help="do not use the signature store")
