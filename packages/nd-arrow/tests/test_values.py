"""Flat values numpy -> Arrow: the buffer-built arrays equal what ``pa.array`` builds."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from _nd_no_pandas import RECORD_PANDAS_IMPORTS, run_script
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from nd_arrow._storage import numpy_to_arrow, numpy_view, primitive_array

DTYPES = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "M8[s]", "M8[ms]", "M8[us]", "M8[ns]", "m8[s]", "m8[ns]",
]  # fmt: skip


def _draw_flat(data: st.DataObject, dtype: str) -> tuple[int, np.ndarray]:
    """A drawn length and flat array of ``dtype`` (datetimes and timedeltas from int64)."""
    n = data.draw(st.integers(0, 40))
    raw = data.draw(hnp.arrays(np.dtype(dtype) if dtype[0] not in "Mm" else np.int64, n))
    return n, raw if dtype[0] not in "Mm" else raw.view(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
@settings(max_examples=25, deadline=None)
def test_buffers_equal_pa_array(dtype: str, data: st.DataObject) -> None:
    n, flat = _draw_flat(data, dtype)
    mask = data.draw(st.none() | hnp.arrays(np.bool_, n))
    start = data.draw(st.integers(0, n))
    flat, mask = flat[start:], None if mask is None else mask[start:]  # offset views too
    got = numpy_to_arrow(flat, mask)
    if mask is not None and dtype[0] in "Mm":
        mask = mask | np.isnat(flat)  # NaT is always null (pa.array keeps it when given a mask)
    want = pa.array(flat, mask=mask)
    got.validate(full=True)
    assert got.type == want.type
    assert plain(got) == plain(want)


def plain(arr: pa.Array) -> list[object]:
    """Values comparable with ==: times as integers, NaN as a marker."""
    if pa.types.is_temporal(arr.type):
        arr = arr.cast(pa.int64())
    return ["NaN" if x is not None and x != x else x for x in arr.to_pylist()]


def test_strided_and_cast_inputs() -> None:
    flat = np.arange(10, dtype=np.int64)[::3]  # not contiguous
    assert numpy_to_arrow(flat, None).to_pylist() == [0, 3, 6, 9]
    cast = numpy_to_arrow(flat, np.array([False, True, False, False]), pa.int32())
    assert cast.type == pa.int32() and cast.to_pylist() == [0, None, 6, 9]
    nat = np.array(["NaT", "2020-01-01"], "M8[s]")  # NaT is null with or without a mask
    for mask in (None, np.array([False, False]), np.array([False, True])):
        assert numpy_to_arrow(nat, mask).null_count == (1 if mask is None else 1 + int(mask[1]))


def test_primitive_array_bits() -> None:
    arr = primitive_array(np.array([True, False, True] * 3), pa.bool_(), np.arange(9) % 4 == 0)
    arr.validate(full=True)
    assert arr.null_count == 3
    assert arr.to_pylist() == [None, False, True, True, None, True, True, False, None]


@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
@settings(max_examples=25, deadline=None)
def test_numpy_view_equals_to_numpy(dtype: str, data: st.DataObject) -> None:
    n, flat = _draw_flat(data, dtype)
    arr = pa.array(flat, mask=np.zeros(n, np.bool_))  # NaT stays a value: no nulls
    start = data.draw(st.integers(0, n))
    arr = arr.slice(start)  # a non-zero offset
    got = numpy_view(arr)
    want = arr.to_numpy(zero_copy_only=False)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


_NO_PANDAS = (
    "import sys\n"
    + RECORD_PANDAS_IMPORTS
    + """
import numpy as np, pyarrow as pa
from nd_arrow import NdVariable, NdColumn
rows = [
    NdVariable(np.ma.masked_array([1.0, 2.0], mask=[False, True]), ["x"]),
    None,
    np.ones((2, 3)),
    np.array([True, False]),
]
for items in (rows[:3], rows[2:3] * 2, rows[3:], [rows[0]] * 2):
    arr = NdColumn.from_arrays(items).to_arrow()
    col = NdColumn.from_arrow(arr)
    col.to_numpy_list(), col.to_pylist(), col[0]
assert asked == [], asked
"""
)


def test_numeric_columns_never_import_pandas() -> None:
    """Building, checking and decoding numeric columns go through buffers, never pandas."""
    run_script(_NO_PANDAS)
