"""The keys the store is read by: one hashing style, and the version strings of the pipeline's own keys.

A cached result is found by a key that names everything it depends on, so a
changed input can never read a stale result: the key differs, the old entry
is ignored, and it is replaced when the new one is written.  Each key below
is ``<kind>:<digest>``, where the digest is the first hex digits of the
SHA-256 of the ``repr`` of its parts (:func:`digest`).  The version strings
are bumped when the arithmetic behind a key changes but none of its inputs
do (``tests/store/test_keys.py`` changes every input and checks the key).
A detector that keeps state between checks builds its keys with
:func:`detector_key` and owns its version string (a ``STORE_VERSION`` beside
the code whose arithmetic it versions).

Per-content signature rows are keyed by ``(digest, family, params)``
(``store/db.py``), where ``params`` is the family's own fingerprint: its
size, kind and decode path, written where the family is defined
(``signals/families.py``, or the detector that computes it).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

#: The assembled signature arrays of the last full check (``store/snapshot.py``).
SNAPSHOT_VERSION = "snapshot-v2"
#: Matches of the incremental detectors between unchanged files (``pipeline/matches.py``).
MATCHES_VERSION = "matches-v6"
#: The image size every decode records, and its version.
DIMS = ("dims", "v1")


class Keyed(Protocol):
    """A signal family as keys see it (``signals.families.Family``)."""

    name: str
    params: str


def digest(parts: Any, size: int = 24) -> str:
    """The one hashing style: hex SHA-256 of the parts' ``repr``, cut to ``size`` digits."""
    return hashlib.sha256(repr(parts).encode("utf-8", "surrogateescape")).hexdigest()[:size]


def _families(families: Iterable[Keyed]) -> list[str]:
    return [f"{f.name}={f.params}" for f in families]


def error_params(decode_path: str, max_pixels: int) -> str:
    """Key of a cached decode error: whether a file is a bomb depends on ``files.max_pixels``."""
    return f"{decode_path};max_pixels={max_pixels}"


def signatures(families: Sequence[Keyed], max_pixels: int) -> str:
    """The signature snapshot: every family's fingerprint and the pixel limit."""
    return "signatures:" + digest((_families(families), max_pixels, SNAPSHOT_VERSION))


def fingerprint(families: Sequence[Keyed], decode_path: str, pixels_params: str) -> str:
    """A short key of every signature parameter: two policies with the same fingerprint compute the
    same signatures, so a CI cache saved under one is valid for the other."""
    return digest((_families(families), DIMS, decode_path, pixels_params), size=16)


def matches(detector_params: Sequence[str], pairs: Any, within_split: str, orientations: Sequence[str],
            snapshot_key: str) -> str:
    """Matches between unchanged files: the detectors' settings, what is compared, the signatures."""
    return "matches:" + digest((list(detector_params), pairs, within_split, list(orientations), snapshot_key,
                                MATCHES_VERSION))


def detector_key(name: str, version: str, parts: Sequence[Any]) -> str:
    """A detector's stored state (its model, levels, points): ``<name>:<digest>`` of its version string
    and everything else the state depends on (settings, split pairs, signal families), or the bare
    digest when ``name`` is empty."""
    return (f"{name}:" if name else "") + digest((version, *parts))


def slotted(slot: str, key: str) -> str:
    """A snapshot's ``key`` in ``slot``: the store keeps one current snapshot per kind *and slot*.

    `leakcheck split` runs a check of its own over every file pooled in one
    split (``split/clusters.py``); had its search state (matches, the aligned
    model, pairs and scores) the check's slots, each would evict the other's, and
    the next check would search and calibrate everything again (a warm check of
    5,856 X-rays took 82-112 s after a dry-run split instead of 4 s).  The
    signature snapshot is the files' and no split's, so every slot shares it.
    """
    if not slot or key.startswith("signatures:"):
        return key
    return f"{slot}/{key}"
