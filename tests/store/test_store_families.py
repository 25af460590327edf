"""Reading several signal families at once gives what one-family reads give, on both read paths."""

from __future__ import annotations

import pytest

from pytest_leakcheck.store import db as store_module
from pytest_leakcheck.store.db import open_store

SPECS = [("phash", "p1"), ("thumb", "t1"), ("error", "e1")]


@pytest.mark.parametrize("scan_over", [10_000, 2], ids=["lookups", "one-pass"])
def test_get_families_matches_get_signatures(monkeypatch: pytest.MonkeyPatch, scan_over: int) -> None:
    """Same rows whichever path runs; other params, families and digests are left out."""
    monkeypatch.setattr(store_module, "_SCAN_OVER", scan_over)
    digests = [bytes([i]) * 32 for i in range(6)]
    rows = [(d, "phash", "p1", True, b"ph" + d[:1]) for d in digests]
    rows += [(d, "thumb", "t1", True, b"th" + d[:1]) for d in digests[:4]]
    rows += [(digests[5], "error", "e1", False, b"corrupt"), (digests[0], "phash", "p0", True, b"old"),
             (bytes([9]) * 32, "phash", "p1", True, b"not asked for"), (digests[1], "pixels", "x", True, b"px")]
    with open_store(None) as store:
        store.put_signatures(rows)
        got = store.get_families(digests[:5] + digests[5:], SPECS)
        assert got == {name: store.get_signatures(digests, name, params) for name, params in SPECS}
        assert got["phash"][digests[0]] == (True, b"ph\x00")
        assert len(got["phash"]) == 6 and len(got["thumb"]) == 4
        assert got["error"] == {digests[5]: (False, b"corrupt")}
