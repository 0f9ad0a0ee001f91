from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from _nd_strategies import NUMERIC
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from nd_arrow import (
    InvalidArgumentError,
    NdColumn,
    NdVariable,
    NotSupportedError,
    from_fixed_shape_tensor,
    from_variable_shape_tensor,
    read_ipc,
    to_fixed_shape_tensor,
    to_variable_shape_tensor,
    variable_shape_tensor_storage,
    write_ipc,
)
from nd_arrow._compat import VARIABLE_SHAPE_TENSOR_IN_CPP


@given(
    st.sampled_from([d for d in NUMERIC if d != "bool"]),
    hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3),
    st.lists(st.booleans(), min_size=1, max_size=5).filter(any),
    st.data(),
)
@settings(max_examples=40, deadline=None)
def test_fixed_shape_round_trip(
    dtype: str, shape: tuple, present: list, data: st.DataObject
) -> None:
    dims = [f"d{i}" for i in range(len(shape))]
    rows = [
        NdVariable(data.draw(hnp.arrays(np.dtype(dtype), shape)), dims) if p else None
        for p in present
    ]
    col = NdColumn.from_arrays(rows)
    tensor = to_fixed_shape_tensor(col)
    assert tensor.type.extension_name == "arrow.fixed_shape_tensor"
    assert list(tensor.type.shape) == list(shape)
    assert list(tensor.type.dim_names) == dims
    assert tensor.storage.is_null().to_pylist() == [not p for p in present]
    assert from_fixed_shape_tensor(tensor).to_pylist() == rows


def test_fixed_shape_values_match_pyarrow() -> None:
    arrays = [np.arange(6, dtype=np.int32).reshape(2, 3) + i for i in range(3)]
    tensor = to_fixed_shape_tensor(NdColumn.from_arrays(arrays, dims=["y", "x"]))
    np.testing.assert_array_equal(tensor.to_numpy_ndarray(), np.stack(arrays))


def test_fixed_shape_import_without_names_and_with_permutation() -> None:
    t = pa.fixed_shape_tensor(pa.float32(), [2, 2], permutation=[1, 0])
    storage = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(8, dtype=np.float32)), 4)
    col = from_fixed_shape_tensor(pa.ExtensionArray.from_storage(t, storage))
    assert col[1] == NdVariable(np.arange(4, 8, dtype=np.float32).reshape(2, 2), ["dim_0", "dim_1"])


def test_fixed_shape_refusals() -> None:
    with pytest.raises(NotSupportedError, match="same sizes in all rows; row 1"):
        to_fixed_shape_tensor(NdColumn.from_arrays([np.zeros((1, 2)), np.zeros((2, 2))]))
    with pytest.raises(NotSupportedError, match="same dimension names"):
        to_fixed_shape_tensor(
            NdColumn.from_arrays([NdVariable(np.zeros(2), ["a"]), NdVariable(np.zeros(2), ["b"])])
        )
    with pytest.raises(NotSupportedError, match="no attributes"):
        to_fixed_shape_tensor(NdColumn.from_arrays([NdVariable(np.zeros(2), ["a"], {"u": "m"})]))
    masked = NdVariable(np.zeros(2), ["a"], mask=np.array([True, False]))
    with pytest.raises(NotSupportedError, match="fill them first"):
        to_fixed_shape_tensor(NdColumn.from_arrays([masked]))
    with pytest.raises(NotSupportedError, match="no non-null row"):
        to_fixed_shape_tensor(NdColumn.from_arrays([None], value_type=pa.float64()))
    with pytest.raises(InvalidArgumentError, match=r"expected an arrow\.fixed_shape_tensor"):
        from_fixed_shape_tensor(pa.array([1]))


def ragged_rows() -> list[NdVariable | None]:
    return [
        NdVariable(np.arange(6.0).reshape(2, 3), ["a", "b"]),
        None,
        NdVariable(np.ones((1, 3)), ["a", "b"]),
        NdVariable(np.zeros((0, 2)), ["a", "b"]),
    ]


