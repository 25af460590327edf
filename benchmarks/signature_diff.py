"""Whether two versions of the code sign images byte for byte alike: a speed change must not move a row.

Run by hand, once per version, then compare::

    PYTHONPATH=/path/to/main python benchmarks/signature_diff.py dump main.json DIR [DIR ...]
    PYTHONPATH=/path/to/yours python benchmarks/signature_diff.py dump yours.json DIR [DIR ...]
    python benchmarks/signature_diff.py compare main.json yours.json

``dump`` signs every image under the folders (``decode.sign``, every family of the default policy,
two processes) and writes a short digest of each family's row per file; ``compare`` prints the
families whose rows differ and a few of their files, or ``identical``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
from concurrent.futures import ProcessPoolExecutor
from functools import lru_cache
from pathlib import Path

SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff", ".gif"}


@lru_cache(maxsize=1)
def _families() -> tuple:
    from pytest_leakcheck import detectors
    from pytest_leakcheck.policy.load import load

    with tempfile.TemporaryDirectory() as tmp:
        policy = Path(tmp) / "leakcheck.yaml"
        policy.write_text("version: 1\nsplits:\n  train: [train/**]\n  test: [test/**]\n")
        return detectors.families(load(policy))


def _one(path: str) -> tuple[str, dict[str, str]]:
    from pytest_leakcheck.signals.decode import Failed, SignTask, sign

    _, _, result = sign(SignTask(path, 10**9, _families()))
    if isinstance(result, Failed):
        return path, {"failed": result.why}
    return path, {name: hashlib.blake2b(row, digest_size=8).hexdigest() for name, row in result.items()}


def dump(out: Path, roots: list[Path]) -> None:
    files = [str(f) for r in roots for f in sorted(r.rglob("*"))
             if f.suffix.lower() in SUFFIXES and ".leakcheck" not in f.parts]
    with ProcessPoolExecutor(2) as pool:
        rows = dict(pool.map(_one, files, chunksize=32))
    out.write_text(json.dumps(rows, sort_keys=True))
    print(f"{len(rows)} files signed")


def compare(a_path: Path, b_path: Path) -> None:
    a, b = json.loads(a_path.read_text()), json.loads(b_path.read_text())
    if a.keys() != b.keys():
        print(f"different files: {len(a.keys() ^ b.keys())} in one dump only")
    differ: dict[str, list[str]] = {}
    for f in a.keys() & b.keys():
        for name in set(a[f]) | set(b[f]):
            if a[f].get(name) != b[f].get(name):
                differ.setdefault(name, []).append(f)
    print(f"{len(a.keys() & b.keys())} files: " + ("identical" if not differ else "; ".join(
        f"{name} differs in {len(fs)} (e.g. {sorted(fs)[0]})" for name, fs in sorted(differ.items()))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump")
    d.add_argument("out", type=Path)
    d.add_argument("roots", type=Path, nargs="+")
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = parser.parse_args()
    if args.command == "dump":
        dump(args.out, args.roots)
    else:
        compare(args.a, args.b)


if __name__ == "__main__":
    main()
