"""Unreadable images become findings, and orientations agree between PIL and numpy."""

from __future__ import annotations

import io
import struct
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pytest_leakcheck import EXIT_LEAKS, check
from pytest_leakcheck.validate import ORIENTATIONS
from pytest_leakcheck.signals.decode import TRANSPOSE
from pytest_leakcheck.search.kernels import orient_thumbs
from pytest_leakcheck.testing import photo, save

from ..conftest import POLICY, write_policy

SMALL = (64, 48)


def _jpeg(seed: int) -> bytes:
    buf = io.BytesIO()
    photo(seed, SMALL).save(buf, "JPEG", quality=90)
    return buf.getvalue()


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _bomb_png(side: int = 30000) -> bytes:
    """A valid 1-bit PNG header claiming side x side pixels, in a few hundred bytes."""
    ihdr = struct.pack(">IIBBBBB", side, side, 1, 0, 0, 0, 0)
    row = b"\0" + b"\0" * ((side + 7) // 8)
    idat = zlib.compress(row * 4, 9)  # truncated pixel data: the header alone is the bomb
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", ihdr)
        + _png_chunk(b"IDAT", idat)
        + _png_chunk(b"IEND", b"")
    )


UNREADABLE: dict[str, bytes] = {
    "truncated.jpg": _jpeg(7)[:400],
    "corrupt.jpg": b"\xff\xd8\xff\xe0" + bytes(range(256)) * 8,
    "zero.png": b"",
    "text.png": b"this is not an image, just some text\n" * 3,
    "bomb.png": _bomb_png(),
}


@pytest.fixture
def broken_dataset(tmp_path: Path) -> Path:
    """Two train images, a copy of one in test, and every kind of unreadable file in test."""
    save(photo(1, SMALL), tmp_path / "train/a.jpg", quality=90)
    save(photo(2, SMALL), tmp_path / "train/b.jpg", quality=90)
    save(photo(1, SMALL), tmp_path / "test/leak.jpg", quality=60)
    for name, data in UNREADABLE.items():
        (tmp_path / "test" / name).write_bytes(data)
    write_policy(tmp_path, "version: 1\nsplits: {train: [train/**], test: [test/**]}\n")
    return tmp_path


def test_unreadable_files_are_findings_and_the_rest_is_checked(broken_dataset: Path) -> None:
    """Each broken file is an error `unreadable-image` finding; the planted leak is still found."""
    report = check(broken_dataset / "leakcheck.yaml", use_cache=False)
    unreadable = {f.members[0].path: f for f in report.findings if f.kind == "unreadable-image"}
    assert sorted(unreadable) == sorted(f"test/{n}" for n in UNREADABLE)
    assert {f.severity for f in unreadable.values()} == {"error"}
    assert "zero-byte" in unreadable["test/zero.png"].message
    assert "decompression bomb" in unreadable["test/bomb.png"].message
    leaks = [f for f in report.findings if f.kind == "near-duplicate"]
    assert [sorted(m.path for m in f.members) for f in leaks] == [["test/leak.jpg", "train/a.jpg"]]
    assert report.exit_code == EXIT_LEAKS


def test_unreadable_via_cli_has_no_traceback(broken_dataset: Path, run_cli) -> None:
    """The CLI reports the broken files and exits 1, with nothing but the report on the streams."""
    code, out, err = run_cli(
        "check", "--policy", str(broken_dataset / "leakcheck.yaml"), "--no-cache"
    )
    assert code == EXIT_LEAKS
    assert out.count("ERROR unreadable-image") == len(UNREADABLE)
    assert "Traceback" not in out + err


def test_unreadable_severity_follows_policy(broken_dataset: Path) -> None:
    """`files.unreadable: warning` keeps the findings but no longer fails on them alone."""
    (broken_dataset / "test/leak.jpg").unlink()
    write_policy(
        broken_dataset,
        "version: 1\nsplits: {train: [train/**], test: [test/**]}\nfiles: {unreadable: warning}\n",
    )
    report = check(broken_dataset / "leakcheck.yaml", use_cache=False)
    assert [f.severity for f in report.findings] == ["warning"] * len(UNREADABLE)
    assert report.exit_code == 0


