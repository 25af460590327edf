"""`leakcheck fingerprint`: the signature-parameter fingerprint (a cache key), or the store's folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from ...errors import EXIT_CLEAN
from ...policy.locate import policy_path
from ..options import add_policy, command


def add_parser(sub: argparse._SubParsersAction) -> None:
    fpr = command(sub, "fingerprint", "print the signature-parameter fingerprint (a cache key)")
    add_policy(fpr)
    fpr.add_argument("--cache-dir", action="store_true",
                     help="print the absolute folder of the policy's signature store instead")


def run(args: argparse.Namespace) -> int:
    return fingerprint(args.policy, cache_dir=args.cache_dir)


def fingerprint(policy_file: Path | None, *, cache_dir: bool) -> int:
    from ...pipeline.signatures import fingerprint as signature_fingerprint
    from ...policy.load import load

    policy = load(policy_path(policy_file))
    if cache_dir:  # what the Action caches: the store's folder, by the check's own rules
        from ...ci.pullrequest import cache_dir_output
        print(cache_dir_output(policy))
    else:
        print(signature_fingerprint(policy))
    return EXIT_CLEAN
