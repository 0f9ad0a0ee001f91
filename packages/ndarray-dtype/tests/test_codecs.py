"""Tests for zarr_ndarray_dtype.codecs: the strict codec metadata, which codecs serve which
pattern, and all-fixed patterns through zarr's core ``bytes`` codec, end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest
import zarr
from hypothesis import given
from hypothesis import strategies as st
from ndarray_dtype_testing import element_dtypes
from zarr.codecs import BytesCodec

from zarr_ndarray_dtype import (
    CellError,
    CodecMetadataError,
    NDArrayDType,
    NDArrayDTypeError,
    ShapePattern,
    unbox,
)
from zarr_ndarray_dtype.codecs import parse_codec_metadata, serializer_name

# ------------------------------------------------------------------------ codec metadata


@pytest.mark.parametrize(
    "data", [{"name": "vlen-ndarray"}, {"name": "vlen-ndarray", "configuration": {}}]
)
def test_metadata_accepted(data: object) -> None:
    parse_codec_metadata(data, "vlen-ndarray")


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"name": "ragged-ndarray", "extra": 1}, r"unexpected keys \['extra'\];.*\(SPEC 5\.1/1\)"),
        ({"name": "other"}, r"does not name the 'ragged-ndarray' codec;.*\(SPEC 5\.1/1\)"),
        ({"name": "ragged-ndarray", "configuration": []}, r"is not a JSON object.*5\.1/2"),
        ({"name": "ragged-ndarray", "configuration": {"a": 1}}, "takes no parameters"),
    ],
)
def test_metadata_refused(data: object, match: str) -> None:
    with pytest.raises(CodecMetadataError, match=match) as info:
        parse_codec_metadata(data, "ragged-ndarray")
    assert not isinstance(info.value, TypeError)


def test_metadata_that_is_no_object_is_a_type_error_too() -> None:
    for data in ("vlen-ndarray", ["vlen-ndarray"]):
        with pytest.raises(TypeError, match=r"is not a JSON object; expected .*\(SPEC 2\.2/1\)"):
            parse_codec_metadata(data, "vlen-ndarray")
    with pytest.raises(CodecMetadataError):
        parse_codec_metadata(None, "vlen-ndarray")


def test_serializer_name() -> None:
    names = [serializer_name(ShapePattern(d)) for d in [(3, 2), (None, 2), (2, None), (None, None)]]
    assert names == ["bytes", "vlen-ndarray", "ragged-ndarray", "ragged-ndarray"]


# --------------------------------------------------------------- all-fixed patterns, bytes


def _cells(values: list) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = v
    return out


def _raw_chunk(store: dict, key: str) -> bytes:
    return store[key].to_bytes()


def test_golden_chunk_bytes_are_packed_little_endian(store: dict) -> None:
    dt = NDArrayDType(dtype="int16", shape=(2, 2))
    arr = zarr.create_array(store=store, shape=(3,), chunks=(2,), dtype=dt, compressors=None)
    arr[:] = _cells([np.eye(2, dtype=">i2"), [[1, 2], [3, 4]], np.full((2, 2), -1, "<i2")])
    assert _raw_chunk(store, "c/0").hex() == "01000000000001000100020003000400"
    # the last chunk is padded with fill (zeros) to the chunk shape
    assert _raw_chunk(store, "c/1").hex() == "ffffffffffffffff" + "00" * 8
    meta = json.loads(store["zarr.json"].to_bytes())
    assert meta["codecs"] == [{"name": "bytes", "configuration": {"endian": "little"}}]
    assert meta["fill_value"] == "AAAAAAAAAAA="


@given(element_dtypes, st.integers(1, 3), st.integers(1, 7), st.data())
def test_bytes_identical_to_plain_array_with_trailing_dims(
    name: str, inner: int, n: int, data: st.DataObject
) -> None:
    """The chunk equals zarr's own bytes codec over a plain (n, 2, inner) numeric array."""
    item = np.dtype(name).newbyteorder("<")
    raw = data.draw(
        st.binary(min_size=n * 2 * inner * item.itemsize, max_size=n * 2 * inner * item.itemsize)
    )
    if item.kind == "b":
        raw = bytes(b & 1 for b in raw)
    block = np.frombuffer(raw, dtype=item).reshape(n, 2, inner)
    ours: dict = {}
    plain: dict = {}
    arr = zarr.create_array(
        store=ours,
        shape=(n,),
        chunks=(n,),
        dtype=NDArrayDType(dtype=name, shape=(2, inner)),
        compressors=None,
        config={"write_empty_chunks": True},
    )
    arr[:] = _cells(list(block))
    ref = zarr.create_array(
        store=plain,
        shape=(n, 2, inner),
        chunks=(n, 2, inner),
        dtype=item,
        compressors=None,
        serializer=BytesCodec(endian="little"),
        config={"write_empty_chunks": True},
    )
    ref[:] = block
    assert _raw_chunk(ours, "c/0") == _raw_chunk(plain, "c/0/0/0")
    back = zarr.open_array(store=ours)[:]
    # Bytes, not values: a signalling NaN makes numpy's NaN-aware comparison warn.
    assert all(
        back[i].shape == block[i].shape and back[i].tobytes() == block[i].tobytes()
        for i in range(n)
    )
    assert not back[0].flags.writeable


