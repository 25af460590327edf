"""The last full check's findings, kept in the store, for `leakcheck report --html` to reuse.

A full check writes its report (before the baseline is applied) into the store's
``meta`` table under a key of what it was computed from: this version, the
policy file's bytes, and every file's path, split, group, size and modification
time with the inventory's issues.  The same files under the same policy give the
same key, and the report page then costs a walk of the tree and the rendering,
not a second check.  Anything else (a file touched, a policy edited, another
version, a store that holds no report or a damaged one) runs the check again.

The store is trusted for this as for the signatures it holds (docs/security.md).
"""

from __future__ import annotations

import hashlib
import json

from ..errors import StoreError
from ..files import jsontext
from ..report.model import Report, report_dict, report_from_dict, unicode_only
from ..store.db import Store
from ..version import __version__
from ..dataset.inventory import Inventory

_KEY = "last_report_key"
_REPORT = "last_report"


def state_key(inv: Inventory) -> str:
    """What a full check's findings depend on, other than the pixels a file's size and time stand for."""
    h = hashlib.sha256(f"leakcheck {__version__}\n".encode())
    try:
        h.update(inv.policy.path.read_bytes())
    except OSError:
        h.update(b"\0policy unreadable\0" + str(inv.policy.path).encode("utf-8", "surrogateescape"))
    for r in inv.records:
        h.update(repr((r.path, r.split, r.group, r.size, r.mtime_ns)).encode("utf-8", "surrogateescape"))
    for i in inv.issues:
        h.update(repr((i.kind, i.path, i.splits, i.detail)).encode("utf-8", "surrogateescape"))
    # A relabelled row (a table's label column) changes which copies are label conflicts.
    h.update(repr(sorted(inv.labels.items())).encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def save(store: Store, key: str, report: Report) -> None:
    """Keep ``report`` as the findings of the files and policy ``key`` names."""
    store.put_meta({_KEY: key, _REPORT: json.dumps(unicode_only(report_dict(report)), separators=(",", ":"))})


def load(store: Store, key: str) -> Report | None:
    """The report saved for ``key``; None when there is none, or it is for other files or unreadable."""
    try:
        if store.get_meta(_KEY) != key:
            return None
        text = store.get_meta(_REPORT)
        return None if text is None else report_from_dict(jsontext.loads(text))
    except (StoreError, ValueError, KeyError, TypeError, AttributeError):
        return None  # the check runs again, and the store's damage is met (and recovered) there
