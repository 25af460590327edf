"""Does a change leave ``leakcheck init`` and the unassigned-file findings as they were on the field sets?

``init`` runs on every dataset folder under ``--data`` twice, with another checkout's code (``--base``,
e.g. main's) and with this repository's, each writing ``leakcheck.<who>.yaml`` into the folder; its
output (the policy's name set aside) and the policies are compared byte for byte. Then the
unassigned-file findings of each folder's policy (the inventory alone: no image is decoded) are
compared the same way. Run it on ``cp -al`` copies: it writes the two policies into each folder.

    python benchmarks/init_identity.py --data /work/scratch/s57/probe3/idcopies --base /work/main

Held-out probe 3 of stop 57 (docs/field.md): the 33 field sets of stop 56, the same on both counts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

#: Printed by ``--unassigned``: each policy's unassigned-file findings, as (members listed, message).
_UNASSIGNED = """
import json, sys
from pathlib import Path
from pytest_leakcheck.dataset.inventory import scan
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.pipeline import findings as F
inv = scan(load(Path(sys.argv[1])))
fold = getattr(F, "unassigned_findings", None) or getattr(F, "_unassigned")
found = fold([i for i in inv.issues if i.kind == "unassigned"], "warning", inv)
print(json.dumps(sorted([len(f.members), f.message] for f in found)))
"""


def _run(code: Path, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(code)}
    # Not from this repository's folder: `python -m` puts the working folder first on the path.
    done = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=1800, cwd="/")
    return done.stdout + done.stderr + f"rc={done.returncode}\n"


def compare(folder: Path, base: Path) -> list[str]:
    """What differs between the two checkouts on ``folder``: [] when nothing does."""
    out: dict[str, tuple[str, str, str]] = {}
    for who, code in (("base", base), ("this", REPO)):
        policy = folder / f"leakcheck.{who}.yaml"
        policy.unlink(missing_ok=True)  # a policy of an earlier run is not this one's
        said = _run(code, "-m", "pytest_leakcheck", "init", str(folder), "--force", "-o", str(policy))
        said = said.replace(policy.name, "leakcheck.X.yaml")
        text = policy.read_text() if policy.is_file() else ""
        found = _run(code, "-c", _UNASSIGNED, str(policy)) if text else ""
        out[who] = (said, text, found)
    names = ("init output", "policy", "unassigned-file findings")
    return [name for name, a, b in zip(names, out["base"], out["this"]) if a != b]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="a folder of dataset folders (cp -al copies)")
    parser.add_argument("--base", type=Path, required=True, help="the other checkout (its package folder's parent)")
    args = parser.parse_args()
    different = {}
    for folder in sorted(p for p in args.data.iterdir() if p.is_dir()):
        diff = compare(folder, args.base)
        print(f"{folder.name}: {'same' if not diff else 'DIFFERENT ' + ', '.join(diff)}", flush=True)
        if diff:
            different[folder.name] = diff
    print(json.dumps({"sets": len(list(args.data.iterdir())), "different": different}))
    return 1 if different else 0


if __name__ == "__main__":
    raise SystemExit(main())
