"""Tests for zarr_ragged_ndarray.layout: every refusal, a mutation fuzz test."""

from __future__ import annotations

import numpy as np
import pytest
from _zrn_helpers import chunks_of_cells
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_ndarray_dtype import NDArrayDType
from zarr_ragged_ndarray.codec import RaggedBlocks, RaggedNDArrayCodec
from zarr_ragged_ndarray.layout import (
    U32_MAX,
    RaggedLayoutError,
    alignment,
    decode_layout,
    element_items,
    encode_layout,
    values_start,
)

# The registry's vectors (registry/examples/ragged-ndarray.json) run in test_registry.py.


def test_alignment_and_values_start() -> None:
    assert [alignment(s) for s in (1, 2, 4, 8, 16)] == [1, 2, 4, 8, 8]
    assert values_start(1, 2, 8) == 16  # 4 + 8 = 12 -> 16
    assert values_start(1, 1, 8) == 8
    assert values_start(3, 1, 1) == 16
    assert values_start(0, 2, 16) == 8


def test_encode_refuses_extents_beyond_u32() -> None:
    with pytest.raises(RaggedLayoutError, match=r"element 1 .* variable extent 4294967296"):
        encode_layout(np.array([[1], [U32_MAX + 1]]), np.zeros(0, np.uint8), 1)


def test_element_items_never_wraps() -> None:
    table = np.array([[U32_MAX, U32_MAX, U32_MAX], [0, U32_MAX, U32_MAX], [2, 3, 1]], np.uint32)
    items = element_items(table, 5, cap=100)
    assert items.tolist() == [101, 0, 30]
    assert element_items(table[:, :1], 2**40, cap=10).tolist() == [11, 0, 11]


@pytest.mark.parametrize("slack", [0, -1], ids=["plain-products", "checked-products"])
def test_element_items_both_paths_agree(slack: int) -> None:
    # max extent ** k * fixed_items == cap takes the plain products; one less, the checked loop.
    table = np.array([[4, 4], [0, 3], [2, 1], [4, 3]], np.uint32)
    cap = 4 * 4 * 3 + slack
    items = element_items(table, 3, cap=cap)
    assert items.dtype == np.uint64
    expected = [min(v, cap + 1) for v in (np.prod(table, axis=1) * 3).tolist()]
    assert items.tolist() == expected


def test_decode_does_not_allocate_from_the_header() -> None:
    # count matches a huge chunk shape but the table is absent: refused before any allocation
    raw = np.frombuffer(np.uint32(2**31).tobytes(), np.uint8)
    with pytest.raises(RaggedLayoutError, match="truncated table"):
        decode_layout(raw, 2**31, 3, 4, 1)


@pytest.mark.parametrize("pattern", [(None, None, None), (None, 3, None, None)])
def test_decode_refuses_empty_elements_numpy_cannot_shape(
    pattern: tuple[int | None, ...],
) -> None:
    # (0, 2**32 - 1, 2**32 - 1) float32 has no items, but breaks the element-size limit.
    dtype = NDArrayDType(dtype="float32", shape=pattern)
    extents = [0, U32_MAX, U32_MAX]
    raw = np.array([1, *extents], dtype="<u4").view(np.uint8)
    with pytest.raises(RaggedLayoutError, match=r"numpy's limit .* \(SPEC 5\.4/8\)"):
        RaggedNDArrayCodec.decode_chunk(raw, (1,), dtype)
    # Within the limit, an empty element with big extents decodes.
    raw = np.array([1, *extents[:-1], 2**20], dtype="<u4").view(np.uint8)
    cell = RaggedNDArrayCodec.decode_chunk(raw, (1,), dtype)[0]
    assert cell.size == 0
    assert cell.shape[-1] == 2**20


def test_unaligned_buffer_gives_aligned_values() -> None:
    dtype = NDArrayDType(dtype="float64", shape=(None, None))
    cells = np.empty(1, dtype=object)
    cells[0] = np.arange(6, dtype=np.float64).reshape(2, 3)
    encoded = RaggedNDArrayCodec.encode_chunk(cells, dtype).tobytes()
    backing = np.frombuffer(b"\0" + encoded, np.uint8)[1:]
    values, offsets, shapes = RaggedBlocks().decode(backing, 1, dtype, "test").cells()
    assert values.flags.aligned
    assert values.tolist() == list(range(6))
    assert shapes is not None and shapes.tolist() == [[2, 3]]
    assert offsets.tolist() == [0, 6]


@settings(max_examples=200)
@given(chunks_of_cells(), st.data())
def test_fuzz_mutated_chunks(case: tuple[NDArrayDType, np.ndarray], data: st.DataObject) -> None:
    """Every mutation of a valid chunk decodes to what its bytes say, or raises the one error."""
    dtype, cells = case
    raw = bytearray(RaggedNDArrayCodec.encode_chunk(cells, dtype).tobytes())
    kind = data.draw(st.sampled_from(["flip", "truncate", "extend", "set_u32"]))
    if kind == "flip" and raw:
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] ^= data.draw(st.integers(1, 255))
    elif kind == "truncate":
        del raw[data.draw(st.integers(0, len(raw))) :]
    elif kind == "extend":
        raw += bytes(data.draw(st.binary(min_size=1, max_size=9)))
    elif kind == "set_u32" and len(raw) >= 4:
        at = data.draw(st.integers(0, (len(raw) - 4) // 4)) * 4
        value = data.draw(st.sampled_from([0, 1, 2, 255, 2**16, 2**31, U32_MAX]))
        raw[at : at + 4] = value.to_bytes(4, "little")
    blob = np.frombuffer(bytes(raw), np.uint8)
    try:
        decoded = RaggedNDArrayCodec.decode_chunk(blob, cells.shape, dtype)
    except RaggedLayoutError:
        return
    # Accepted: re-encoding the decoded cells must give back exactly the mutated bytes.
    assert RaggedNDArrayCodec.encode_chunk(decoded, dtype).tobytes() == bytes(raw)
