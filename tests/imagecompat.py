"""The signing calls tests/signals/test_image_modes.py pins, on today's decode path and families."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import NamedTuple

from pytest_leakcheck.signals.decode import SignTask, pixel_digest, sign
from pytest_leakcheck.detectors.aligned.families import DESC_FAMILY
from pytest_leakcheck.signals.families import hash_family, thumb_family


class Spec(NamedTuple):
    kind: str
    bits: int
    thumb_size: int
    max_pixels: int
    wanted: tuple[tuple[str, str], ...]


def _families(spec: Spec) -> tuple:
    out = []
    for name, _ in spec.wanted:
        if name.startswith("hash:"):
            out.append(hash_family(spec.kind, spec.bits, name.split(":", 1)[1]))
        elif name == "thumb":
            out.append(thumb_family(spec.thumb_size))
        elif name == "desc":
            out.append(DESC_FAMILY)
    return tuple(out)


def _sign(task: tuple[str, Spec]):
    path, spec = task
    digest, ok, result = sign(SignTask(str(path), spec.max_pixels, _families(spec)))
    return digest, ok, result if ok else result.why  # the message crosses to the parent as JSON


def _pixel_digest(task: tuple[str, int]):
    path, max_pixels = task
    expected = hashlib.sha256(Path(path).read_bytes()).digest()
    result = pixel_digest((str(path), max_pixels, expected))
    assert result is not None
    return result
