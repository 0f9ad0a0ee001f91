"""Tests for zarr_ragged_ndarray.codec: metadata, validation, chunk encode/decode, and the
registration with zarr (idempotent on import, and the zarr.codecs entry point)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from _zrn_helpers import assert_cells_equal, chunks_of_cells, object_array, random_cell
from _zrn_support import assert_entry_point, run_script
from hypothesis import given, settings
from zarr.dtype import data_type_registry
from zarr.registry import get_codec_class

import zarr_ragged_ndarray
from zarr_ndarray_dtype import CellError, NDArrayDType, unbox
from zarr_ndarray_dtype.codecs import parse_codec_metadata
from zarr_ragged_ndarray.codec import CODEC_NAME, CodecMetadataError, RaggedNDArrayCodec, register
from zarr_ragged_ndarray.layout import RaggedLayoutError

F32_NN = NDArrayDType(dtype="float32", shape=(None, None))


def test_to_dict_and_from_dict() -> None:
    codec = RaggedNDArrayCodec()
    assert codec.to_dict() == {"name": "ragged-ndarray", "configuration": {}}
    assert RaggedNDArrayCodec.from_dict(codec.to_dict()) == codec
    assert RaggedNDArrayCodec.from_dict({"name": "ragged-ndarray"}) == codec
    assert CODEC_NAME == "ragged-ndarray"
    assert RaggedNDArrayCodec.is_fixed_size is False
    assert hash(codec) == hash(RaggedNDArrayCodec())


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"name": "ragged-ndarray", "configuration": {"x": 1}}, "takes no parameters"),
        ({"name": "ragged-ndarray", "configuration": None}, "is not a JSON object"),
        ({"name": "ragged-ndarray", "configuration": {}, "extra": 1}, "unexpected keys"),
        ({"name": "vlen-ndarray", "configuration": {}}, "does not name the 'ragged-ndarray'"),
        ("ragged-ndarray", "is not a JSON object"),
    ],
)
def test_invalid_metadata(data: Any, message: str) -> None:
    with pytest.raises(CodecMetadataError, match=message):
        RaggedNDArrayCodec.from_dict(data)
    with pytest.raises(ValueError, match=message):
        parse_codec_metadata(data, CODEC_NAME)


def test_compute_encoded_size() -> None:
    with pytest.raises(NotImplementedError, match="variable-length"):
        RaggedNDArrayCodec().compute_encoded_size(10, None)  # type: ignore[arg-type]


@pytest.mark.parametrize("shape", [(None,), (None, 2), (2, None), (None, None), (None, 3, None)])
def test_validate_accepts_variable_patterns(shape: tuple[int | None, ...]) -> None:
    RaggedNDArrayCodec().validate(
        shape=(4,), dtype=NDArrayDType(dtype="int16", shape=shape), chunk_grid=None
    )


@pytest.mark.parametrize(
    ("dtype", "message"),
    [
        (NDArrayDType(dtype="float32", shape=(3, 2)), r"\[3, 2\].*'bytes' codec"),
        (zarr.dtype.VariableLengthBytes(), "'vlen-bytes' codec"),
        (zarr.dtype.Float32(), "core 'bytes' codec"),
    ],
)
def test_validate_refuses(dtype: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RaggedNDArrayCodec().validate(shape=(4,), dtype=dtype, chunk_grid=None)


@settings(max_examples=150)
@given(chunks_of_cells())
def test_round_trip(case: tuple[NDArrayDType, np.ndarray]) -> None:
    dtype, cells = case
    decoded = RaggedNDArrayCodec.decode_chunk(
        RaggedNDArrayCodec.encode_chunk(cells, dtype), cells.shape, dtype
    )
    assert decoded.dtype == object
    assert all(type(c) is np.ndarray and not c.flags.writeable for c in decoded.ravel())
    assert_cells_equal(decoded, cells, dtype)


def test_f_ordered_chunk_is_c_order_on_the_wire() -> None:
    rng = np.random.default_rng(1)
    cells = object_array([random_cell(rng, F32_NN, (i, 6 - i)) for i in range(6)], (2, 3))
    fortran = np.asfortranarray(cells)
    assert not fortran.flags.c_contiguous
    assert (
        RaggedNDArrayCodec.encode_chunk(fortran, F32_NN).tobytes()
        == RaggedNDArrayCodec.encode_chunk(cells, F32_NN).tobytes()
    )


def test_none_encodes_as_the_fill_and_input_is_untouched() -> None:
    dtype = NDArrayDType(dtype="int16", shape=(2, None))
    fill = np.array([[1], [2]], np.int16)
    cells = object_array([None, [[3, 4], [5, 6]], np.zeros((2, 0), ">i2")])
    snapshot = list(cells)
    got = RaggedNDArrayCodec.decode_chunk(
        RaggedNDArrayCodec.encode_chunk(cells, dtype, fill), (3,), dtype
    )
    assert [c.tolist() for c in got] == [[[1], [2]], [[3, 4], [5, 6]], [[], []]]
    assert list(cells) == snapshot
    empty = RaggedNDArrayCodec.decode_chunk(
        RaggedNDArrayCodec.encode_chunk(cells, dtype), (3,), dtype
    )
    assert empty[0].shape == (2, 0)


def test_boxed_scalars_and_views() -> None:
    box = np.empty((), dtype=object)
    box[()] = np.arange(6, dtype=np.float32).reshape(2, 3)
    strided = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    cells = object_array([box, strided, strided.T])
    got = RaggedNDArrayCodec.decode_chunk(
        RaggedNDArrayCodec.encode_chunk(cells, F32_NN), (3,), F32_NN
    )
    assert got[0].tolist() == box[()].tolist()
    assert got[1].tolist() == strided.tolist()
    assert got[2].tolist() == strided.T.tolist()


def test_bad_cells_are_refused() -> None:
    dtype = NDArrayDType(dtype="int8", shape=(2, None))
    with pytest.raises(CellError, match="does not match pattern"):
        RaggedNDArrayCodec.encode_chunk(object_array([np.zeros((3, 1), np.int8)]), dtype)
    with pytest.raises(CellError, match="outside the range"):
        RaggedNDArrayCodec.encode_chunk(object_array([np.full((2, 1), 300)]), dtype)
    with pytest.raises(CellError):
        RaggedNDArrayCodec.encode_chunk(object_array([np.zeros(4, np.int8)]), dtype)


def test_bool_payload_bytes_are_0_or_1() -> None:
    dtype = NDArrayDType(dtype="bool", shape=(None, None))
    odd = np.array([[0, 2, 255]], np.uint8).view(bool)
    encoded = RaggedNDArrayCodec.encode_chunk(object_array([odd]), dtype)
    assert encoded[-3:].tolist() == [0, 1, 1]
    encoded[-1] = 7
    with pytest.raises(RaggedLayoutError, match=r"element 0 .* 0x07"):
        RaggedNDArrayCodec.decode_chunk(encoded, (1,), dtype)


def test_rank0_chunk() -> None:
    cells = np.empty((), dtype=object)
    cells[()] = np.arange(4, dtype=np.float32).reshape(1, 4)
    got = RaggedNDArrayCodec.decode_chunk(
        RaggedNDArrayCodec.encode_chunk(cells, F32_NN), (), F32_NN
    )
    assert got.shape == ()
    assert got[()].tolist() == [[0, 1, 2, 3]]


def test_leading_variable_pattern_cells_are_views() -> None:
    dtype = NDArrayDType(dtype="float32", shape=(None, 2))
    rng = np.random.default_rng(3)
    cells = object_array([random_cell(rng, dtype, (r, 2)) for r in (0, 3, 1)])
    raw = RaggedNDArrayCodec.encode_chunk(cells, dtype)
    got = RaggedNDArrayCodec.decode_chunk(raw, (3,), dtype)
    assert_cells_equal(got, cells, dtype)
    assert got[1].base is not None


# The registry's vectors (registry/examples/ragged-ndarray.json) run in test_registry.py.


# ------------------------------------------------------------------------ registration


def test_codec_and_data_type_registered() -> None:
    assert get_codec_class("ragged-ndarray") is RaggedNDArrayCodec
    assert data_type_registry.get("ndarray") is NDArrayDType


def test_register_is_idempotent() -> None:
    register()
    register()
    importlib.reload(zarr_ragged_ndarray)
    assert get_codec_class("ragged-ndarray") is RaggedNDArrayCodec
    arr = zarr.create_array(
        zarr.storage.MemoryStore(),
        shape=(1,),
        dtype=NDArrayDType(dtype="int8", shape=(None, None)),
        serializer=RaggedNDArrayCodec(),
    )
    arr[0] = np.array([[1, 2]], dtype=np.int8)
    assert unbox(arr[0]).tolist() == [[1, 2]]


def test_codec_entry_point() -> None:
    value = "zarr_ragged_ndarray.codec:RaggedNDArrayCodec"
    assert_entry_point("zarr.codecs", "ragged-ndarray", value, RaggedNDArrayCodec)


def test_store_opens_after_importing_the_package(tmp_path: Path) -> None:
    """A fresh process reads a ragged-ndarray store (zarr >= 3.4.1 without importing us)."""
    store = tmp_path / "a.zarr"
    arr = zarr.create_array(
        zarr.storage.LocalStore(store),
        shape=(2,),
        dtype=NDArrayDType(dtype="uint8", shape=(2, None)),
        serializer=RaggedNDArrayCodec(),
    )
    arr[1] = np.array([[7], [8]], dtype=np.uint8)
    script = f"""
        import zarr, zarr_ragged_ndarray
        cells = zarr.open_array(zarr.storage.LocalStore({str(store)!r}), mode="r")[:]
        assert [c.tolist() for c in cells] == [[[], []], [[7], [8]]], cells
        print("ok")
        """
    assert run_script(script, tmp_path).stdout.strip() == "ok"


def test_codec_found_through_entry_point_alone(tmp_path: Path) -> None:
    """A process that imports only the data type package reads a store through our codec."""
    store = tmp_path / "a.zarr"
    arr = zarr.create_array(
        zarr.storage.LocalStore(store),
        shape=(2,),
        dtype=NDArrayDType(dtype="int16", shape=(None, None)),
        serializer=RaggedNDArrayCodec(),
    )
    arr[1] = np.array([[1, 2, 3]], dtype=np.int16)
    script = f"""
        import sys, zarr, zarr_ndarray_dtype
        assert "zarr_ragged_ndarray" not in sys.modules
        cells = zarr.open_array(zarr.storage.LocalStore({str(store)!r}), mode="r")[:]
        assert [c.tolist() for c in cells] == [[], [[1, 2, 3]]], cells
        assert "zarr_ragged_ndarray" in sys.modules
        print("ok")
        """
    assert run_script(script, tmp_path).stdout.strip() == "ok"
