"""Tests for zarr_vlen_ndarray.block: the one chunk encoder and decoder."""

from __future__ import annotations

import numpy as np
import pytest
from _zvn_helpers import ndarray_dtypes, random_cell
from hypothesis import given, settings
from hypothesis import strategies as st
from numcodecs import VLenBytes

from zarr_ndarray_dtype import NDArray
from zarr_vlen_ndarray.block import (
    decode_block,
    encode_block,
    extract_block,
    offsets_from_rows,
    plan_block,
)
from zarr_vlen_ndarray.framing import FramingError

F32_2 = NDArray(dtype="float32", shape=(None, 2))
BOOL = NDArray(dtype="bool", shape=(None,))


def _columns(cells: list[np.ndarray], dtype: NDArray) -> tuple[np.ndarray, np.ndarray]:
    fixed = tuple(int(d) for d in dtype.shape[1:] if d is not None)
    values = (
        np.concatenate(cells) if cells else np.empty((0, *fixed), dtype=dtype.item_dtype)
    ).astype(dtype.item_dtype)
    offsets = np.zeros(len(cells) + 1, dtype=np.int64)
    np.cumsum([len(c) for c in cells], out=offsets[1:])
    return values, offsets


def _vlen_bytes(cells: list[np.ndarray]) -> bytes:
    payloads = np.empty(len(cells), dtype=object)
    payloads[:] = [c.tobytes() for c in cells]
    return bytes(VLenBytes().encode(payloads))


@settings(max_examples=100)
@given(ndarray_dtypes(), st.lists(st.integers(0, 4), max_size=12), st.integers(0, 2**32 - 1))
def test_round_trip_and_vlen_bytes_identity(dtype: NDArray, rows: list[int], seed: int) -> None:
    rng = np.random.default_rng(seed)
    cells = [random_cell(rng, dtype, r) for r in rows]
    values, offsets = _columns(cells, dtype)
    framed = encode_block(values, offsets, dtype)
    assert framed.dtype == np.uint8 and framed.ndim == 1
    assert framed.tobytes() == _vlen_bytes(cells)
    got_values, got_offsets = decode_block(framed, len(cells), dtype)
    assert got_values.dtype == dtype.item_dtype
    assert got_values.shape == values.shape
    assert got_values.tobytes() == values.tobytes()
    assert got_offsets.dtype == np.int64
    assert got_offsets.tolist() == offsets.tolist()
    # The decoded block is the decoder's own: making it read-only touches no one else's data.
    got_values.flags.writeable = False
    assert not np.shares_memory(got_values, framed)


def test_decode_accepts_any_shape_of_bytes() -> None:
    cells = [np.ones((1, 2), np.float32), np.zeros((0, 2), np.float32)]
    framed = encode_block(*_columns(cells, F32_2), F32_2)
    values, offsets = decode_block(framed.reshape(1, -1), 2, F32_2)
    assert values.shape == (1, 2)
    assert offsets.tolist() == [0, 1, 1]


def test_decode_errors_name_the_chunk_and_the_data_type() -> None:
    framed = np.frombuffer(bytes.fromhex("02000000 04000000 00000000 00000000"), np.uint8)
    with pytest.raises(FramingError, match="not a whole number of 8-byte rows of float32") as exc:
        decode_block(framed, 2, F32_2, where="chunk 'c/7'")
    message = str(exc.value)
    assert message.startswith("cannot decode the 'vlen-ndarray' chunk 'c/7' for NDArray(")
    assert isinstance(exc.value.__cause__, FramingError)
    with pytest.raises(FramingError, match=r"'vlen-ndarray' chunk for .*header claims 2"):
        decode_block(framed, 3, F32_2)


def test_decode_refuses_bool_bytes_other_than_0_1_naming_the_element() -> None:
    ok = np.frombuffer(bytes.fromhex("03000000 00000000 02000000 0100 01000000 01"), np.uint8)
    values, offsets = decode_block(ok, 3, BOOL)
    assert values.tolist() == [True, False, True] and offsets.tolist() == [0, 0, 2, 3]
    bad = np.frombuffer(bytes.fromhex("03000000 00000000 02000000 0100 01000000 ff"), np.uint8)
    with pytest.raises(FramingError, match=r"chunk 'x' for .*element 2 \(C order\).*0xff"):
        decode_block(bad, 3, BOOL, where="chunk 'x'")
    # Other element dtypes hold any byte.
    u8 = NDArray(dtype="uint8", shape=(None,))
    assert decode_block(bad, 3, u8)[0].tolist() == [1, 0, 255]


