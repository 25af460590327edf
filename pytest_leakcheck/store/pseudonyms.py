"""The key that turns identifiers (patient ids, camera serials) into pseudonyms, kept beside the store.

Group ids read from inside files are shown, stored and exported only as
keyed pseudonyms (``signals/metadata.py``): HMAC-SHA256 under a random key
of :data:`SIZE` bytes.  The key lives in the store's folder (``pseudonym.key``,
mode 0600, ignored by git with the rest of ``.leakcheck/``; beside a store the
policy put elsewhere, in a folder of its own that git ignores), so a pseudonym
is stable for as long as the store is, and a report never holds the key.
Without the key nobody can test a guessed patient id against a report.  A
check without a store (``--no-cache``) draws a key for the process: its
pseudonyms are stable within that run only.

The workflow's owner may set the key instead (:data:`ENV`, e.g. from a CI
secret): then a key file a pull request commits beside a committed store is
never used, so nobody can compute pseudonyms of guessed ids with a key they chose.
Nor is a key file git tracks, with or without the owner's key: a commit added it.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path

from . import trust

FILE = "pseudonym.key"
#: The owner's key (any text; its SHA-256 is the key), read from the environment only, never the policy.
ENV = "LEAKCHECK_PSEUDONYM_KEY"
SIZE = 32
_process_key = secrets.token_bytes(SIZE)


#: The folder a key goes to beside a store in a folder leakcheck did not make (``cache: cache.sqlite``
#: puts the store in the dataset's root): one of its own, which git ignores, so no ``git add .`` commits it.
KEY_FOLDER = ".leakcheck-key"


def where(store_path: Path) -> Path:
    """The key file of the store at ``store_path``: beside it in a folder of leakcheck's own
    (``.leakcheck/``, ignored by git) or where one was made before; else in KEY_FOLDER beside it."""
    from ..files.atomic import GITIGNORE

    beside = store_path.parent / FILE
    try:
        ours = (store_path.parent / ".gitignore").read_text(encoding="utf-8") == GITIGNORE
    except (OSError, UnicodeDecodeError):
        ours = False
    if ours or os.path.lexists(beside):
        return beside
    return store_path.parent / KEY_FOLDER / FILE


def key(store_path: Path | None) -> bytes:
    """The pseudonym key beside the store at ``store_path`` (made on first use); the process's without one."""
    owner = os.environ.get(ENV, "")
    if owner:
        return hashlib.sha256(b"leakcheck-pseudonym:" + owner.encode("utf-8", "surrogateescape")).digest()
    if store_path is None:
        return _process_key
    path = where(Path(store_path))
    if trust.committed(path):  # the pull request's key, as a committed store is: whoever chose it can test guessed ids
        return _process_key
    try:
        data = path.read_bytes()
        if len(data) == SIZE:
            return data
    except OSError:
        pass
    # Missing, or not a key (damaged, or planted by a pull request): a fresh one. Written to a
    # temporary name and renamed, so two checks starting at once agree on one key.
    fresh = secrets.token_bytes(SIZE)
    tmp = path.with_name(f".{FILE}.{os.getpid()}.{secrets.token_hex(4)}")
    try:
        from ..files.atomic import own_folder

        own_folder(path.parent)  # KEY_FOLDER gets its .gitignore; an existing folder is left as it is
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(fresh)
        try:
            os.link(tmp, path)  # fails if another check made one first: theirs is kept
        except FileExistsError:
            if len(path.read_bytes()) != SIZE:  # the damaged or planted one read above
                os.replace(tmp, path)
    except OSError:
        return _process_key  # a read-only store folder: stable within this run
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass
    try:
        data = path.read_bytes()
    except OSError:
        return fresh
    return data if len(data) == SIZE else fresh
