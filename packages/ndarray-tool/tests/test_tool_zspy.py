"""zspy.py: HyperSpy's shape siblings, and the pattern they give an upgraded ragged array."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from zarr_ndarray_tool._zspy import is_sibling, pattern_of, sibling_of
from zarr_ndarray_tool.errors import Refused


def columns(shapes: list[tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ranks, extents back to back, and item counts of cells of ``shapes``."""
    ranks = np.array([len(s) for s in shapes], np.int64)
    extents = np.array([d for s in shapes for d in s], np.int64)
    sizes = np.array([math.prod(s) for s in shapes], np.int64)
    return ranks, extents, sizes


def test_siblings_are_found_as_rosettasciios_reader_finds_them() -> None:
    assert sibling_of("data", {"data", "_ragged_shapes_data"}) == "_ragged_shapes_data"
    assert sibling_of("data", {"data", "ragged_shapes", "_ragged_shapes_data"}) == "ragged_shapes"
    assert sibling_of("offsets", {"offsets"}) is None
    assert sibling_of("_ragged_shapes_data", {"data", "_ragged_shapes_data"}) is None
    assert is_sibling("ragged_shapes") and not is_sibling("data")


@given(
    st.lists(st.integers(0, 9), max_size=12),
    st.lists(st.integers(1, 4), max_size=3),
    st.integers(1, 3),
)
def test_one_rank_and_one_trailing_shape_give_the_pattern(
    leading: list[int], trailing: list[int], nav: int
) -> None:
    shapes = [(n, *trailing) for n in leading] * nav
    pattern, why = pattern_of(*columns(shapes), (len(shapes),), "s")
    if shapes and trailing:
        assert pattern == (None, *trailing) and why.startswith("every cell is (n, ")
    else:
        assert pattern == (None,)


@pytest.mark.parametrize(
    ("shapes", "why"),
    [
        (
            [(3, 2), (4,)],
            "its cells differ in rank (cell (0, 0) is (3, 2) but cell (0, 1) is (4,))",
        ),
        ([(3, 2), (2, 3)], "differ in trailing extents (cell (0, 0) is (3, 2) but cell (0, 1)"),
        ([(), ()], "every cell is 0-d (one item)"),
        ([(0, 2), (5, 2)], "every cell is (n, 2)"),
    ],
)
def test_the_reason_names_the_cells(shapes: list[tuple[int, ...]], why: str) -> None:
    assert why in pattern_of(*columns(shapes), (1, len(shapes)), "s")[1]


def test_a_shape_that_does_not_give_its_cells_items_is_refused() -> None:
    ranks, extents, sizes = columns([(2, 2), (3, 2), (1, 2)])
    sizes[1] = 5
    with pytest.raises(
        Refused,
        match=r"s: the shape sibling says cell \(1,\) is \(3, 2\) \(6 items\), but the data holds",
    ):
        pattern_of(ranks, extents, sizes, (3,), "s")