@settings(max_examples=60)
@given(ndarray_dtypes(), st.lists(st.integers(0, 4), max_size=12), st.data())
def test_plan_then_extract_a_run_into_a_slice(
    dtype: NDArray, rows: list[int], data: st.DataObject
) -> None:
    rng = np.random.default_rng(len(rows))
    cells = [random_cell(rng, dtype, r) for r in rows]
    values, offsets = _columns(cells, dtype)
    framed = encode_block(values, offsets, dtype)
    plan = plan_block(framed, len(cells), dtype)
    assert plan.rows().tolist() == rows
    a = data.draw(st.integers(0, len(rows)))
    b = data.draw(st.integers(a, len(rows)))
    lo, hi = int(offsets[a]), int(offsets[b])
    big = np.zeros((hi - lo + 3, *values.shape[1:]), dtype=values.dtype)
    extract_block(plan, a, b, big[1 : 1 + hi - lo])
    assert big[1 : 1 + hi - lo].tobytes() == values[lo:hi].tobytes()
    assert not big[0].any() and not big[1 + hi - lo :].any()  # nothing written outside


def test_extract_names_the_chunk_element_of_a_bad_bool_byte_and_checks_out() -> None:
    bad = np.frombuffer(bytes.fromhex("03000000 00000000 02000000 0100 01000000 ff"), np.uint8)
    plan = plan_block(bad, 3, BOOL, where="chunk 'x'")
    out = np.empty(2, bool)
    extract_block(plan, 1, 2, out)
    assert out.tolist() == [True, False]
    with pytest.raises(FramingError, match=r"chunk 'x' for .*element 2 \(C order\).*0xff"):
        extract_block(plan, 2, 3, np.empty(1, bool))
    with pytest.raises(TypeError, match="out must be a C-contiguous bool array"):
        extract_block(plan, 1, 2, np.empty(2, np.uint8))
    with pytest.raises(ValueError, match="out has 3 bytes but the elements hold 2"):
        extract_block(plan, 1, 2, np.empty(3, bool))
    with pytest.raises(FramingError, match=r"'vlen-ndarray' chunk 'y' for .*header claims 3"):
        plan_block(bad, 2, BOOL, where="chunk 'y'")


def test_encode_refuses_too_many_elements() -> None:
    values, offsets = _columns([np.zeros((0, 2), np.float32)] * 3, F32_2)
    with pytest.raises(FramingError, match=r"cannot encode a chunk 'c/1' of 3 elements for"):
        encode_block(values, offsets, F32_2, where="chunk 'c/1'", limit=2)


def test_encode_refuses_a_long_element_naming_its_rows() -> None:
    cells = [np.zeros((1, 2), np.float32), np.zeros((2, 2), np.float32)]
    message = r"element 1 \(C order\) of the chunk: its 2 rows are 16 bytes.*at most 15"
    with pytest.raises(FramingError, match=message):
        encode_block(*_columns(cells, F32_2), F32_2, limit=15)


def test_encode_refuses_values_or_offsets_of_the_wrong_form() -> None:
    with pytest.raises(TypeError, match=r"float32 array of shape \(total, 2\)"):
        encode_block(np.zeros((2, 2), np.float64), np.array([0, 2]), F32_2)
    with pytest.raises(TypeError, match=r"got float32 with shape \(2, 3\)"):
        encode_block(np.zeros((2, 3), np.float32), np.array([0, 2]), F32_2)
    with pytest.raises(ValueError, match="starting at 0"):
        encode_block(np.zeros((2, 2), np.float32), np.array([1, 2]), F32_2)
    with pytest.raises(FramingError, match="sum to"):
        encode_block(np.zeros((2, 2), np.float32), np.array([0, 1]), F32_2)


def test_offsets_from_rows() -> None:
    assert offsets_from_rows(np.array([2, 0, 3], np.int64)).tolist() == [0, 2, 2, 5]
    empty = offsets_from_rows(np.zeros(0, np.int64))
    assert empty.tolist() == [0] and empty.dtype == np.int64
