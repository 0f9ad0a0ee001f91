from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from _nd_strategies import DTYPES, columns, nd_arrays
from hypothesis import given, settings
from hypothesis import strategies as st

from nd_arrow import (
    InvalidArgumentError,
    InvalidDimensionsError,
    NdVariable,
    NdType,
    NdColumn,
    SchemaMismatchError,
)


def storage_bytes(arr: pa.Array) -> bytes:
    """IPC bytes of an array: equality that treats NaN like any other bit pattern."""
    batch = pa.record_batch({"x": arr})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as w:
        w.write_batch(batch)
    return bytes(sink.getvalue().to_pybytes())


def ipc_roundtrip(arr: pa.Array) -> pa.ChunkedArray:
    table = pa.table({"x": arr})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return pa.ipc.open_stream(sink.getvalue()).read_all().column("x")


@given(columns())
@settings(max_examples=150, deadline=None)
def test_roundtrip_rows(case: tuple[str, list[NdVariable | None]]) -> None:
    _, rows = case
    col = NdColumn.from_arrays(rows)
    assert len(col) == len(rows)
    assert col.to_pylist() == rows
    assert [col[i] for i in range(len(rows))] == rows
    back = NdColumn.from_arrow(ipc_roundtrip(col.to_arrow()))
    assert back.to_pylist() == rows
    assert storage_bytes(back.storage) == storage_bytes(col.storage)
    for got, row in zip(col.to_numpy_list(), rows, strict=True):
        if row is None:
            assert got is None
            continue
        want = row.to_numpy()
        assert isinstance(got, np.ma.MaskedArray) == isinstance(want, np.ma.MaskedArray)
        assert NdVariable(got, row.dims, row.attrs) == row


@given(st.sampled_from(DTYPES), st.data())
@settings(max_examples=60, deadline=None)
def test_plain_numpy_fast_path_matches_general_path(dtype: str, data: st.DataObject) -> None:
    shape_tail = data.draw(st.lists(st.integers(0, 3), max_size=3))
    arrays = []
    for _ in range(data.draw(st.integers(1, 5))):
        row = data.draw(nd_arrays(dtype))
        lead = data.draw(st.integers(0, 3))
        filler = np.full(1, "" if row.dtype.kind == "O" else 0).astype(row.dtype)
        arrays.append(np.resize(row.values if row.values.size else filler, (lead, *shape_tail)))
        if data.draw(st.booleans()):
            arrays.append(None)
    dims = [f"d{i}" for i in range(1 + len(shape_tail))]
    fast = NdColumn.from_arrays(arrays, dims=dims)
    general = NdColumn.from_arrays([None if a is None else NdVariable(a, dims) for a in arrays])
    assert storage_bytes(fast.storage) == storage_bytes(general.storage)
    assert fast.to_pylist() == general.to_pylist()


def test_zero_copy_views_share_the_buffer() -> None:
    arrays = [np.arange(2 * n, dtype=np.float32).reshape(n, 2) for n in (3, 0, 5)]
    col = NdColumn.from_arrow(NdColumn.from_arrays(arrays, dims=["point", "xy"]).to_arrow())
    views = col.to_numpy_list()
    base = col.storage.field(0).values.buffers()[1]
    for v in views:
        assert v is not None
        assert v.base is not None
        ptr = v.__array_interface__["data"][0]
        assert base.address <= ptr <= base.address + base.size
    for v, a in zip(views, arrays, strict=True):
        np.testing.assert_array_equal(v, a)


def test_same_shape_rows_use_one_reshape() -> None:
    arrays = [np.full((4, 4), i, np.float64) for i in range(5)]
    views = NdColumn.from_arrays(arrays, dims=["y", "x"]).to_numpy_list()
    assert all(v is not None and v.shape == (4, 4) for v in views)
    assert [float(v[0, 0]) for v in views if v is not None] == [0, 1, 2, 3, 4]


@given(
    st.sampled_from(["float32", "int64", "uint8", "bool"]),
    st.lists(st.integers(0, 4), min_size=1, max_size=6),
    st.lists(st.integers(0, 3), max_size=2),
    st.booleans(),
    st.integers(0, 2),
)
@settings(max_examples=80, deadline=None)
def test_rows_of_one_inner_shape_decode_to_views(
    dtype: str, leads: list[int], inner: list[int], one_shape: bool, start: int
) -> None:
    """Rows of one rank and trailing sizes (one block, a slice per row) and rows of one shape
    (one reshape) come back equal, as views of the value buffer, also from a sliced array."""
    if one_shape:
        leads = [leads[0]] * len(leads)
    rng = np.random.default_rng(len(leads))
    arrays = [(rng.random((lead, *inner)) * 100).astype(dtype) for lead in leads]
    arr = NdColumn.from_arrays(arrays).to_arrow().slice(min(start, len(arrays)))
    got = NdColumn.from_arrow(arr).to_numpy_list()
    assert len(got) == len(arrays[start:])
    for g, a in zip(got, arrays[start:], strict=True):
        assert g is not None
        assert g.shape == a.shape
        assert g.dtype == a.dtype
        np.testing.assert_array_equal(g, a)
        assert not g.flags.owndata


