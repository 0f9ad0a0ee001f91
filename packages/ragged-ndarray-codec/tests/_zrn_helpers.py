"""Shared test helpers: random patterns, cells and chunks of every element dtype."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import strategies as st

from zarr_ndarray_dtype import ELEMENT_DTYPES, NDArrayDType


def random_cell(
    rng: np.random.Generator, dtype: NDArrayDType, shape: tuple[int, ...]
) -> np.ndarray:
    """A cell of ``shape`` with arbitrary bit patterns (0/1 for bool)."""
    item = dtype.item_dtype
    if item.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    raw = rng.integers(0, 256, size=math.prod(shape) * item.itemsize, dtype=np.uint8)
    return raw.view(item).reshape(shape)


def random_shape(rng: np.random.Generator, dtype: NDArrayDType, high: int = 4) -> tuple[int, ...]:
    return tuple(int(rng.integers(0, high)) if d is None else d for d in dtype.shape)


def object_array(cells: list[Any], shape: tuple[int, ...] | None = None) -> np.ndarray:
    """Cells staged in an object array (never stacked by numpy)."""
    out = np.fromiter(cells, dtype=object, count=len(cells))
    return out.reshape(shape if shape is not None else (len(cells),))


@st.composite
def variable_patterns(draw: st.DrawFn, max_ndim: int = 3) -> tuple[int | None, ...]:
    """A shape pattern with at least one ``None``."""
    dims = draw(st.lists(st.one_of(st.none(), st.integers(1, 3)), min_size=1, max_size=max_ndim))
    if None not in dims:
        dims[draw(st.integers(0, len(dims) - 1))] = None
    return tuple(dims)


@st.composite
def ragged_dtypes(draw: st.DrawFn) -> NDArrayDType:
    return NDArrayDType(
        dtype=draw(st.sampled_from(ELEMENT_DTYPES)), shape=draw(variable_patterns())
    )


@st.composite
def chunks_of_cells(
    draw: st.DrawFn, max_rank: int = 2, max_extent: int = 3
) -> tuple[NDArrayDType, np.ndarray]:
    """A data type and an object array (rank 0..max_rank) of random cells of it."""
    dtype = draw(ragged_dtypes())
    shape = tuple(draw(st.lists(st.integers(0, max_extent), max_size=max_rank)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    count = int(np.prod(shape))
    cells = [random_cell(rng, dtype, random_shape(rng, dtype)) for _ in range(count)]
    return dtype, object_array(cells, shape)


def assert_cells_equal(got: np.ndarray, want: np.ndarray, dtype: NDArrayDType) -> None:
    """Same object-array shape; every cell a read-only array of the same shape and bytes."""
    assert got.shape == want.shape
    for g, w in zip(got.ravel(), np.asarray(want, dtype=object).ravel(), strict=True):
        w = dtype.coerce_cell(w)
        assert isinstance(g, np.ndarray)
        assert g.dtype == dtype.item_dtype
        assert g.shape == w.shape
        assert g.tobytes() == w.tobytes()
