"""Tests for zarr_vlen_ndarray.codec: metadata, validation, chunk encode/decode, and the
registration with zarr (idempotent on import, and the zarr.codecs entry point)."""

from __future__ import annotations

import asyncio
import importlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from _zvn_helpers import chunks_of_cells, object_array, random_cell
from _zvn_support import assert_entry_point, run_script
from hypothesis import given, settings
from numcodecs import VLenBytes
from zarr.codecs import BytesCodec
from zarr.core.array_spec import ArrayConfig, ArraySpec
from zarr.core.buffer import default_buffer_prototype
from zarr.dtype import data_type_registry
from zarr.registry import get_codec_class

import zarr_vlen_ndarray
from zarr_ndarray_dtype import CellError, NDArrayDType
from zarr_ndarray_dtype.codecs import parse_codec_metadata
from zarr_vlen_ndarray import codec as codec_module
from zarr_vlen_ndarray.codec import CODEC_NAME, CodecMetadataError, VlenNDArrayCodec, register
from zarr_vlen_ndarray.framing import FramingError

F32_2 = NDArrayDType(dtype="float32", shape=(None, 2))


def _vlen_bytes(cells: np.ndarray) -> bytes:
    """What zarr's vlen-bytes writes for the cells' raw bytes, in C order."""
    payloads = np.empty(cells.size, dtype=object)
    payloads[:] = [np.ascontiguousarray(c).tobytes() for c in cells.ravel(order="C")]
    return bytes(VLenBytes().encode(payloads))


# ------------------------------------------------------------------------------- metadata


def test_to_dict_and_from_dict() -> None:
    codec = VlenNDArrayCodec()
    assert codec.to_dict() == {"name": "vlen-ndarray", "configuration": {}}
    assert VlenNDArrayCodec.from_dict(codec.to_dict()) == codec
    assert VlenNDArrayCodec.from_dict({"name": "vlen-ndarray"}) == codec
    assert CODEC_NAME == "vlen-ndarray"


def test_class_attributes() -> None:
    assert VlenNDArrayCodec.is_fixed_size is False
    assert "is_fixed_size" not in VlenNDArrayCodec.__dataclass_fields__
    codec = VlenNDArrayCodec()
    with pytest.raises(AttributeError):
        codec.foo = 1  # type: ignore[attr-defined]
    assert hash(codec) == hash(VlenNDArrayCodec())


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"name": "vlen-ndarray", "configuration": {"dtype": "float32"}}, "takes no parameters"),
        ({"name": "vlen-ndarray", "configuration": None}, "is not a JSON object"),
        ({"name": "vlen-ndarray", "configuration": []}, "is not a JSON object"),
        ({"name": "vlen-ndarray", "configuration": {}, "extra": 1}, r"unexpected keys \['extra'\]"),
        ({"name": "vlen-bytes", "configuration": {}}, "does not name the 'vlen-ndarray' codec"),
        ({"configuration": {}}, "does not name"),
    ],
)
def test_invalid_metadata(data: Any, message: str) -> None:
    with pytest.raises(CodecMetadataError, match=message):
        VlenNDArrayCodec.from_dict(data)
    with pytest.raises(ValueError, match=message):
        parse_codec_metadata(data, CODEC_NAME)


def test_non_mapping_metadata_is_type_and_value_error() -> None:
    for exc_type in (TypeError, ValueError):
        with pytest.raises(exc_type, match="is not a JSON object"):
            VlenNDArrayCodec.from_dict("vlen-ndarray")  # type: ignore[arg-type]


def test_compute_encoded_size() -> None:
    with pytest.raises(NotImplementedError, match="variable-length"):
        VlenNDArrayCodec().compute_encoded_size(10, None)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- validation


@pytest.mark.parametrize("shape", [(None,), (None, 2), (None, 3, 2), (None, 1, 1, 1)])
def test_validate_accepts_leading_variable(shape: tuple[int | None, ...]) -> None:
    dtype = NDArrayDType(dtype="int16", shape=shape)
    VlenNDArrayCodec().validate(shape=(4,), dtype=dtype, chunk_grid=None)


