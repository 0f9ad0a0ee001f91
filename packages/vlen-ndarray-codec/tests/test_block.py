"""Tests for zarr_vlen_ndarray.block: the one chunk encoder and decoder."""

from __future__ import annotations

import numpy as np
import pytest
from _zvn_helpers import ndarray_dtypes, random_cell
from hypothesis import given, settings
from hypothesis import strategies as st
from numcodecs import VLenBytes

from zarr_ndarray_dtype import NDArrayDType
from zarr_ndarray_dtype.blocks import FlatCells, offsets_of
from zarr_vlen_ndarray.block import FramedBlock, VlenBlocks, decode, encode
from zarr_vlen_ndarray.framing import FramingError

F32_2 = NDArrayDType(dtype="float32", shape=(None, 2))
BOOL = NDArrayDType(dtype="bool", shape=(None,))


def _cells(cells: list[np.ndarray], dtype: NDArrayDType) -> FlatCells:
    values = np.concatenate([c.reshape(-1) for c in cells] or [np.zeros(0)])
    sizes = np.array([c.size for c in cells], dtype=np.int64)
    return FlatCells(values.astype(dtype.item_dtype), offsets_of(sizes), None)


def _vlen_bytes(cells: list[np.ndarray]) -> bytes:
    payloads = np.empty(len(cells), dtype=object)
    payloads[:] = [c.tobytes() for c in cells]
    return bytes(VLenBytes().encode(payloads))


@settings(max_examples=100)
@given(ndarray_dtypes(), st.lists(st.integers(0, 4), max_size=12), st.integers(0, 2**32 - 1))
def test_round_trip_and_vlen_bytes_identity(
    dtype: NDArrayDType, rows: list[int], seed: int
) -> None:
    rng = np.random.default_rng(seed)
    cells = [random_cell(rng, dtype, r) for r in rows]
    given_cells = _cells(cells, dtype)
    framed = encode(given_cells, dtype)
    assert framed.dtype == np.uint8 and framed.ndim == 1
    assert framed.tobytes() == _vlen_bytes(cells)
    got = decode(framed, len(cells), dtype).cells()
    assert got.values.dtype == dtype.item_dtype
    assert got.values.tobytes() == given_cells.values.tobytes()
    assert got.offsets.dtype == np.int64
    assert got.offsets.tolist() == given_cells.offsets.tolist()
    # The decoded values are the decoder's own: making them read-only touches no one else's.
    got.values.flags.writeable = False
    assert not np.shares_memory(got.values, framed)


def test_decode_accepts_any_shape_of_bytes() -> None:
    framed = encode(
        _cells([np.ones((1, 2), np.float32), np.zeros((0, 2), np.float32)], F32_2), F32_2
    )
    block = decode(framed.reshape(1, -1), 2, F32_2)
    assert block.sizes.tolist() == [2, 0]


def test_decode_errors_name_the_chunk_and_the_data_type() -> None:
    framed = np.frombuffer(bytes.fromhex("02000000 04000000 00000000 00000000"), np.uint8)
    with pytest.raises(FramingError, match="not a whole number of 8-byte rows of float32") as exc:
        decode(framed, 2, F32_2, where="chunk 'c/7'")
    message = str(exc.value)
    assert message.startswith("cannot decode the 'vlen-ndarray' chunk 'c/7' for NDArrayDType(")
    assert isinstance(exc.value.__cause__, FramingError)
    with pytest.raises(FramingError, match=r"'vlen-ndarray' chunk for .*header claims 2"):
        decode(framed, 3, F32_2)


def test_decode_refuses_bool_bytes_other_than_0_1_naming_the_element() -> None:
    ok = np.frombuffer(bytes.fromhex("03000000 00000000 02000000 0100 01000000 01"), np.uint8)
    got = decode(ok, 3, BOOL).cells()
    assert got.values.tolist() == [True, False, True] and got.offsets.tolist() == [0, 0, 2, 3]
    bad = np.frombuffer(bytes.fromhex("03000000 00000000 02000000 0100 01000000 ff"), np.uint8)
    with pytest.raises(FramingError, match=r"chunk 'x' for .*element 2 \(C order\).*0xff"):
        decode(bad, 3, BOOL, where="chunk 'x'")
    # Other element dtypes hold any byte.
    u8 = NDArrayDType(dtype="uint8", shape=(None,))
    assert decode(bad, 3, u8).cells().values.tolist() == [1, 0, 255]


@settings(max_examples=60)
@given(ndarray_dtypes(), st.lists(st.integers(0, 4), max_size=12), st.data())
def test_a_block_copies_any_cells_to_any_places(
    dtype: NDArrayDType, rows: list[int], data: st.DataObject
) -> None:
    rng = np.random.default_rng(len(rows))
    cells = [random_cell(rng, dtype, r) for r in rows]
    framed = encode(_cells(cells, dtype), dtype)
    block = decode(framed, len(cells), dtype)
    assert (block.sizes // dtype.pattern.fixed_items).tolist() == rows
    picked = data.draw(st.lists(st.integers(0, len(rows) - 1), max_size=8) if rows else st.just([]))
    chosen = np.array(picked, dtype=np.intp)
    unit = dtype.item_dtype.itemsize
    sizes = block.sizes[chosen] * unit
    gap = 3  # bytes left between the cells, which nothing may write
    dst = offsets_of(sizes + gap)[:-1] + gap
    out = np.zeros(int(sizes.sum()) + gap * (chosen.size + 1), np.uint8)
    block.copy(chosen, out, dst)
    want = bytearray(out.size)
    for i, d in zip(picked, dst.tolist(), strict=True):
        payload = cells[i].tobytes()
        want[d : d + len(payload)] = payload
    assert out.tobytes() == bytes(want)
    if dtype.item_dtype.kind != "b":  # bool chunks are decoded whole at once (checked bytes)
        assert isinstance(block, FramedBlock)
    a = data.draw(st.integers(0, len(rows)))
    b = data.draw(st.integers(a, len(rows)))  # consecutive cells back to back from one offset
    run = b"".join(c.tobytes() for c in cells[a:b])
    out = np.zeros(len(run) + 2 * gap, np.uint8)
    block.copy(slice(a, b), out, gap)
    assert out.tobytes() == bytes(gap) + run + bytes(gap)


def test_encode_refuses_too_many_elements() -> None:
    cells = _cells([np.zeros((0, 2), np.float32)] * 3, F32_2)
    with pytest.raises(FramingError, match=r"cannot encode a chunk 'c/1' of 3 elements for"):
        encode(cells, F32_2, where="chunk 'c/1'", limit=2)


def test_encode_refuses_a_long_element_naming_its_rows() -> None:
    cells = _cells([np.zeros((1, 2), np.float32), np.zeros((2, 2), np.float32)], F32_2)
    message = r"element 1 \(C order\) of the chunk: its 2 rows are 16 bytes.*at most 15"
    with pytest.raises(FramingError, match=message):
        encode(cells, F32_2, limit=15)


def test_the_block_codec_reads_its_bound_at_every_encode() -> None:
    bound = [15]
    codec = VlenBlocks(limit=lambda: bound[0])
    cells = _cells([np.zeros((2, 2), np.float32)], F32_2)
    with pytest.raises(FramingError, match="at most 15"):
        codec.encode(cells, F32_2, "chunk")
    bound[0] = 16
    assert codec.decode(codec.encode(cells, F32_2, "chunk"), 1, F32_2, "chunk").sizes.tolist() == [
        4
    ]
