"""Whether a stored snapshot holds together, checked as it is loaded.

A snapshot's checksums prove its bytes are the ones written; they cannot
prove those bytes were written by leakcheck (a store restored from a cache,
or edited with its checksums made valid again).  A row index past the end,
arrays of unequal length, an unknown detector or orientation number or a
wrong basis shape would otherwise surface deep in the search as an
``IndexError`` (exit 3).  Here each kind of snapshot is checked for the
shapes its readers rely on; one that fails is :class:`StoreDamaged`, which
``db.recovering`` answers by setting the store aside, rebuilding it and
running the check again, as for any other damage.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np

#: The aligned detector's gradient descriptor has this many dimensions (``search.multiview.Index.mean``).
DESCRIPTOR = 128

Arrays = dict[str, np.ndarray]


def _names(array: np.ndarray) -> int:
    """How many names a ``\\0``-joined byte array holds (0 for an empty one)."""
    return 0 if array.size == 0 else int(array.tobytes().count(b"\0")) + 1


def _need(arrays: Arrays, names: tuple[str, ...]) -> str | None:
    missing = [n for n in names if n not in arrays]
    return f"no {', '.join(missing)}" if missing else None


def _rows(arrays: Arrays, n: int, names: tuple[str, ...]) -> str | None:
    for name in names:
        a = arrays[name]
        if a.ndim == 0 or len(a) != n:
            return f"{name} has {a.shape} rows where {n} were expected"
    return None


def _within(index: np.ndarray, n: int, name: str) -> str | None:
    if index.size and (not np.issubdtype(index.dtype, np.integer) or index.min() < 0 or index.max() >= n):
        return f"{name} points past the {n} rows"
    return None


def signatures(a: Arrays) -> str | None:
    problem = _need(a, ("paths", "size", "mtime_ns", "digest", "errors", "valid", "dims"))
    if problem:
        return problem
    n = len(a["size"])
    if (n and _names(a["paths"]) != n) or (n and _names(a["errors"]) != n):
        return f"{n} rows but {_names(a['paths'])} paths and {_names(a['errors'])} error texts"
    if a["digest"].shape != (n, 32):
        return f"digests of shape {a['digest'].shape} for {n} rows"
    return _rows(a, n, ("mtime_ns", "valid", "dims", *(k for k in a if k.startswith("sig:"))))


def matches(a: Arrays) -> str | None:
    problem = _need(a, ("paths", "splits", "digest", "i", "j", "detector", "value", "orientation", "weak"))
    if problem:
        return problem
    n = len(a["digest"])
    if a["digest"].ndim != 2 or (n and (_names(a["paths"]) != n or _names(a["splits"]) != n)):
        return f"{n} rows but {_names(a['paths'])} paths and {_names(a['splits'])} splits"
    m = len(a["i"])
    return (_rows(a, m, ("j", "detector", "value", "orientation", "weak")) or _within(a["i"], n, "i")
            or _within(a["j"], n, "j") or _within(a["detector"], 127, "detector")
            or _within(a["orientation"], 127, "orientation"))


def aligned_model(a: Arrays) -> str | None:
    problem = _need(a, ("mean", "basis", "ids", "centroids", "info"))
    if problem:
        return problem
    mean, basis, cent = a["mean"], a["basis"], a["centroids"]
    if mean.shape != (DESCRIPTOR,) or basis.ndim != 2 or basis.shape[0] != DESCRIPTOR or basis.shape[1] < 1:
        return f"a basis of shape {basis.shape} for a mean of shape {mean.shape}"
    if cent.ndim != 2 or (cent.size and cent.shape[1] != basis.shape[1]):
        return f"centroids of shape {cent.shape} for a basis of shape {basis.shape}"
    if a["ids"].ndim != 1:
        return "row ids that are not a list"
    try:
        info = json.loads(a["info"].tobytes())
    except (ValueError, UnicodeDecodeError, RecursionError):
        return "its info is not JSON"
    if not isinstance(info, dict) or not isinstance(info.get("calibration"), dict) \
            or not isinstance(info.get("estimated"), dict):
        return "its info lacks the calibration"
    return None


def aligned_pairs(a: Arrays) -> str | None:
    problem = _need(a, ("ids", "i", "j", "score", "flipped"))
    if problem:
        return problem
    n, m = len(a["ids"]), len(a["i"])
    return _rows(a, m, ("j", "score", "flipped")) or _within(a["i"], n, "i") or _within(a["j"], n, "j")


def aligned_refined(a: Arrays) -> str | None:
    problem = _need(a, ("key", "score"))
    if problem:
        return problem
    if a["key"].ndim != 2 or a["key"].shape[1] != 16:
        return f"pair keys of shape {a['key'].shape}"
    return _rows(a, len(a["key"]), ("score",))


#: Bytes of a fine score's key: two content digests, mirrored, the turn (``aligned/state.py`` FINE_KEY).
FINE_KEY = 66


def aligned_fine(a: Arrays) -> str | None:
    """Fine scores are correlations: a stored one outside [-1, 1] (NaN: no fine evidence) was not
    written by a check, and would decide a link's strength unseen."""
    problem = _need(a, ("key", "score"))
    if problem:
        return problem
    key, score = a["key"], a["score"]
    if key.ndim != 2 or key.shape[1] != FINE_KEY or key.dtype != np.uint8:
        return f"pair keys of shape {key.shape}"
    wrong = _rows(a, len(key), ("score",))
    if wrong:
        return wrong
    if score.dtype.kind != "f":
        return f"fine scores of type {score.dtype}"
    if len(key) and int(key[:, FINE_KEY - 1].max()) >= 8:
        return "a pair key with an unknown orientation number"
    finite = score[np.isfinite(score)]
    if len(finite) != int((~np.isnan(score)).sum()) or (finite.size and np.abs(finite).max() > 1.001):
        return "a fine score outside [-1, 1]"
    return None


#: Snapshot kind (the key up to its first ``:``) -> its check; a kind not listed is not checked here.
CHECKS: dict[str, Callable[[Arrays], str | None]] = {
    "signatures": signatures, "matches": matches, "aligned-model": aligned_model,
    "aligned-pairs": aligned_pairs, "aligned-refined": aligned_refined, "aligned-fine": aligned_fine,
}


def problem(key: str, arrays: Arrays) -> str | None:
    """What is inconsistent in the snapshot ``arrays`` saved under ``key``; None when it holds together."""
    check = CHECKS.get(key.split(":", 1)[0])
    if check is None:
        return None
    try:
        return check(arrays)
    except (ValueError, TypeError, IndexError, AttributeError) as exc:
        return f"unexpected contents ({exc})"