@pytest.mark.parametrize(
    ("dtype", "message"),
    [
        (NDArrayDType(dtype="float32", shape=(3, 2)), r"\[3, 2\].*'bytes' codec.*BytesCodec"),
        (
            NDArrayDType(dtype="float32", shape=(2, None)),
            r"\[2, null\].*single variable dimension outside.*'ragged-ndarray' codec",
        ),
        (
            NDArrayDType(dtype="float32", shape=(None, None)),
            r"\[null, null\].*two or more variable dimensions.*stored shape.*RaggedNDArrayCodec",
        ),
        (zarr.dtype.VariableLengthBytes(), "'vlen-bytes' codec"),
        (zarr.dtype.Float32(), "core 'bytes' codec.*NDArrayDType"),
    ],
)
def test_validate_refuses(dtype: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        VlenNDArrayCodec().validate(shape=(4,), dtype=dtype, chunk_grid=None)


@pytest.mark.parametrize(
    ("dtype", "phrase"),
    [
        (NDArrayDType(dtype="float32", shape=(2, None)), "exactly one variable dimension"),
        (NDArrayDType(dtype="float32", shape=(3, 2)), "exactly one variable dimension"),
        ("float32", "only compatible"),
    ],
)
def test_create_array_refuses_other_data_types_once(dtype: Any, phrase: str) -> None:
    """0.2.0's phrase leads, and the rule is stated once, then where the pattern is served."""
    with pytest.raises(ValueError, match=phrase) as info:
        zarr.create_array(
            zarr.storage.MemoryStore(), shape=(2,), dtype=dtype, serializer=VlenNDArrayCodec()
        )
    message = str(info.value)
    assert message.count(phrase) == 1 and message.count("[null, d1, ..., dk]") == 1
    assert "served by" in message


# ------------------------------------------------------------------------ chunk encoding


@settings(max_examples=150)
@given(chunks_of_cells())
def test_encode_is_vlen_bytes_of_raw_cells(case: tuple[NDArrayDType, np.ndarray]) -> None:
    dtype, cells = case
    assert VlenNDArrayCodec.encode_chunk(cells, dtype).tobytes() == _vlen_bytes(cells)


@settings(max_examples=150)
@given(chunks_of_cells())
def test_round_trip(case: tuple[NDArrayDType, np.ndarray]) -> None:
    dtype, cells = case
    decoded = VlenNDArrayCodec.decode_chunk(
        VlenNDArrayCodec.encode_chunk(cells, dtype), cells.shape, dtype
    )
    assert decoded.shape == cells.shape
    assert decoded.dtype == object
    for got, want in zip(decoded.ravel(), cells.ravel(), strict=True):
        assert type(got) is np.ndarray
        assert got.dtype == dtype.item_dtype
        assert got.shape == want.shape
        assert got.tobytes() == want.tobytes()
        assert not got.flags.writeable


def test_f_ordered_chunk_is_c_order_on_the_wire() -> None:
    rng = np.random.default_rng(1)
    cells = object_array([random_cell(rng, F32_2, r) for r in range(6)], (2, 3))
    fortran = np.asfortranarray(cells)
    assert fortran.flags.f_contiguous
    assert not fortran.flags.c_contiguous
    framed = VlenNDArrayCodec.encode_chunk(fortran, F32_2).tobytes()
    assert framed == VlenNDArrayCodec.encode_chunk(cells, F32_2).tobytes() == _vlen_bytes(cells)
    # A transposed (F-ordered) view of another chunk, too.
    assert VlenNDArrayCodec.encode_chunk(cells.T, F32_2).tobytes() == _vlen_bytes(
        np.ascontiguousarray(cells.T)
    )


def test_encode_does_not_modify_the_chunk() -> None:
    cells = object_array([None, [[1.0, 2.0]], np.zeros((1, 2), ">f4")])
    snapshot = list(cells)
    VlenNDArrayCodec.encode_chunk(cells, F32_2)
    assert list(cells) == snapshot


def test_none_and_unwrapped_scalars() -> None:
    box = np.empty((), dtype=object)
    box[()] = np.array([[1, 2]], dtype=np.float32)
    cells = object_array([None, box])
    expected = object_array([np.zeros((0, 2), np.float32), np.array([[1, 2]], np.float32)])
    assert VlenNDArrayCodec.encode_chunk(cells, F32_2).tobytes() == _vlen_bytes(expected)


def test_rank0_chunk() -> None:
    cells = np.empty((), dtype=object)
    cells[()] = np.arange(4, dtype=np.float32).reshape(2, 2)
    framed = VlenNDArrayCodec.encode_chunk(cells, F32_2)
    assert framed.tobytes() == _vlen_bytes(cells.reshape(1))
    decoded = VlenNDArrayCodec.decode_chunk(framed, (), F32_2)
    assert decoded.shape == ()
    np.testing.assert_array_equal(decoded[()], cells[()])


def test_decoded_cells_share_one_read_only_block() -> None:
    cells = object_array([np.ones((2, 2), np.float32), np.zeros((1, 2), np.float32)])
    decoded = VlenNDArrayCodec.decode_chunk(
        VlenNDArrayCodec.encode_chunk(cells, F32_2), (2,), F32_2
    )
    assert np.shares_memory(decoded[0], decoded[1]) or decoded[0].base is decoded[1].base
    with pytest.raises(ValueError, match="read-only"):
        decoded[0][0, 0] = 5


def test_encode_refuses_bad_cells() -> None:
    with pytest.raises(CellError, match="does not match pattern"):
        VlenNDArrayCodec.encode_chunk(object_array([np.zeros(3, np.float32)]), F32_2)


def test_encode_refuses_too_many_elements(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codec_module, "U32_MAX", 2)  # as 0.2.0's own tests do
    with pytest.raises(ValueError, match=r"chunk of 3 elements.*at most 2 elements"):
        VlenNDArrayCodec.encode_chunk(object_array([None, None, None]), F32_2)


def test_encode_refuses_huge_element(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codec_module, "U32_MAX", 15)  # as 0.2.0's own tests do
    cells = object_array([np.zeros((1, 2), np.float32), np.zeros((2, 2), np.float32)])
    with pytest.raises(ValueError, match=r"element 1 \(C order\).*2 rows are 16 bytes"):
        VlenNDArrayCodec.encode_chunk(cells, F32_2)


# ------------------------------------------------------------------------- hostile chunks


def _decode_hex(hex_string: str, shape: tuple[int, ...], dtype: NDArrayDType) -> np.ndarray:
    return VlenNDArrayCodec.decode_chunk(
        np.frombuffer(bytes.fromhex(hex_string), np.uint8), shape, dtype
    )


@pytest.mark.parametrize(
    ("hex_string", "message"),
    [
        ("0200", r"shape \(2,\) for NDArrayDType.*truncated chunk: 2 bytes"),
        ("01000000 00000000", "header claims 1 elements but the chunk holds 2"),
        ("02000000 04000000 00000000 00000000", r"not a whole number of 8-byte rows of float32"),
        ("02000000 00000000 00000000 00", "1 trailing bytes"),
        ("02000000 ffffff7f 00000000", "running to byte 2147483655 past the chunk's end"),
    ],
)
def test_hostile_chunk_messages(hex_string: str, message: str) -> None:
    with pytest.raises(FramingError, match=message):
        _decode_hex(hex_string, (2,), F32_2)


def test_bool_bytes_other_than_0_1() -> None:
    dtype = NDArrayDType(dtype="bool", shape=(None,))
    ok = _decode_hex("02000000 02000000 0100 01000000 00", (2,), dtype)
    assert ok[0].tolist() == [True, False]
    with pytest.raises(ValueError, match=r"element 1 \(C order\) holds the byte 0x02"):
        _decode_hex("02000000 02000000 0100 01000000 02", (2,), dtype)


# The registry's vectors (registry/examples/vlen-ndarray.json) run in test_registry.py.


# ------------------------------------------------------------------ zarr codec interface


def _spec(shape: tuple[int, ...], dtype: NDArrayDType) -> ArraySpec:
    return ArraySpec(
        shape=shape,
        dtype=dtype,
        fill_value=dtype.default_scalar(),
        config=ArrayConfig.from_dict({}),
        prototype=default_buffer_prototype(),
    )


def test_sync_and_async_methods_agree() -> None:
    rng = np.random.default_rng(2)
    cells = object_array([random_cell(rng, F32_2, r) for r in (0, 3, 1, 2)], (2, 2))
    spec = _spec((2, 2), F32_2)
    prototype = default_buffer_prototype()
    codec = VlenNDArrayCodec()
    nd = prototype.nd_buffer.from_numpy_array(cells)
    sync_bytes = codec._encode_sync(nd, spec)
    async_bytes = asyncio.run(codec._encode_single(nd, spec))
    assert sync_bytes is not None
    assert async_bytes is not None
    assert sync_bytes.to_bytes() == async_bytes.to_bytes() == _vlen_bytes(cells)
    for decoded in (
        codec._decode_sync(sync_bytes, spec),
        asyncio.run(codec._decode_single(sync_bytes, spec)),
    ):
        out = decoded.as_numpy_array()
        assert out.shape == (2, 2)
        for got, want in zip(out.ravel(), cells.ravel(), strict=True):
            np.testing.assert_array_equal(got, want)


def test_codec_refuses_foreign_chunk_spec() -> None:
    spec = ArraySpec(
        shape=(1,),
        dtype=zarr.dtype.Float32(),
        fill_value=np.float32(0),
        config=ArrayConfig.from_dict({}),
        prototype=default_buffer_prototype(),
    )
    with pytest.raises(TypeError, match="serves only the 'ndarray' data type"):
        VlenNDArrayCodec()._decode_sync(default_buffer_prototype().buffer.from_bytes(b""), spec)


def test_bytes_codec_is_not_ours() -> None:
    assert not isinstance(BytesCodec(), VlenNDArrayCodec)


# ------------------------------------------------------------------------ registration


def test_codec_and_data_type_registered() -> None:
    assert get_codec_class("vlen-ndarray") is VlenNDArrayCodec
    assert data_type_registry.get("ndarray") is NDArrayDType


def test_register_is_idempotent() -> None:
    register()
    register()
    importlib.reload(zarr_vlen_ndarray)
    assert get_codec_class("vlen-ndarray") is VlenNDArrayCodec
    assert data_type_registry.get("ndarray") is NDArrayDType
    # Still usable end to end after repeated registration.
    arr = zarr.create_array(
        zarr.storage.MemoryStore(), shape=(1,), dtype=NDArrayDType(dtype="int8", shape=(None,))
    )
    arr[0] = np.array([1, 2], dtype=np.int8)
    assert zarr_vlen_ndarray.unbox(arr[0]).tolist() == [1, 2]


def test_codec_entry_point() -> None:
    value = "zarr_vlen_ndarray.codec:VlenNDArrayCodec"
    assert_entry_point("zarr.codecs", "vlen-ndarray", value, VlenNDArrayCodec)


def test_codec_found_through_entry_point_alone(tmp_path: Path) -> None:
    """A process that imports only the data type package reads a store through our codec."""
    store = tmp_path / "a.zarr"
    arr = zarr.create_array(
        zarr.storage.LocalStore(store), shape=(2,), dtype=NDArrayDType(dtype="uint8", shape=(None,))
    )
    arr[1] = np.array([7, 8, 9], dtype=np.uint8)
    script = f"""
        import sys, zarr, zarr_ndarray_dtype
        assert "zarr_vlen_ndarray" not in sys.modules
        cells = zarr.open_array(zarr.storage.LocalStore({str(store)!r}), mode="r")[:]
        assert [c.tolist() for c in cells] == [[], [7, 8, 9]], cells
        assert "zarr_vlen_ndarray" in sys.modules
        print("ok")
        """
    assert run_script(script, tmp_path).stdout.strip() == "ok"
