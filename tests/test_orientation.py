"""orientation.py is the one home of the eight orientations; every table derives from it."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from pytest_leakcheck import orientation as O
from pytest_leakcheck.detectors.aligned import alignment
from pytest_leakcheck import validate as config
from pytest_leakcheck.search import kernels
from pytest_leakcheck.signals import decode, families

# Not square and not symmetric: every orientation turns it differently.
PROBE = np.arange(12 * 7).reshape(12, 7)


@pytest.mark.parametrize("name", O.ORIENTATIONS)
def test_each_turn_and_its_inverse_compose_to_identity(name: str) -> None:
    back = O.INVERSE[name]
    assert O.COMPOSE[(name, back)] == "identity"
    assert O.COMPOSE[(back, name)] == "identity"
    assert np.array_equal(O.turn(O.turn(PROBE, name), back), PROBE)
    assert np.array_equal(O.turn(O.turn(PROBE, back), name), PROBE)


def test_the_eight_are_distinct_and_closed_under_composition() -> None:
    turned = {O.turn(PROBE, n).tobytes() + bytes(O.turn(PROBE, n).shape) for n in O.ORIENTATIONS}
    assert len(turned) == 8
    for (a, b), c in O.COMPOSE.items():
        assert np.array_equal(O.turn(O.turn(PROBE, a), b), O.turn(PROBE, c))


@pytest.mark.parametrize("name", O.ORIENTATIONS)
def test_pillow_turns_as_the_array_does(name: str) -> None:
    img = Image.fromarray(PROBE.astype(np.uint8))
    assert np.array_equal(np.asarray(O.transpose_image(img, name)), O.turn(PROBE, name))
    assert decode.TRANSPOSE[name] == O.pil_method(name)


def test_rot90_turns_counter_clockwise_as_pillow_names_it() -> None:
    grid = np.array([[1, 2], [3, 4]])
    assert O.turn(grid, "rot90").tolist() == [[2, 4], [1, 3]]


def test_every_table_is_the_one_definition() -> None:
    assert config.ORIENTATIONS == O.ORIENTATIONS and config.AUGMENTATIONS == O.ORIENTATIONS[1:]
    stack = np.stack([PROBE[:7, :7], PROBE[5:, :7]])
    for name in O.ORIENTATIONS:
        fn, back = alignment.TURNS[name]
        assert back == O.INVERSE[name]
        assert np.array_equal(fn(stack), O.turn(stack, name))
        flat = stack.reshape(2, -1)
        assert np.array_equal(kernels.orient_thumbs(flat, name).reshape(2, 7, 7), O.turn(stack, name))


def test_search_orientations_add_each_inverse() -> None:
    assert families.search_orientations(["rot90"]) == ("rot90", "rot270")
    assert families.search_orientations(["hflip", "identity"]) == ("identity", "hflip")
    assert families.search_orientations(O.ORIENTATIONS) == O.ORIENTATIONS
