"""What the ``aligned`` detector keeps in the store between checks, and when it is still valid.

Two snapshots, each replaced whole when it changes:

- the **model** (``aligned-model:<key>``): the retrieval index (a PCA of the
  gradient descriptors) and the calibrated levels, with when they were
  estimated and on which rows;
- the **pairs** (``aligned-pairs:<key>``): every pair the last full search
  verified at or above the lowest level any calibration can give
  (``alignment.MIN_THRESHOLD``), between rows named by path, split and content.

Rows are named by a 64-bit id of (path, split, content digest): a row whose
id is in the stored pairs' rows is unchanged, and a pair between two
unchanged rows scores exactly as it did (same descriptors, same index).
Levels are applied when matches are made, so pairs survive a re-estimated
calibration.

When the model is re-estimated: its levels when the rows changed since it
was estimated (added, removed, changed or moved to another split) exceed
:data:`LEVELS_AFTER` of the rows it was estimated on; its index (and with it
every pair) when they exceed :data:`INDEX_AFTER`.  Below those shares the
levels barely move (``benchmarks/growth.py --drift`` measures it), and a
check costs what changed.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...orientation import ORIENTATIONS
from ...search.multiview import Index
from ...store import keys
from ...store.consistent import FINE_KEY
from ...store.db import Store
from . import alignment
from .pairs import Pairs

#: Share of rows changed since the levels were estimated above which they are estimated again.
LEVELS_AFTER = 0.05
#: Share above which the index is fitted again and everything searched again, as on a first check.
INDEX_AFTER = 0.5
MODEL, PAIRS = "aligned-model", "aligned-pairs"
#: The version of the stored model, pairs and refined scores (:func:`store_key`, ``levels.py``).
STORE_VERSION = "aligned-v9"


def store_key(settings: Any, mirror: bool, targets: Any, family: keys.Keyed) -> str:
    """The stored model and pairs: the detector's settings, the split pairs, its descriptors."""
    return keys.detector_key("", STORE_VERSION, (repr(settings), mirror, targets, family.name, family.params))


def row_ids(paths: Sequence[str], splits: Sequence[str], digests: Sequence[bytes]) -> np.ndarray:
    """(N,) uint64: one id per row from its path, split and content; equal ids, unchanged rows."""
    out = np.empty(len(paths), np.uint64)
    for n, (path, split, digest) in enumerate(zip(paths, splits, digests)):
        h = hashlib.blake2b(digest, digest_size=8)
        h.update(f"\0{split}\0{path}".encode("utf-8", "surrogateescape"))
        out[n] = int.from_bytes(h.digest(), "little")
    return out


@dataclass(frozen=True)
class Model:
    """The index and the levels, and the rows they were estimated on."""

    index: Index
    calibration: dict[str, Any]
    #: Sorted ids of the rows the levels were estimated on.
    ids: np.ndarray
    #: ``levels_at``/``index_at`` (UTC, ISO 8601) and ``levels_on``/``index_on`` (row counts).
    estimated: dict[str, Any]

    def changed(self, ids: np.ndarray) -> int:
        """Rows added, removed or changed since the levels were estimated."""
        return int(len(np.setxor1d(self.ids, ids, assume_unique=True)))


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _text(value: dict[str, Any]) -> np.ndarray:
    return np.frombuffer(json.dumps(value, sort_keys=True).encode(), np.uint8)


def load_model(store: Store, key: str) -> Model | None:
    snap = store.load_snapshot(f"{MODEL}:{key}")
    if snap is None:
        return None
    info = json.loads(snap["info"].tobytes())
    cent = snap["centroids"] if len(snap["centroids"]) else None
    return Model(Index(snap["mean"], snap["basis"], cent), info["calibration"], snap["ids"], info["estimated"])


def save_model(store: Store, key: str, model: Model) -> None:
    store.save_snapshot(f"{MODEL}:{key}", {
        "mean": model.index.mean, "basis": model.index.basis, "ids": model.ids,
        "centroids": np.zeros((0, 0), np.float32) if model.index.centroids is None else model.index.centroids,
        "info": _text({"calibration": model.calibration, "estimated": model.estimated}),
    }, kind=MODEL)


def load_pairs(store: Store, key: str) -> tuple[np.ndarray, Pairs] | None:
    """The stored pairs' row ids (in their rows' order) and pairs, or None."""
    snap = store.load_snapshot(f"{PAIRS}:{key}")
    if snap is None:
        return None
    return snap["ids"], Pairs(snap["i"], snap["j"], snap["score"], snap["flipped"])


def save_pairs(store: Store, key: str, ids: np.ndarray, pairs: Pairs) -> None:
    keep = pairs.score >= alignment.MIN_THRESHOLD  # no calibration goes below it
    store.save_snapshot(f"{PAIRS}:{key}", {
        "ids": ids, "i": pairs.i[keep].astype(np.int64), "j": pairs.j[keep].astype(np.int64),
        "score": pairs.score[keep].astype(np.float64), "flipped": pairs.flipped[keep].astype(bool),
    }, kind=PAIRS)


