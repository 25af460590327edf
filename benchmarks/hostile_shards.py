"""A campaign of hostile shards against `leakcheck check` (issue 34, classes 2, 3, 7 and 12):
count the outcomes.

Run by hand: ``python benchmarks/hostile_shards.py [--random 40] [--seed 0]``.  Each input is a
WebDataset or Hugging Face dataset whose test split holds a byte copy of a train image, hidden
one hostile way: two tar members of one name (the copy first or last), a folder named like a
shard (``x.tar#d/real.tar``) beside a decoy, a file named like a member beside its shard,
member names with ``#``, ``../``, a leading ``/``, or a line break, link and folder members,
a ``.json`` member nested 200,000 deep, not UTF-8 or 2 MB long, a Parquet dictionary bomb
(1,500 rows of one 1 MB value), a Parquet row group declaring 600 MB, an image cell that is
not an image; then ``--random`` shards mixing them.  The check runs in a child under a 3 GB
address-space limit (hostile_common.py).  Counted: inputs tried, exit codes, exit 3, hangs,
files moved outside the repository (always 0: a check moves nothing), leaks passed (exit 0
although the copy is in test).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hostile_common import Tally, leakcheck  # noqa: E402

from pytest_leakcheck.testing import photo  # noqa: E402

WDS = "version: 1\nsplits:\n  webdataset: {train: 'shards/train-*.tar', test: 'TEST', columns: {group: subject}}\n"
HF = "version: 1\nsplits:\n  huggingface: {train: data/train.parquet, test: 'TEST'}\n"


def jpeg(seed: int) -> bytes:
    buf = io.BytesIO()
    photo(seed, (48, 36)).save(buf, "JPEG", quality=90)
    return buf.getvalue()


def tar(path: Path, members: list[tuple[str, bytes | str]]) -> None:
    """Members: name -> bytes, or ``"dir"`` / ``"link:TARGET"``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w") as tf:
        for name, data in members:
            info = tarfile.TarInfo(name)
            if data == "dir":
                info.type = tarfile.DIRTYPE
                tf.addfile(info)
            elif isinstance(data, str):
                info.type, info.linkname = tarfile.SYMTYPE, data.split(":", 1)[1]
                tf.addfile(info)
            else:
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))


def wds(root: Path, test_glob: str = "shards/test-*.tar") -> None:
    tar(root / "shards/train-0.tar", [(f"t{k}.jpg", jpeg(k)) for k in range(3)])
    (root / "leakcheck.yaml").write_text(WDS.replace("TEST", test_glob))


def parquet_table(path: Path, cells: list[bytes]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"image": pa.array(cells, pa.binary())}), path)


def hf(root: Path, test_glob: str = "data/test*.parquet") -> None:
    parquet_table(root / "data/train.parquet", [jpeg(k) for k in range(3)])
    (root / "leakcheck.yaml").write_text(HF.replace("TEST", test_glob))


def in_child(code: str, *args: str) -> None:
    """Run ``code`` in a child: a bomb takes gigabytes to write, and a parent's peak passes to its children."""
    subprocess.run([sys.executable, "-c", code, *args], check=True, timeout=600)


COPY = 1  # the train image the test split copies


def case(members: list[tuple[str, bytes | str]]) -> Callable[[Path], None]:
    def make(root: Path) -> None:
        wds(root)
        tar(root / "shards/test-0.tar", members)
    return make


def folder_named_like_a_shard(root: Path) -> None:
    wds(root, "shards/x.tar#d/*.tar")
    tar(root / "shards/x.tar#d/real.tar", [("c.jpg", jpeg(COPY))])
    tar(root / "shards/x.tar", [("d/real.tar#c.jpg", jpeg(40))])


def parquet_folder_named_like_a_shard(root: Path) -> None:
    hf(root, "data/x.parquet#d/*.parquet")
    parquet_table(root / "data/x.parquet#d/test.parquet", [jpeg(COPY)])
    parquet_table(root / "data/x.parquet", [jpeg(41)])


def decoy_beside(root: Path) -> None:
    wds(root)
    tar(root / "shards/test-0.tar", [("c.jpg", jpeg(COPY))])
    (root / "shards/test-0.tar#c.jpg").write_bytes(jpeg(42))