def test_string_rows_of_other_lengths() -> None:
    """numpy string rows of other lengths (<U3, <U6) are one value type, on the fast path too."""
    arrays = [np.array(["a", "bcd"]), np.array(["efghij"]), None]
    fast = NdColumn.from_arrays(arrays, dims=["x"])
    general = NdColumn.from_arrays([None if a is None else NdVariable(a, ["x"]) for a in arrays])
    assert storage_bytes(fast.storage) == storage_bytes(general.storage)
    assert fast.value_type == pa.string()
    assert [None if v is None else v.tolist() for v in fast.to_numpy_list()] == [
        ["a", "bcd"],
        ["efghij"],
        None,
    ]


def test_type_and_extension_array() -> None:
    col = NdColumn.from_arrays([np.zeros(2, np.int16)], dims=["x"])
    arr = col.to_arrow()
    assert isinstance(arr.type, NdType)
    assert arr.type.value_type == pa.int16()
    assert arr.type.attr_fields == ()
    assert arr.to_numpy_list()[0].dtype == np.int16


def test_slicing_and_negative_index() -> None:
    arrays = [np.full((i + 1,), i) for i in range(5)]
    col = NdColumn.from_arrays(arrays, dims=["x"])
    sub = col[1:4]
    assert len(sub) == 3
    assert sub[0] == NdVariable(arrays[1], ["x"])
    assert col[-1] == NdVariable(arrays[4], ["x"])
    assert col[::2].to_pylist() == [NdVariable(arrays[i], ["x"]) for i in (0, 2, 4)]
    sliced = NdColumn.from_arrow(col.to_arrow().slice(2, 2))
    assert sliced.to_pylist() == [NdVariable(arrays[i], ["x"]) for i in (2, 3)]
    with pytest.raises(IndexError, match="row 5 is out of range"):
        col[5]


def test_chunked_input_is_concatenated() -> None:
    a = NdColumn.from_arrays([np.ones(1)], dims=["x"]).to_arrow()
    b = NdColumn.from_arrays([np.zeros(2)], dims=["x"]).to_arrow()
    col = NdColumn.from_arrow(pa.chunked_array([a, b]))
    assert [r.shape for r in col if r is not None] == [(1,), (2,)]


def test_value_type_cast_and_empty_column() -> None:
    col = NdColumn.from_arrays([np.arange(3)], dims=["x"], value_type=pa.float32())
    assert col.value_type == pa.float32()
    empty = NdColumn.from_arrays([None, None], value_type=pa.int8())
    assert empty.to_pylist() == [None, None]
    with pytest.raises(InvalidArgumentError, match="pass value_type="):
        NdColumn.from_arrays([None])


def test_mixed_dtypes_are_refused() -> None:
    with pytest.raises(SchemaMismatchError, match="row 1 has dtype int32 but earlier rows"):
        NdColumn.from_arrays([np.zeros(1), np.zeros(1, np.int32)], dims=["x"])
    with pytest.raises(
        SchemaMismatchError, match=r"row 1 has dtype \|S2 but earlier rows have <U3"
    ):
        NdColumn.from_arrays([np.array(["abc"]), np.array([b"de"])], dims=["x"])


def test_dims_checked_on_the_way_in() -> None:
    with pytest.raises(InvalidDimensionsError, match="2 dimension names"):
        NdColumn.from_arrays([np.zeros(3)], dims=["a", "b"])
    with pytest.raises(InvalidDimensionsError, match="appears twice"):
        NdColumn.from_arrays([np.zeros((1, 1))], dims=["a", "a"])
    with pytest.raises(InvalidDimensionsError, match=r"row 0: .*names must not be empty"):
        NdColumn.from_arrays([np.zeros(1), np.zeros((1, 2))], dims=[""])


def test_mixed_ranks_with_default_names() -> None:
    col = NdColumn.from_arrays([np.zeros(2), np.zeros((1, 2)), np.array(3.0)])
    assert [r.dims for r in col if r is not None] == [("dim_0",), ("dim_0", "dim_1"), ()]


def test_scalar_as_py() -> None:
    row = NdVariable(np.arange(4).reshape(2, 2), ["a", "b"], {"k": 1})
    arr = NdColumn.from_arrays([row, None]).to_arrow()
    assert arr[0].as_py() == row
    assert arr[1].as_py() is None
    assert arr.to_pylist() == [row, None]