def test_max_pixels_flags_a_normal_image(tmp_path: Path) -> None:
    """An image larger than `files.max_pixels` is a decompression-bomb finding."""
    save(photo(1, SMALL), tmp_path / "train/a.png")
    save(photo(2, (32, 30)), tmp_path / "train/small.png")
    write_policy(tmp_path, "version: 1\nsplits: {train: [train/**]}\nfiles: {max_pixels: 1000}\n")
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    # One split compares nothing across splits: a not-examined note (pipeline/unseen.py), no member.
    assert [(f.kind, f.members[0].path if f.members else "") for f in report.findings] == [
        ("unreadable-image", "train/a.png"), ("not-examined", "")
    ]
    assert "exceeds files.max_pixels (1,000)" in report.findings[0].message


def test_max_pixels_applies_to_cached_signatures(tmp_path: Path) -> None:
    """Lowering `files.max_pixels` flags an image even when its signatures are already cached."""
    save(photo(1, SMALL), tmp_path / "train/a.png")
    policy = "version: 1\nsplits: {train: [train/**]}\n"
    write_policy(tmp_path, policy)
    assert [f.kind for f in check(tmp_path / "leakcheck.yaml").findings] == ["not-examined"]  # one split: a note
    write_policy(tmp_path, policy + "files: {max_pixels: 1000}\n")
    report = check(tmp_path / "leakcheck.yaml")
    assert [f.kind for f in report.findings] == ["unreadable-image", "not-examined"]
    write_policy(tmp_path, policy)
    assert [f.kind for f in check(tmp_path / "leakcheck.yaml").findings] == ["not-examined"]


def test_exif_orientation_is_applied(tmp_path: Path) -> None:
    """A sideways JPEG with an EXIF rotation tag matches its upright original, no augmentation."""
    img = photo(3, SMALL)
    save(img, tmp_path / "train/upright.jpg", quality=92)
    exif = Image.Exif()
    exif[0x0112] = 6  # display rotated 90 degrees clockwise
    save(
        img.transpose(Image.Transpose.ROTATE_90),
        tmp_path / "test/tagged.jpg",
        quality=92,
        exif=exif,
    )
    write_policy(tmp_path, "version: 1\nsplits: {train: [train/**], test: [test/**]}\n")
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    assert [sorted(m.path for m in f.members) for f in report.findings] == [
        ["test/tagged.jpg", "train/upright.jpg"]
    ]
    assert report.findings[0].orientation == "identity"


def _tiff_with_bad_tag(seed: int) -> bytes:
    """A TIFF whose compression tag claims more data than the file holds; Pillow warns, reads it."""
    buf = io.BytesIO()
    photo(seed, SMALL).save(buf, "TIFF")
    data = bytearray(buf.getvalue())
    ifd = struct.unpack_from("<I", data, 4)[0]
    for e in range(struct.unpack_from("<H", data, ifd)[0]):
        entry = ifd + 2 + 12 * e
        if struct.unpack_from("<H", data, entry)[0] == 259:
            struct.pack_into("<I", data, entry + 4, 10**6)
    return bytes(data)