def dictionary_bomb(root: Path) -> None:
    hf(root)
    parquet_table(root / "data/test-copy.parquet", [jpeg(COPY)])
    in_child("import pyarrow as pa, pyarrow.parquet as pq, sys; "
             "k = pa.struct([('bytes', pa.binary()), ('path', pa.string())]); "
             "one = pa.table({'image': pa.array([{'bytes': b'\\0' * (1 << 20), 'path': 'a.jpg'}], k)}); "
             "pq.write_table(one.take(pa.array([0] * 1500)), sys.argv[1], compression='zstd', row_group_size=1500)",
             str(root / "data/test-bomb.parquet"))


def declared_bomb(root: Path) -> None:
    hf(root)
    parquet_table(root / "data/test-copy.parquet", [jpeg(COPY)])
    in_child("import pyarrow as pa, pyarrow.parquet as pq, sys; "
             "pq.write_table(pa.table({'image': pa.array([b'\\0' * (600 << 20)], pa.binary())}), sys.argv[1], "
             "compression='zstd', use_dictionary=False)", str(root / "data/test-bomb.parquet"))


def not_an_image_cell(root: Path) -> None:
    hf(root)
    parquet_table(root / "data/test.parquet", [jpeg(COPY), b"%PDF-1.4 not a picture", b""])


CASES: dict[str, Callable[[Path], None]] = {
    "two members of one name, copy first": case([("x.jpg", jpeg(COPY)), ("x.jpg", jpeg(30))]),
    "two members of one name, copy last": case([("x.jpg", jpeg(30)), ("x.jpg", jpeg(COPY))]),
    "folder named like a tar shard": folder_named_like_a_shard,
    "folder named like a Parquet shard": parquet_folder_named_like_a_shard,
    "file beside a shard named like its member": decoy_beside,
    "member names with # ../ / and a line break": case([("a#b.tar#c.jpg", jpeg(COPY)), ("../up.jpg", jpeg(31)),
                                                        ("/abs.jpg", jpeg(32)), ("li\nne.jpg", jpeg(33))]),
    "link and folder members": case([("d", "dir"), ("d/l.jpg", "link:../x.jpg"), ("x.jpg", jpeg(COPY))]),
    ".json nested 200,000 deep": case([("k.jpg", jpeg(COPY)), ("k.json", b"[" * 200_000 + b"]" * 200_000)]),
    ".json not UTF-8": case([("k.jpg", jpeg(COPY)), ("k.json", b'{"subject": "\xff\xfe"}')]),
    ".json of 2 MB": case([("k.jpg", jpeg(COPY)), ("k.json", b'{"subject": "' + b"a" * (2 << 20) + b'"}')]),
    "Parquet dictionary bomb beside the copy": dictionary_bomb,
    "Parquet row group declaring 600 MB": declared_bomb,
    "a cell that is no image": not_an_image_cell,
}
TAR_PIECES: list[tuple[str, bytes | str]] = [
    ("x.jpg", b"COPY"), ("x.jpg", b"OTHER"), ("y.jpg", b"OTHER"), ("y.json", b"[" * 50_000),
    ("y.json", b'{"subject": 5}'), ("z.jpg", b""), ("z.jpg", b"\xff\xd8 truncated"), ("w#v.jpg", b"COPY"),
    ("./x.jpg", b"COPY"), ("dir", "dir"), ("dir/x.jpg", "link:../x.jpg"), ("q.cls", b"\xff" * 300),
]


def random_case(rng: random.Random) -> Callable[[Path], None]:
    picked = [rng.choice(TAR_PIECES) for _ in range(rng.randint(2, 6))] + [("copy.jpg", b"COPY")]
    rng.shuffle(picked)
    members = [(n, jpeg(COPY) if d == b"COPY" else jpeg(rng.randint(60, 90)) if d == b"OTHER" else d)
               for n, d in picked]
    return case(members)


def one(tally: Tally, name: str, make: Callable[[Path], None]) -> None:
    base = Path(tempfile.mkdtemp(prefix="hostile-shard-"))
    try:
        root = base / "repo"
        root.mkdir()
        make(root)
        code, _, err = leakcheck("check", "--policy", str(root / "leakcheck.yaml"), "-j", "1", "--no-cache")
        tally.count(name, code, err, leak=True)  # every input holds a copy of a train image in test
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--random", type=int, default=40, help="tar shards mixing hostile members")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    tally = Tally("shards")
    for name, make in CASES.items():
        one(tally, name, make)
    for k in range(args.random):
        one(tally, f"random {k}", random_case(rng))
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
