"""Decoded rows go into per-family buffers; assembling mixes them with rows from the store."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_leakcheck.errors import StoreDamaged
from pytest_leakcheck.pipeline.decoded_rows import FreshRows


def test_a_column_takes_decoded_rows_from_the_buffer_and_the_rest_from_the_store() -> None:
    fresh = FreshRows(4, {"h": 2, "v": 2}, {"v"})
    digests = [b"a", b"b", b"a", b"c"]  # row 2 is a copy of row 0's content; row 3 comes from the store
    fresh.put(0, b"a", {"h": b"\x01\x02", "v": b"\x05\x06tail"})
    fresh.put(1, b"b", {"h": b"\x03\x04"})
    rows = np.arange(4)
    src = fresh.sources(digests, list(rows))
    assert src.tolist() == [0, 1, 0, -1]
    stored = {b"c": (True, b"\x07\x08"), b"b": (True, b"\x09\x09")}
    got = fresh.column("h", src, rows, stored, digests, head=False)
    assert got.tolist() == [[1, 2], [3, 4], [1, 2], [7, 8]]
    # Row 1's content was decoded without this family: it is read from the store.
    got = fresh.column("v", src, rows, {**stored, b"c": (True, b"\x0a\x0bxyz")}, digests, head=True)
    assert got.tolist() == [[5, 6], [9, 9], [5, 6], [10, 11]]


def test_a_cold_column_without_copies_is_the_buffer_itself() -> None:
    fresh = FreshRows(3, {"h": 1}, set())
    for i, d in enumerate([b"x", b"y", b"z"]):
        fresh.put(i, d, {"h": bytes([i + 1])})
    src = fresh.sources([b"x", b"y", b"z"], [0, 1, 2])
    col = fresh.column("h", src, np.arange(3), {}, [b"x", b"y", b"z"], head=False)
    assert col is fresh.buf["h"] and col[:, 0].tolist() == [1, 2, 3]
    fresh.drop("h")
    assert "h" not in fresh.buf


def test_rows_of_the_wrong_size_are_refused() -> None:
    fresh = FreshRows(1, {"h": 2}, set())
    with pytest.raises(StoreDamaged, match="`h`"):
        fresh.put(0, b"x", {"h": b"\x01\x02\x03"})
    src = fresh.sources([b"y"], [0])
    with pytest.raises(StoreDamaged, match="wrong size"):
        fresh.column("h", src, np.arange(1), {b"y": (True, b"\x01")}, [b"y"], head=False)