def test_variable_shape_storage_any_pyarrow() -> None:
    rows = ragged_rows()
    field, storage = variable_shape_tensor_storage(NdColumn.from_arrays(rows))
    assert field.metadata[b"ARROW:extension:name"] == b"arrow.variable_shape_tensor"
    assert field.metadata[b"ARROW:extension:metadata"] == b'{"dim_names":["a","b"]}'
    assert storage.type.field("shape").type == pa.list_(pa.int32(), 2)
    assert from_variable_shape_tensor(storage, field).to_pylist() == rows
    # A plain table with the tagged field survives IPC; readers that know the type restore it.
    table = pa.Table.from_arrays([storage], schema=pa.schema([field.with_name("t")]))
    back = read_ipc(_ipc(table)).column("t")
    got = back.chunk(0)
    assert from_variable_shape_tensor(got, field).to_pylist() == rows


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    write_ipc(table, sink)
    return bytes(sink.getvalue().to_pybytes())


@pytest.mark.skipif(not VARIABLE_SHAPE_TENSOR_IN_CPP, reason="needs pyarrow >= 24")
def test_variable_shape_extension_on_new_pyarrow() -> None:
    rows = ragged_rows()
    arr = to_variable_shape_tensor(NdColumn.from_arrays(rows))
    assert arr.type.extension_name == "arrow.variable_shape_tensor"
    assert from_variable_shape_tensor(arr).to_pylist() == rows
    assert from_variable_shape_tensor(pa.chunked_array([arr])).to_pylist() == rows


@pytest.mark.skipif(VARIABLE_SHAPE_TENSOR_IN_CPP, reason="pyarrow >= 24 represents the type")
def test_variable_shape_extension_refused_on_old_pyarrow() -> None:
    with pytest.raises(NotSupportedError, match="use variable_shape_tensor_storage"):
        to_variable_shape_tensor(NdColumn.from_arrays(ragged_rows()))


def test_variable_shape_reads_permutations_spelling_and_checks_rows() -> None:
    field, storage = variable_shape_tensor_storage(NdColumn.from_arrays(ragged_rows()))
    meta = dict(field.metadata)
    meta[b"ARROW:extension:metadata"] = b'{"dim_names":["a","b"],"permutations":[1,0]}'
    assert from_variable_shape_tensor(storage, field.with_metadata(meta)).to_pylist() == (
        ragged_rows()
    )
    with pytest.raises(NotSupportedError, match="one rank for all rows"):
        variable_shape_tensor_storage(NdColumn.from_arrays([np.zeros(2), np.zeros((1, 1))]))


def _lists(col: NdColumn) -> list:
    return [None if r is None else r.tolist() for r in col.to_numpy_list()]


def test_sliced_tensors_with_null_rows_read_only_their_rows() -> None:
    """Values under null rows are left out, and a slice's offset is honoured (both types)."""
    rows = [np.full((2, 2), float(i)) if i % 2 else None for i in range(6)]
    tensor = to_fixed_shape_tensor(NdColumn.from_arrays(rows, dims=["y", "x"]))
    want = [None if r is None else r.tolist() for r in rows[1:5]]
    assert _lists(from_fixed_shape_tensor(tensor.slice(1, 4))) == want
    data = pa.array([[0.0, 1, 2, 3], [9.0, 9, 9, 9], [4.0, 5, 6, 7]], pa.list_(pa.float64()))
    shape = pa.array([[2, 2]] * 3, pa.list_(pa.int32(), 2))
    storage = pa.StructArray.from_arrays(
        [data, shape], ["data", "shape"], mask=pa.array([False, True, False])
    )
    field = pa.field(
        "t", storage.type, metadata={b"ARROW:extension:name": b"arrow.variable_shape_tensor"}
    )
    got = from_variable_shape_tensor(storage.slice(1), field)
    assert _lists(got) == [None, [[4.0, 5.0], [6.0, 7.0]]]