def test_damaged_metadata_warns_nobody(tmp_path: Path) -> None:
    """Pillow's warnings about damaged tags stay inside the decoder; the image is still signed."""
    (tmp_path / "train").mkdir()
    (tmp_path / "train/bad_tag.tif").write_bytes(_tiff_with_bad_tag(4))
    save(photo(4, SMALL), tmp_path / "test/same.png")
    write_policy(tmp_path, "version: 1\nsplits: {train: [train/**], test: [test/**]}\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = check(tmp_path / "leakcheck.yaml", use_cache=False, jobs=1)
    assert [f.kind for f in report.findings] == ["identical-pixels"]


@pytest.mark.parametrize("name", ORIENTATIONS)
def test_orient_thumbs_matches_pil_transpose(name: str) -> None:
    """numpy `orient_thumbs` gives the same pixels as PIL's transpose in all 8 orientations."""
    rng = np.random.default_rng(5)
    side = 7
    squares = rng.integers(0, 256, (3, side, side), dtype=np.uint8)
    got = orient_thumbs(squares.reshape(3, -1), name)
    op = TRANSPOSE[name]
    want = [
        np.asarray(img if op is None else img.transpose(op)).ravel()
        for img in (Image.fromarray(sq) for sq in squares)
    ]
    np.testing.assert_array_equal(got, np.stack(want))


@pytest.mark.slow
def test_numpy_phash_equals_imagehash_bit_for_bit() -> None:
    """Our scipy-free phash gives exactly imagehash.phash's bits, in every orientation and size."""
    import imagehash
    import numpy as np

    from pytest_leakcheck.signals.decode import TRANSPOSE
    from pytest_leakcheck.signals.families import phash_bits

    rng = np.random.default_rng(0)
    images = [photo(seed, (int(rng.integers(40, 200)), int(rng.integers(40, 200)))) for seed in range(40)]
    images += [Image.fromarray(rng.integers(0, 256, (32, 32), dtype=np.uint8)) for _ in range(20)]
    compared = 0
    for img in images:
        for op in TRANSPOSE.values():
            oriented = img if op is None else img.transpose(op)
            for hash_size in (8, 16):
                ours = phash_bits(oriented, hash_size)
                theirs = imagehash.phash(oriented, hash_size=hash_size).hash
                assert np.array_equal(ours, theirs)
                compared += 1
    assert compared == 60 * 8 * 2


def test_a_checkout_that_only_changes_mtimes_reads_no_family_and_decodes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After ``actions/checkout`` every mtime is new: each file is hashed once, its signatures come
    from the snapshot (no per-content store reads), the findings are the same, and the next run
    hashes nothing (the new mtimes were kept)."""
    import os

    from pytest_leakcheck.store.db import Store

    for i in range(12):
        save(photo(i, (40, 40)), tmp_path / ("train" if i < 9 else "test") / f"p{i}.png")
    save(photo(3, (40, 40)), tmp_path / "test" / "copy.png")
    policy = write_policy(tmp_path)
    first = check(policy)
    for f in tmp_path.rglob("*.png"):
        st = f.stat()
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    asked: list[int] = []
    real = Store.get_families
    monkeypatch.setattr(Store, "get_families",
                        lambda self, digests, wanted: asked.append(len(digests)) or real(self, digests, wanted))
    second = check(policy)
    assert second.stats["hashed"] == 13 and second.stats["decoded"] == 0
    assert sum(asked) == 0
    assert [f.id for f in second.findings] == [f.id for f in first.findings] and first.findings
    third = check(policy)
    assert third.stats["hashed"] == 0 and third.stats["reused"] == 13


def test_a_cold_check_asks_every_family_of_each_content_through_one_tuple(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Contents the store holds nothing for lack every family: their tasks share one tuple (pickled once
    a chunk), not a tuple each built by asking the store's rows of every family; a content the store
    holds some families of is asked only the rest."""
    from pytest_leakcheck.pipeline import signatures

    for i in range(10):
        save(photo(i, (40, 40)), tmp_path / ("train" if i < 7 else "test") / f"p{i}.png")
    policy = write_policy(tmp_path)
    tasks: list = []
    real = signatures.run_map
    monkeypatch.setattr(signatures, "run_map",
                        lambda fn, items, *a: tasks.extend(items) or real(fn, items, *a))
    check(policy)
    assert len(tasks) == 10 and len({id(t.families) for t in tasks}) == 1
    whole = tasks[0].families
    tasks.clear()
    check(write_policy(tmp_path, POLICY + "detectors: {thumbnail: {size: 8}}\n"))  # the thumbnail alone is new
    assert len(tasks) == 10 and {tuple(f.name for f in t.families) for t in tasks} == {("thumb",)}
    assert len(whole) > 1
