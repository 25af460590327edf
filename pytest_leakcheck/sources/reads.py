"""Every file a split source opens while it reads, recorded: the files a pull request can
change to move an image to another split.

A source reads more than the files its policy section names: a YOLO
``data.yaml`` names ``.txt`` lists, a COCO file may sit beside others, a
table names image folders.  Moving one line from ``train.txt`` to
``val.txt`` moves an image to another split, so ``--changed-since`` and the
pre-commit hook must treat each such file as an input of the policy, like
the policy itself.  Rather than trust every source to list what it read,
the registry (``sources.read``) runs each source under :func:`recording`,
which takes every ``open`` the interpreter audits in this thread (``open``,
``io.open``, ``os.open``, ``Path.read_text``, ``tarfile``, ``csv`` over a
file): a source cannot forget a file.  Files pyarrow opens in C++ are the
shards themselves, which the spec names already.

The audit hook is installed once per process and costs one context-variable
read per audited ``open`` elsewhere; it records nothing outside
:func:`recording`, and only files under the folders given (code that is
imported meanwhile is not an input).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

_seen: ContextVar[list[str] | None] = ContextVar("leakcheck_source_reads", default=None)
_installed = False


def _hook(event: str, args: tuple) -> None:
    if event != "open":
        return
    seen = _seen.get()
    if seen is None:
        return
    path = args[0] if args else None
    if isinstance(path, (str, bytes, os.PathLike)):
        seen.append(os.fsdecode(path))


@contextmanager
def recording(folders: tuple[Path, ...]) -> Iterator[set[Path]]:
    """Yield a set that, when the block ends, holds every regular file opened in it under ``folders``
    (resolved); code imported meanwhile (``.py``, compiled modules) is left out."""
    global _installed
    if not _installed:
        sys.addaudithook(_hook)
        _installed = True
    out: set[Path] = set()
    seen: list[str] = []
    token = _seen.set(seen)
    try:
        yield out
    finally:
        _seen.reset(token)
        bases = tuple(dict.fromkeys(os.path.realpath(f) for f in folders))
        for name in dict.fromkeys(seen):
            real = os.path.realpath(name)
            if real.endswith((".py", ".pyc", ".so", ".pyd", ".pth")) or not os.path.isfile(real):
                continue
            if any(real == b or real.startswith(b.rstrip(os.sep) + os.sep) for b in bases):
                out.add(Path(real))
