"""Tiles cut from a larger image and named by it, for ``leakcheck init``: the scene is the id.

Large images (microscopy slides, aerial scenes, whole-slide scans) are cut into
tiles named by their scene and where they sit: ``bccd00352_x0288_y0192.png``,
``scene_r3_c5.png``, ``scene_row3_col5.png``, ``scene_0288_0192.png``,
``scene_tile_12.png``, ``scene_patch_0042.png``.  Neighbouring tiles overlap or
touch, so a split by tile puts every scene in every split, and that is the leak:
the scene is accepted as an id however many scenes are in every split, where
``groupids`` would take so many ids in every split for classes.

Letters (``x``/``y``, ``r``/``c``, ``row``/``col``, ``tile``, ``patch``) say the
numbers are coordinates.  Two bare numbers do not: ``cat01_12_3.jpg`` may be
crop 3 of photo 12 of a class.  They are read as coordinates only on a grid:
many ids, tiles of one id filling most of the grid their numbers span, and the
same coordinates coming back under other ids.  A name's prefix that ends inside
coordinates (``scene00_x0000`` of ``scene00_x0000_y0000.png``, a column strip of
a scene) is never an id: it separates tiles that overlap (:func:`cut`).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from .nameids import PLAIN_TAIL


@dataclass(frozen=True)
class Form:
    """A way tiles are named after their scene."""

    readable: str
    #: What follows the id and its separator, up to the extension (RE2 and ``re`` alike).
    pattern: str
    #: Whether letters say the numbers are coordinates (else two bare numbers: a grid must show it).
    marked: bool


FORMS = (
    Form("x<number>_y<number>", r"[xX][0-9]+[_-][yY][0-9]+", True),
    Form("y<number>_x<number>", r"[yY][0-9]+[_-][xX][0-9]+", True),
    Form("r<number>_c<number>", r"[rR][0-9]+[_-][cC][0-9]+", True),
    Form("row<number>_col<number>", r"(?i:row)[0-9]+[_-](?i:col)[0-9]+", True),
    Form("tile_<number>", r"(?i:tile)[_-]?[0-9]+", True),
    Form("patch_<number>", r"(?i:patch)[_-]?[0-9]+", True),
    Form("<number>_<number>", r"[0-9]+[_-][0-9]+", False),
)
#: Share of the files a form must name to be tried (``groupids`` wants nine in ten to propose it).
MIN_SHARE = 0.5
#: Ids two bare numbers must follow to be read as scenes: a handful is more likely classes.
MIN_IDS = 8
#: Share of the grid an id's tiles span that they must fill, for most ids of two tiles or more.
FILLED = 0.5
#: Share of the files whose coordinates come back under another id (the grid restarts per scene).
RESTART = 0.5


@dataclass(frozen=True)
class Tiles:
    """One form: the rule that reads the scene before the coordinates, and what it reads."""

    form: Form
    regex: str
    ids: dict[str, str]
    #: Why the numbers are no tile coordinates (bare numbers off a grid, or few ids), or "".
    refused: str = ""

    @property
    def binding(self) -> bool:
        """Whether the names surely hold coordinates: letters say so, or the bare numbers make a grid."""
        return self.form.marked or not self.refused


def regex(form: Form, capture: bool = False) -> str:
    """The rule reading the id before ``form``; with ``capture``, the coordinates are group 2 (here only)."""
    return rf"(?:^|[/#])(?P<group>[^/#]+?)[_-]{'(' * capture}{form.pattern}{')' * capture}{PLAIN_TAIL}"


def candidates(paths: list[str]) -> list[Tiles]:
    """Each form that names at least MIN_SHARE of the files, ids with a digit only (as every name id)."""
    out = []
    for form in FORMS:
        search = re.compile(regex(form, capture=True)).search
        ids, where = {}, {}
        for p in paths:
            m = search(p)
            if m and any(c.isdigit() for c in m.group("group")):
                ids[p] = m.group("group")
                where[p] = tuple(int(n[-9:]) for n in re.findall(r"[0-9]+", m.group(2)))
        if len(ids) < MIN_SHARE * len(paths) or not ids:
            continue
        out.append(Tiles(form, regex(form), ids, "" if form.marked else _off_grid(ids, where)))
    return out


def _off_grid(ids: dict[str, str], where: dict[str, tuple[int, ...]]) -> str:
    """Why two bare numbers after the ids are no tile grid, or ""."""
    scenes = Counter(ids.values())
    if len(scenes) < MIN_IDS:
        return f"{len(scenes)} ids before two numbers: as likely classes as scenes"
    grids: dict[str, set[tuple[int, ...]]] = {}
    for p, g in ids.items():
        grids.setdefault(g, set()).add(where[p])
    filled = [len(cells) / (len({c[0] for c in cells}) * len({c[1] for c in cells}))
              for cells in grids.values() if len(cells) > 1]
    if not filled or sum(f >= FILLED for f in filled) <= len(filled) / 2:
        return "the two numbers after the ids do not fill a grid per id"
    under: dict[tuple[int, ...], set[str]] = {}
    for p, cell in where.items():
        under.setdefault(cell, set()).add(ids[p])
    again = sum(1 for cell in where.values() if len(under[cell]) > 1)
    if again < RESTART * len(where):
        return (f"the two numbers after the ids are no grid every id shares "
                f"({again} of {len(where)} files share theirs with another id)")
    return ""


def cut(ids: dict[str, str], tiled: list[Tiles]) -> str:
    """Why a name id ends inside a tile's coordinates (``scene00_x0000`` of ``scene00_x0000_y0000.png``),
    or "": it would part tiles of one scene that overlap.  One such file is enough to say so."""
    for found in tiled:
        if not found.binding:
            continue
        for p, g in ids.items():
            scene = found.ids.get(p)
            if scene is not None and g != scene and g.startswith(scene):
                return f"ends inside tile coordinates ({g} of {p.rsplit('/', 1)[-1]}: scene {scene})"
    return ""
