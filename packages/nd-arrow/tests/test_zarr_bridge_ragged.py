"""nd_arrow.from_zarr / to_zarr on ``ragged-ndarray`` arrays: every pattern, N-d arrays.

Skipped where zarr or zarr-ragged-ndarray is missing (the nd_arrow sessions run without zarr).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

zarr = pytest.importorskip("zarr")
zrn = pytest.importorskip("zarr_ragged_ndarray")

from nd_arrow import NdColumn  # noqa: E402
from nd_arrow.errors import NotSupportedError, ShapeMismatchError  # noqa: E402
from nd_arrow.zarr_bridge import from_zarr, to_zarr  # noqa: E402
from zarr_ndarray_dtype import NDArrayDType as NDArray  # noqa: E402


def make(
    shape: tuple[int, ...],
    chunks: tuple[int, ...],
    pattern: tuple[int | None, ...],
    dtype: str = "float32",
    shards: tuple[int, ...] | None = None,
) -> Any:
    return zarr.create_array(
        {},
        shape=shape,
        chunks=chunks,
        shards=shards,
        dtype=NDArray(dtype=dtype, shape=pattern),
        serializer=zrn.RaggedNDArrayCodec(),
        compressors=None,
    )


def random_cells(
    rng: np.random.Generator, count: int, pattern: tuple[int | None, ...], dtype: str
) -> list[np.ndarray]:
    out = []
    for _ in range(count):
        shape = tuple(int(rng.integers(0, 4)) if d is None else d for d in pattern)
        if dtype == "bool":
            out.append(rng.integers(0, 2, shape).astype(bool))
        else:
            out.append((rng.standard_normal(shape) * 50).astype(dtype))
    return out


def staged(cells: list[np.ndarray], shape: tuple[int, ...]) -> np.ndarray:
    out = np.empty(len(cells), dtype=object)
    for i, c in enumerate(cells):
        out[i] = c
    return out.reshape(shape)


def stored(array: Any) -> dict[str, bytes]:
    store = array.store_path.store._store_dict
    return {k: v.to_bytes() for k, v in store.items() if k != "zarr.json"}


@pytest.mark.parametrize("pattern", [(None, None), (2, None), (None, 3, None), (None,), (None, 2)])
def test_from_zarr_rows_have_the_cell_shapes(pattern: tuple[int | None, ...]) -> None:
    rng = np.random.default_rng(1)
    cells = random_cells(rng, 7, pattern, "float32")
    array = make((7,), (3,), pattern)
    array[:] = staged(cells, (7,))
    col = NdColumn.from_arrow(from_zarr(array))
    assert len(col) == 7
    for i, cell in enumerate(cells):
        row = col[i]
        assert row is not None
        assert tuple(row.sizes.values()) == cell.shape
        np.testing.assert_array_equal(row.to_numpy(), cell)


def test_from_zarr_n_d_selection_in_c_order_with_names() -> None:
    rng = np.random.default_rng(2)
    pattern = (None, None)
    cells = random_cells(rng, 4 * 5, pattern, "int16")
    array = make((4, 5), (3, 2), pattern, "int16")
    array[:, :] = staged(cells, (4, 5))
    column = from_zarr(array, dims=("h", "w"), selection=(slice(1, 3), slice(2, 5)))
    col = NdColumn.from_arrow(column)
    want = [cells[i * 5 + j] for i in (1, 2) for j in (2, 3, 4)]
    assert len(col) == len(want)
    for row, cell in zip(col, want, strict=True):
        assert row is not None and row.dims == ("h", "w")
        np.testing.assert_array_equal(row.to_numpy(), cell)


def test_from_zarr_unwritten_cells_are_fill_cells() -> None:
    array = make((3,), (2,), (2, None), "uint8")
    col = NdColumn.from_arrow(from_zarr(array))
    assert [tuple(r.sizes.values()) for r in col if r is not None] == [(2, 0)] * 3


def test_from_zarr_refuses_complex() -> None:
    array = make((2,), (2,), (None, None), "complex64")
    with pytest.raises(NotSupportedError, match="complex"):
        from_zarr(array)


@settings(max_examples=25, deadline=None)
@given(
    pattern=st.sampled_from([(None, None), (2, None), (None, 1, None), (None,)]),
    dtype=st.sampled_from(["bool", "int8", "uint32", "float16", "float64"]),
    seed=st.integers(0, 2**32 - 1),
    sharded=st.booleans(),
)
def test_to_zarr_equals_zarrs_own_writes(
    pattern: tuple[int | None, ...], dtype: str, seed: int, sharded: bool
) -> None:
    rng = np.random.default_rng(seed)
    shape, chunks = (3, 4), (2, 2)
    cells = random_cells(rng, 12, pattern, dtype)
    shards = (2, 4) if sharded else None
    ours = make(shape, chunks, pattern, dtype, shards)
    theirs = make(shape, chunks, pattern, dtype, shards)
    to_zarr(NdColumn.from_arrays(cells), ours, (slice(None), slice(None)))
    theirs[:, :] = staged(cells, shape)
    assert stored(ours) == stored(theirs)
    back = NdColumn.from_arrow(from_zarr(ours, selection=(slice(None), slice(None))))
    for row, cell in zip(back, cells, strict=True):
        assert row is not None
        np.testing.assert_array_equal(row.to_numpy(), cell)


def test_to_zarr_null_rows_are_empty_cells_and_their_values_dropped() -> None:
    cells = [np.ones((2, 1), np.float32), np.zeros((2, 3), np.float32)]
    col = NdColumn.from_arrays([cells[0], None, cells[1]])
    array = make((3,), (3,), (2, None))
    to_zarr(col, array)
    got = array[:]
    np.testing.assert_array_equal(got[0], cells[0])
    assert got[1].shape == (2, 0)
    np.testing.assert_array_equal(got[2], cells[1])


def test_to_zarr_refuses_wrong_rank_and_fixed_extent() -> None:
    array = make((1,), (1,), (2, None))
    with pytest.raises(ShapeMismatchError, match="rank 1"):
        to_zarr(NdColumn.from_arrays([np.ones(3, np.float32)]), array)
    with pytest.raises(ShapeMismatchError, match="fixed at 2"):
        to_zarr(NdColumn.from_arrays([np.ones((3, 3), np.float32)]), array)
    assert stored(array) == {}


def test_to_zarr_refuses_a_count_that_does_not_fill_the_selection() -> None:
    array = make((2, 2), (2, 2), (None, None))
    with pytest.raises(ValueError, match="selection holds 4"):
        to_zarr(NdColumn.from_arrays([np.ones((1, 1), np.float32)] * 3), array, ...)


def test_from_zarr_to_zarr_round_trip_through_arrow_ipc() -> None:
    rng = np.random.default_rng(5)
    cells = random_cells(rng, 6, (None, 3, None), "int32")
    src = make((6,), (4,), (None, 3, None), "int32")
    src[:] = staged(cells, (6,))
    column = from_zarr(src, dims=("t", "c", "x"))
    sink = pa.BufferOutputStream()
    table = pa.table({"cells": column})
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    read = pa.ipc.open_stream(sink.getvalue()).read_all()
    dst = make((6,), (4,), (None, 3, None), "int32")
    to_zarr(read.column("cells"), dst)
    assert stored(dst) == stored(src)


# ------------------------------------------------------------- arrow.variable_shape_tensor

needs_vst = pytest.mark.skipif(
    tuple(int(x) for x in pa.__version__.split(".")[:1]) < (24,),
    reason="arrow.variable_shape_tensor needs pyarrow >= 24",
)


@needs_vst
def test_zarr_to_variable_shape_tensor_maps_the_shape_table() -> None:
    from nd_arrow import zarr_to_variable_shape_tensor

    rng = np.random.default_rng(7)
    pattern = (None, 2, None)
    cells = random_cells(rng, 6, pattern, "float64")
    array = make((2, 3), (1, 2), pattern, "float64")
    array[:, :] = staged(cells, (2, 3))
    tensor = zarr_to_variable_shape_tensor(array, dims=("y", "c", "x"), selection=...)
    assert tensor.type.extension_name == "arrow.variable_shape_tensor"
    shapes = tensor.storage.field("shape").to_pylist()
    assert shapes == [list(c.shape) for c in cells]
    data = tensor.storage.field("data")
    for i, cell in enumerate(cells):
        np.testing.assert_array_equal(data[i].values.to_numpy(), cell.reshape(-1))
    col = NdColumn.from_arrow(from_zarr(array, dims=("y", "c", "x"), selection=...))
    from nd_arrow import from_variable_shape_tensor

    assert from_variable_shape_tensor(tensor).to_pylist() == col.to_pylist()


@needs_vst
def test_variable_shape_tensor_to_zarr_round_trip_is_byte_identical() -> None:
    from nd_arrow import variable_shape_tensor_to_zarr, zarr_to_variable_shape_tensor

    rng = np.random.default_rng(8)
    cells = random_cells(rng, 5, (None, None), "uint16")
    src = make((5,), (2,), (None, None), "uint16")
    src[:] = staged(cells, (5,))
    tensor = zarr_to_variable_shape_tensor(src)
    dst = make((5,), (2,), (None, None), "uint16")
    variable_shape_tensor_to_zarr(tensor, dst)
    assert stored(dst) == stored(src)


@needs_vst
def test_variable_shape_tensor_to_zarr_refuses_a_wrong_fixed_extent() -> None:
    from nd_arrow import to_variable_shape_tensor, variable_shape_tensor_to_zarr

    tensor = to_variable_shape_tensor(NdColumn.from_arrays([np.ones((3, 1), np.float32)]))
    with pytest.raises(ShapeMismatchError, match="fixed at 2"):
        variable_shape_tensor_to_zarr(tensor, make((1,), (1,), (2, None)))


def test_variable_shape_tensor_storage_form_writes_on_any_pyarrow() -> None:
    from nd_arrow import variable_shape_tensor_storage, variable_shape_tensor_to_zarr

    cells = [np.arange(6, dtype=np.int8).reshape(2, 3), np.zeros((2, 0), np.int8)]
    field, storage = variable_shape_tensor_storage(NdColumn.from_arrays(cells))
    dst = make((2,), (2,), (2, None), "int8")
    variable_shape_tensor_to_zarr(storage, dst, field=field)
    got = dst[:]
    np.testing.assert_array_equal(got[0], cells[0])
    assert got[1].shape == (2, 0)


@pytest.mark.skipif(
    tuple(int(x) for x in pa.__version__.split(".")[:1]) >= (24,), reason="pyarrow >= 24"
)
def test_zarr_to_variable_shape_tensor_refuses_old_pyarrow() -> None:
    from nd_arrow import zarr_to_variable_shape_tensor

    with pytest.raises(NotSupportedError, match="pyarrow >= 24"):
        zarr_to_variable_shape_tensor(make((1,), (1,), (None, None)))
