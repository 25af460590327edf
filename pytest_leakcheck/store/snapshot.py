"""The store's snapshot of the signature arrays of the last full check.

A warm check of a large dataset would otherwise read one store row per file
and family; the snapshot is one row, filled in with a few array gathers for
every file whose size and mtime are unchanged.  It holds every family's
arrays by name, whatever the detectors are: ``sig:<array name>``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..files.names import from_bytes, to_bytes
from ..signals.families import Signatures

_SIG = "sig:"


def arrays(
    paths: Sequence[str], sizes: Sequence[int], mtimes: Sequence[int], sigs: Signatures
) -> dict[str, np.ndarray]:
    # Unreadable-for-now files (no digest) are left out, so they are tried again.
    keep = [i for i, d in enumerate(sigs.digests) if d]
    ix = np.array(keep, dtype=np.int64)

    def pick(arr: np.ndarray) -> np.ndarray:
        # Every row kept (the usual case): the arrays as they are, not a copy of a gigabyte.
        return arr if len(ix) == len(arr) else arr[ix]

    # Names as their bytes: one that is not UTF-8 must round-trip, not crash.
    text = to_bytes("\0".join(paths[i] for i in keep))
    errors = to_bytes("\0".join(sigs.errors.get(i, "") for i in keep))
    return {
        "paths": np.frombuffer(text, dtype=np.uint8),
        "size": np.array([sizes[i] for i in keep], dtype=np.int64),
        "mtime_ns": np.array([mtimes[i] for i in keep], dtype=np.int64),
        "digest": np.frombuffer(b"".join(sigs.digests[i] for i in keep), dtype=np.uint8).reshape(-1, 32),
        "errors": np.frombuffer(errors, dtype=np.uint8),
        "valid": pick(sigs.valid),
        "dims": pick(sigs.dims),
        **{_SIG + name: pick(arr) for name, arr in sigs.arrays.items()},
    }


def paths(snap: dict[str, np.ndarray]) -> list[str]:
    """The paths of a snapshot's rows, in order."""
    return from_bytes(snap["paths"].tobytes()).split("\0")


def merge(sub: Signatures, rest: np.ndarray, snap: dict[str, np.ndarray], hits: np.ndarray) -> Signatures:
    """Rows from the snapshot where ``hits >= 0``, from ``sub`` (in order) elsewhere."""
    n = len(hits)
    from_snap = np.flatnonzero(hits >= 0)
    k = hits[from_snap]
    digests: list[bytes] = [b""] * n
    snap_digests = snap["digest"]
    for i, kk in zip(from_snap.tolist(), k.tolist()):
        digests[i] = snap_digests[kk].tobytes()
    for j, i in enumerate(rest.tolist()):
        digests[i] = sub.digests[j]
    snap_errors = from_bytes(snap["errors"].tobytes()).split("\0")
    errors = {int(rest[j]): msg for j, msg in sub.errors.items()}
    errors.update({i: snap_errors[kk] for i, kk in zip(from_snap.tolist(), k.tolist()) if snap_errors[kk]})

    # Each row's snapshot row (0 for the new ones, overwritten from ``sub`` below).
    source = np.zeros(n, np.int64)
    source[from_snap] = k

    def column(name: str, part: np.ndarray) -> np.ndarray:
        # One gather straight into place (no zero fill, no gathered copy scattered again):
        # a commit hook merges every stored signature for its one new file.
        out = np.empty((n, *part.shape[1:]), dtype=part.dtype)
        base = snap[name]
        if len(base):
            np.take(base, source, axis=0, out=out)
        out[rest] = part
        return out

    return Signatures(
        digests=tuple(digests),
        valid=column("valid", sub.valid),
        errors=errors,
        dims=column("dims", sub.dims),
        arrays={name: column(_SIG + name, arr) for name, arr in sub.arrays.items()},
        stats=dict(sub.stats),
    )
