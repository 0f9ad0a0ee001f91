from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nd_arrow import InvalidArgumentError, InvalidEncodingError, ShapeMismatchError
from nd_arrow._format import (
    check_variable_name,
    default_dim_names,
    infer_grid,
    merge_keys,
    offsets_of,
    parse_extension_metadata,
    range_ids,
    range_positions,
    size_products,
)


def test_metadata_version() -> None:
    assert parse_extension_metadata(b'{"version":1}') == 1
    assert parse_extension_metadata(b'{"version": 1, "x": 2}') == 1


@given(st.lists(st.lists(st.integers(0, 2**32 - 1), max_size=5), max_size=8))
def test_size_products_exact(rows: list[list[int]]) -> None:
    sizes = np.array([s for r in rows for s in r], np.int64)
    lens = np.array([len(r) for r in rows], np.int64)
    starts = np.cumsum(lens) - lens
    products, overflow = size_products(sizes, starts, starts + lens)
    for r, p, o in zip(rows, products.tolist(), overflow.tolist(), strict=True):
        exact = int(np.prod([1, *r], dtype=object))
        nonzero = int(np.prod([1, *(max(s, 1) for s in r)], dtype=object))
        assert o == (nonzero > 2**63 - 1)  # FORMAT 4/4: zero sizes are left out of the check
        if not o:
            assert p == exact


def test_size_products_overflow_does_not_depend_on_axis_order() -> None:
    big = 2**32 - 1
    rows = [[big, big, big, 0], [0, big, big, big], [big, 0], [0]]
    sizes = np.array([s for r in rows for s in r], np.int64)
    lens = np.array([len(r) for r in rows], np.int64)
    starts = np.cumsum(lens) - lens
    products, overflow = size_products(sizes, starts, starts + lens)
    assert overflow.tolist() == [True, True, False, False]
    assert products[2:].tolist() == [0, 0]


@pytest.mark.parametrize("text", [b'{"version":1.0}', b'{"version":1e0}', b'{"version":true}'])
def test_metadata_version_is_an_integer_token(text: bytes) -> None:
    with pytest.raises(InvalidEncodingError, match=r"FORMAT 2/1"):
        parse_extension_metadata(text)


def test_grid_inference() -> None:
    grid = infer_grid(
        [
            ("lat", ["lat"], [3]),
            ("t", ["time", "lat", "lon"], [2, 3, 4]),
            ("s", ["lon", "station"], [1, 5]),
        ]
    )
    assert grid == {"time": 2, "lat": 3, "lon": 4, "station": 5}
    assert infer_grid([("a", ["x"], [1]), ("b", ["x"], [4])]) == {"x": 4}
    assert infer_grid([]) == {}
    with pytest.raises(ShapeMismatchError, match="'x' has size 2 in variable 'a' but 3 in"):
        infer_grid([("a", ["x"], [2]), ("b", ["x"], [3])])


def test_names_and_keys() -> None:
    assert default_dim_names(2) == ("dim_0", "dim_1")
    assert merge_keys([["a", "b"], ["c", "a"]]) == ["a", "b", "c"]
    with pytest.raises(InvalidArgumentError, match="may not be named '__global_attrs__'"):
        check_variable_name("__global_attrs__", "batch")


# Ragged index arithmetic against the plain loops it replaces.


def test_ranges_of_an_example() -> None:
    starts, lengths = np.array([5, 0, 2]), np.array([2, 0, 3])
    assert range_ids(lengths).tolist() == [0, 0, 2, 2, 2]
    assert range_positions(starts, lengths).tolist() == [5, 6, 2, 3, 4]
    assert offsets_of(lengths).tolist() == [0, 2, 2, 5]


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 6)), max_size=20))
def test_ranges_match_the_loop(ranges: list[tuple[int, int]]) -> None:
    starts = np.array([s for s, _ in ranges], np.int64)
    lengths = np.array([n for _, n in ranges], np.int64)
    assert range_positions(starts, lengths).tolist() == [s + i for s, n in ranges for i in range(n)]
    assert range_ids(lengths).tolist() == [k for k, (_, n) in enumerate(ranges) for _ in range(n)]
    running = [0]
    for _, n in ranges:
        running.append(running[-1] + n)
    assert offsets_of(lengths).tolist() == running
    assert offsets_of(lengths, np.int32).dtype == np.int32
