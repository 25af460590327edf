"""The eight orientations of an image, defined once.

An orientation is a flip of the rows, a flip of the columns, then optionally a
swap of the axes (a transpose), so all eight are the dihedral group of the
square.  Every table the package needs (the names a policy may list, the
orientation undoing each one, Pillow's transpose for each, and the index maps
on numpy arrays and on flattened square thumbnails) is derived here from that
one definition, so the tables cannot disagree.  Names follow Pillow:
``rot90`` turns counter-clockwise, as ``Image.transpose(ROTATE_90)`` does.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import numpy as np


class Turn(NamedTuple):
    """(flip rows, flip columns, then swap the two axes)."""

    flip_rows: bool
    flip_cols: bool
    swap: bool


#: Every orientation, ``identity`` first; the order is part of cached matches (an index each).
TURNS: dict[str, Turn] = {
    "identity": Turn(False, False, False),
    "hflip": Turn(False, True, False),
    "vflip": Turn(True, False, False),
    "rot90": Turn(False, True, True),
    "rot180": Turn(True, True, False),
    "rot270": Turn(True, False, True),
    "transpose": Turn(False, False, True),
    "transverse": Turn(True, True, True),
}
ORIENTATIONS: tuple[str, ...] = tuple(TURNS)
#: What a policy may list under ``augmentations`` (``identity`` is always searched).
AUGMENTATIONS: tuple[str, ...] = ORIENTATIONS[1:]


def turn(a: np.ndarray, name: str) -> np.ndarray:
    """``a`` turned by ``name``, as a view; its last two axes are the image's rows and columns
    (a stack of grey images turns image by image)."""
    t = TURNS[name]
    if t.flip_rows:
        a = a[..., ::-1, :]
    if t.flip_cols:
        a = a[..., :, ::-1]
    return a.swapaxes(-1, -2) if t.swap else a


def turn_flat(rows: np.ndarray, name: str) -> np.ndarray:
    """(N, side*side) flattened square images, each turned by ``name`` (a contiguous copy)."""
    import numpy as np

    side = round(rows.shape[1] ** 0.5)
    return np.ascontiguousarray(turn(rows.reshape(-1, side, side), name)).reshape(rows.shape)


def _turn_grid(grid: list[list[Any]], name: str) -> list[list[Any]]:
    """The same turn on a list of rows (pure Python: the tables below are derived at import without numpy)."""
    t = TURNS[name]
    if t.flip_rows:
        grid = grid[::-1]
    if t.flip_cols:
        grid = [row[::-1] for row in grid]
    return [list(col) for col in zip(*grid)] if t.swap else grid


#: A 3 x 4 probe: every orientation turns it differently (it is not square, nor symmetric).
_PROBE = [[4 * r + c for c in range(4)] for r in range(3)]


def _compose(first: str, then: str) -> str:
    out = _turn_grid(_turn_grid(_PROBE, first), then)
    return next(n for n in ORIENTATIONS if _turn_grid(_PROBE, n) == out)


#: (first, then) -> the single orientation doing both.
COMPOSE: dict[tuple[str, str], str] = {(a, b): _compose(a, b) for a in ORIENTATIONS for b in ORIENTATIONS}
#: The orientation undoing each one: "a after o is b" reads "b after INVERSE[o] is a".
INVERSE: dict[str, str] = {a: next(b for b in ORIENTATIONS if COMPOSE[(a, b)] == "identity") for a in ORIENTATIONS}


def inverse(name: str) -> str:
    return INVERSE[name]


def closed(orientations: Iterable[str]) -> tuple[str, ...]:
    """The given orientations with their inverses, in ORIENTATIONS order.

    A pair is searched in both directions (either file turned), so an
    orientation must come with its inverse for "test = rot90(train)" and the
    reverse to be the same question.
    """
    names = set(orientations)
    names |= {INVERSE[n] for n in names}
    return tuple(o for o in ORIENTATIONS if o in names)


def pil_method(name: str) -> Any:
    """Pillow's ``Image.Transpose`` member for ``name`` (None for identity), found by turning a probe.

    Derived, not listed: the probe image is turned by each of Pillow's methods
    and compared with :func:`turn`, so a naming mismatch cannot creep in.
    """
    return _pil_methods()[name]


def _pil_methods() -> dict[str, object]:
    global _PIL
    if _PIL is None:
        from PIL import Image

        img = Image.new("L", (4, 3))
        img.putdata([v for row in _PROBE for v in row])
        table: dict[str, object] = {"identity": None}
        for method in Image.Transpose:
            turned = img.transpose(method)
            got = [[turned.getpixel((c, r)) for c in range(turned.width)] for r in range(turned.height)]
            for n in AUGMENTATIONS:
                if _turn_grid(_PROBE, n) == got:
                    table[n] = method
        _PIL = table
    return _PIL


_PIL: dict[str, object] | None = None


def transpose_image(img: Any, name: str) -> Any:
    """A Pillow image turned by ``name``."""
    method = pil_method(name)
    return img if method is None else img.transpose(method)