def carry(old_ids: np.ndarray, old: Pairs, ids: np.ndarray) -> tuple[Pairs, np.ndarray, bool]:
    """The stored pairs between rows still unchanged, in today's rows; which rows are new or changed;
    and whether any stored row is gone."""
    order = np.argsort(old_ids, kind="stable")
    pos = np.minimum(np.searchsorted(old_ids[order], ids), max(len(old_ids) - 1, 0))
    hit = (old_ids[order][pos] == ids) if len(old_ids) else np.zeros(len(ids), bool)
    new_of_old = np.full(len(old_ids), -1, np.int64)
    new_of_old[order[pos[hit]]] = np.flatnonzero(hit)
    mi, mj = new_of_old[old.i], new_of_old[old.j]
    keep = (mi >= 0) & (mj >= 0)
    lo, hi = np.minimum(mi, mj)[keep], np.maximum(mi, mj)[keep]
    kept = Pairs(lo, hi, old.score[keep], old.flipped[keep])
    return kept, ~hit, bool((new_of_old < 0).any())


#: Snapshot kind of the scores ``refine`` gave hash and thumbnail matches.  A score depends
#: on the two contents and the orientation alone (``pairs.pair_scores``), so a check
#: after a change scores only the matches it has not seen, not every match again
#: (``benchmarks/pr_speed.py`` measures a pull request at scale).
REFINED = "aligned-refined"


def pair_keys(digests: Sequence[bytes], i: np.ndarray, j: np.ndarray, orientations: Sequence[str]) -> list[bytes]:
    """One 16-byte key per pair from its contents and orientation."""
    return [hashlib.blake2b(digests[a] + b"\0" + digests[b] + b"\0" + o.encode(), digest_size=16).digest()
            for a, b, o in zip(i.tolist(), j.tolist(), orientations)]


def known_scores(store: Store, key: str) -> dict[bytes, float]:
    """The scores remembered under ``key`` (the descriptors' fingerprint), by pair key."""
    snap = store.load_snapshot(f"{REFINED}:{key}")
    if snap is None:
        return {}
    return dict(zip((k.tobytes() for k in snap["key"]), snap["score"].tolist()))


def save_scores(store: Store, key: str, pair_keys: list[bytes], scores: np.ndarray) -> None:
    """Remember today's matches' scores (only today's: the snapshot stays the size of the matches)."""
    store.save_snapshot(f"{REFINED}:{key}", {
        "key": np.frombuffer(b"".join(pair_keys), np.uint8).reshape(-1, 16),
        "score": np.asarray(scores, np.float64),
    }, kind=REFINED)


#: Snapshot kind of the fine (96 px) scores of judged pairs (``hires_levels.scores``).  A fine
#: score depends on the two contents, the mirror and the turn alone (the 32 px squares and the
#: fine squares are the contents' signals), so a check judges only pairs it has not judged
#: before: on 5,000 CT slices, whose look-alike slices make about 400 error-level pairs, judging
#: them again took a third of a check after adding 100 files (``benchmarks/dicom_studies.py``).
FINE = "aligned-fine"


def fine_store_key(desc: keys.Keyed, fine: keys.Keyed, arithmetic: tuple[Any, ...]) -> str:
    """The stored fine scores: both families' fingerprints and the constants of the fine arithmetic."""
    return keys.detector_key(FINE, STORE_VERSION, (desc.name, desc.params, fine.name, fine.params, arithmetic))


def fine_keys(digests: Sequence[bytes], i: np.ndarray, j: np.ndarray, flipped: np.ndarray,
              turned: Sequence[str | None]) -> list[bytes]:
    """One key per pair: an unturned pair is scored both ways, so either order is the same key;
    a turned one (row ``i`` turned meets row ``j``) keeps its order."""
    out = []
    for a, b, f, how in zip(i.tolist(), j.tolist(), flipped.tolist(), turned):
        da, db = digests[a].ljust(32, b"\0"), digests[b].ljust(32, b"\0")
        how = how or "identity"
        if how == "identity" and db < da:
            da, db = db, da
        out.append(da + db + bytes((int(f), ORIENTATIONS.index(how))))
    return out


def known_fine(store: Store, key: str) -> dict[bytes, float]:
    """The fine scores stored under ``key``, by pair key (NaN: judged, no fine evidence)."""
    snap = store.load_snapshot(key)
    if snap is None:
        return {}
    return dict(zip((k.tobytes() for k in snap["key"]), snap["score"].tolist()))


def save_fine(store: Store, key: str, scores: dict[bytes, float], digests: Sequence[bytes]) -> None:
    """Store the fine scores of pairs whose two contents are both still in the data (the others
    can never be asked again until such a file comes back): the snapshot stays the size of the
    pairs judged among today's files."""
    present = {d.ljust(32, b"\0") for d in digests}
    kept = [(k, v) for k, v in scores.items() if k[:32] in present and k[32:64] in present]
    store.save_snapshot(key, {
        "key": np.frombuffer(b"".join(k for k, _ in kept), np.uint8).reshape(-1, FINE_KEY),
        "score": np.array([v for _, v in kept], np.float32),
    }, kind=FINE)