@pytest.mark.parametrize("order", ["C", "F"])
def test_two_dimensional_outer_array_and_memory_order(order: str, store: dict) -> None:
    dt = NDArrayDType(dtype="uint16", shape=(3,))
    arr = zarr.create_array(
        store=store,
        shape=(2, 3),
        chunks=(2, 3),
        dtype=dt,
        compressors=None,
        config={"order": order},
    )
    grid = np.empty((2, 3), dtype=object)
    for i in range(2):
        for j in range(3):
            grid[i, j] = np.array([i, j, 10 * i + j], dtype="<u2")
    arr[:] = grid
    expected = np.stack([grid[i, j] for i in range(2) for j in range(3)]).tobytes()
    assert (
        _raw_chunk(store, "c/0/0") == expected
    )  # C order over the chunk, whatever the memory order
    out = arr[:]
    assert np.array_equal(out[1, 2], [1, 2, 12])


def test_partial_scalar_writes_sharding_and_elision(store: dict) -> None:
    dt = NDArrayDType(dtype="float64", shape=(2,))
    arr = zarr.create_array(store=store, shape=(8,), chunks=(2,), shards=(4,), dtype=dt)
    arr[5] = np.array([1.5, 2.5])
    arr[0:2] = _cells([[0.0, 0.0], [0.0, 0.0]])  # equal to the fill: elided
    assert sorted(k for k in store if k.startswith("c/")) == ["c/1"]
    out = arr[:]
    assert np.array_equal(out[5], [1.5, 2.5])
    assert np.array_equal(unbox(arr[4]), [0.0, 0.0])
    assert np.array_equal(out[7], [0.0, 0.0])


def test_bad_cells_fail_with_a_cell_error(store: dict) -> None:
    arr = zarr.create_array(store=store, shape=(2,), dtype=NDArrayDType(dtype="uint8", shape=(2,)))
    with pytest.raises(CellError, match="does not match"):
        arr[:] = _cells([np.zeros(3, "u1"), np.zeros(2, "u1")])
    with pytest.raises(CellError, match="outside the range"):
        arr[:] = _cells([np.array([1, 256]), np.zeros(2, "u1")])


@pytest.mark.parametrize("payload", [b"\x01\x00\x00", b"\x01\x00\x00\x00\x00", b"\x02\x00\x00\x00"])
def test_corrupt_chunks_are_refused_on_read(store: dict, payload: bytes) -> None:
    arr = zarr.create_array(
        store=store,
        shape=(2,),
        chunks=(2,),
        dtype=NDArrayDType(dtype="bool", shape=(2,)),
        compressors=None,
    )
    arr[:] = _cells([[True, False], [False, True]])
    store["c/0"] = zarr.core.buffer.cpu.Buffer.from_bytes(payload)
    with pytest.raises(CellError):
        arr[:]


@pytest.mark.parametrize(
    ("shape", "codec", "fragment"),
    [
        ((None, 2), BytesCodec(endian="little"), "variable dimensions"),
        ((2, None), BytesCodec(endian="little"), "variable dimensions"),
        ((3,), BytesCodec(endian="big"), "little-endian by definition"),
        ((3,), BytesCodec(endian=None), "without an endian"),
    ],
)
def test_unusable_bytes_codecs_are_refused_at_creation(
    shape: tuple, codec: BytesCodec, fragment: str
) -> None:
    store: dict = {}
    with pytest.raises(NDArrayDTypeError, match=fragment):
        zarr.create_array(
            store=store,
            shape=(4,),
            dtype=NDArrayDType(dtype="float32", shape=shape),
            serializer=codec,
        )
    assert "zarr.json" not in store


def test_single_byte_items_need_no_endian() -> None:
    arr = zarr.create_array(
        store={},
        shape=(2,),
        dtype=NDArrayDType(dtype="int8", shape=(2,)),
        serializer=BytesCodec(endian=None),
    )
    arr[:] = _cells([[1, -1], [2, -2]])
    assert arr[:][1].tolist() == [2, -2]


def test_bytes_codec_for_other_dtypes_is_untouched() -> None:
    arr = zarr.create_array(
        store={}, shape=(3,), dtype="float32", serializer=BytesCodec(endian="big")
    )
    arr[:] = [1, 2, 3]
    assert type(arr.metadata.codecs[0]) is BytesCodec
