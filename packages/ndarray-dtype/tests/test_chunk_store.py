"""Tests for zarr_ndarray_dtype.chunk_store: chunks and shards read and written like zarr's own.

The module is generic over the array -> bytes codec, so these tests drive it with zarr's own
``bytes`` codec on plain int16 arrays (a chunk's serializer-level bytes are then its cells in C
order, edge chunks padded with the fill value) and compare every stored object with what zarr's
own writes leave, across shard grids, index placement, inner chunk orders, elision and codecs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import zarr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zarr.codecs import BytesCodec, Crc32cCodec, ShardingCodec, ZstdCodec

from zarr_ndarray_dtype.chunk_store import ChunkWriter, layout_of, read_chunks
from zarr_ndarray_dtype.grid import chunk_boxes, grid_indices, resolve
from zarr_ndarray_dtype.shard_index import ShardIndexError

FILL = 7
ORDERS = ("morton", "lexicographic", "colexicographic", "unordered")
HAS_WRITE_ORDER = "subchunk_write_order" in ShardingCodec.__dataclass_fields__  # zarr >= 3.3.0


def _create(store: Any, shape: Any, chunks: Any, shards: Any, **kw: Any) -> Any:
    order = kw.pop("order", "morton")
    array = zarr.create_array(
        store, shape=shape, chunks=chunks, shards=shards, dtype="int16", fill_value=FILL,
        serializer=BytesCodec(endian="little"), **kw,
    )  # fmt: skip
    if order != "morton":  # a per-instance setting, not metadata: set it on the open array
        object.__setattr__(array.metadata.codecs[0], "subchunk_write_order", order)
    return array


def _direct_write(array: Any, selection: Any, values: np.ndarray) -> None:
    """``array[selection] = values`` through chunk_store, as the codec packages do it."""
    layout = layout_of(array, BytesCodec)
    assert layout is not None
    shape = tuple(array.shape)
    box = resolve(selection, shape, "test")
    cs = layout.chunk_shape
    pieces = {p.coords: p for p in chunk_boxes(cs, box)}
    writer = ChunkWriter(layout, pieces, box.starts, box.stops)
    existing = writer.existing()
    flat_values = values.reshape(-1)
    for coords in writer.indices:
        piece = pieces[coords]
        old = existing.get(coords)
        chunk = (
            np.frombuffer(old, "<i2").copy()
            if old is not None
            else np.full(layout.chunk_len, FILL, "<i2")
        )
        chunk[grid_indices(piece.lo, piece.extents, cs)] = flat_values[
            grid_indices(piece.at, piece.extents, box.extents)
        ]
        if not layout.write_empty_chunks and (chunk == FILL).all():
            writer.add(coords, None)
        else:
            writer.add(coords, chunk.view(np.uint8))
    writer.flush()


def _stored(store: dict[str, Any]) -> dict[str, bytes]:
    return {k: v.to_bytes() for k, v in store.items()}


@st.composite
def _case(draw: st.DrawFn) -> dict[str, Any]:
    ndim = draw(st.integers(1, 3))
    inner = tuple(draw(st.integers(1, 3)) for _ in range(ndim))
    per = tuple(draw(st.integers(1, 3)) for _ in range(ndim))
    shards = tuple(i * p for i, p in zip(inner, per, strict=True))
    shape = tuple(draw(st.integers(1, 2 * s + 1)) for s in shards)
    kw: dict[str, Any] = {
        "config": {"write_empty_chunks": draw(st.booleans())},
        "compressors": draw(st.sampled_from([None, ZstdCodec(level=1), Crc32cCodec()])),
    }
    if HAS_WRITE_ORDER:
        kw["order"] = draw(st.sampled_from(ORDERS))
    location = draw(st.sampled_from(["start", "end"]))
    sharded = draw(st.booleans())
    # The first write fills the whole array; a shrinking resize may follow, which leaves cells
    # past the new end in edge chunks (zarr keeps or drops them by its rules, and so must we).
    smaller = tuple(draw(st.integers(1, n)) for n in shape)
    writes = [tuple(slice(0, n) for n in shape)]
    for _ in range(draw(st.integers(1, 3))):
        box = []
        for n in smaller:
            lo = draw(st.integers(0, n - 1))
            box.append(slice(lo, draw(st.integers(lo + 1, n))))
        writes.append(tuple(box))
    return {
        "shape": shape,
        "chunks": inner,
        "shards": {"shape": shards, "index_location": location} if sharded else None,
        "kw": kw,
        "resize": smaller if draw(st.booleans()) else None,
        "writes": writes,
        "seed": draw(st.integers(0, 2**16)),
    }


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_case())
def test_writes_leave_the_objects_zarr_leaves(case: dict[str, Any]) -> None:
    rng = np.random.default_rng(case["seed"])
    ref_store: dict[str, Any] = {}
    col_store: dict[str, Any] = {}
    args = (case["shape"], case["chunks"], case["shards"])
    ref = _create(ref_store, *args, **dict(case["kw"]))
    col = _create(col_store, *args, **dict(case["kw"]))
    for step, selection in enumerate(case["writes"]):
        if step == 1 and case["resize"] is not None:
            ref.resize(case["resize"])
            col.resize(case["resize"])
        extents = tuple(s.stop - s.start for s in selection)
        # Mostly fill, so whole inner chunks and shards turn out empty and get elided.
        values = np.where(rng.random(extents) < 0.5, FILL, rng.integers(-9, 9, extents))
        values = values.astype("int16")
        ref[selection] = values
        _direct_write(col, selection, values)
        assert _stored(col_store) == _stored(ref_store), f"after writing {selection}"
    layout = layout_of(col, BytesCodec)
    assert layout is not None
    shape = tuple(col.shape)
    grid = [range(-(-n // c)) for n, c in zip(shape, case["chunks"], strict=True)]
    coords = [tuple(int(i) for i in c) for c in np.ndindex(*(len(g) for g in grid))]
    want = ref[...]
    for c, got in zip(coords, read_chunks(layout, coords), strict=True):
        sel = tuple(slice(i * n, (i + 1) * n) for i, n in zip(c, case["chunks"], strict=True))
        part = want[sel]
        if got is None:
            assert (part == FILL).all()
        else:
            chunk = np.frombuffer(got, "<i2").reshape(case["chunks"])
            assert (chunk[tuple(slice(0, n) for n in part.shape)] == part).all()


def test_shards_are_written_in_morton_order() -> None:
    # 2 x 2 inner chunks: Morton order puts inner chunk (1, 0) (index place 2) second.
    store: dict[str, Any] = {}
    array = _create(store, (4, 4), (2, 2), (4, 4), compressors=None)
    _direct_write(array, (), np.arange(16, dtype="int16").reshape(4, 4))
    layout = layout_of(array, BytesCodec)
    assert layout is not None and layout.shard is not None
    assert layout.shard.order.tolist() == [0, 2, 1, 3]
    blob = store["c/0/0"].to_bytes()
    second = np.frombuffer(blob[8:16], "<i2")
    assert second.tolist() == [8, 9, 12, 13]  # rows 2-3, columns 0-1


def test_untouched_inner_chunks_keep_their_bytes_and_an_empty_shard_is_deleted() -> None:
    store: dict[str, Any] = {}
    array = _create(store, (8,), (2,), (8,), compressors=ZstdCodec(level=5))
    array[:] = np.arange(8, dtype="int16")
    before = store["c/0"].to_bytes()
    _direct_write(array, slice(2, 4), np.array([1, 1], "int16"))
    after = store["c/0"].to_bytes()
    assert before[:4] == after[:4] and len(before) == len(after)  # inner chunk 0, same place
    assert array[:].tolist() == [0, 1, 1, 1, 4, 5, 6, 7]
    _direct_write(array, (), np.full(8, FILL, "int16"))
    assert "c/0" not in store


def test_a_writer_must_receive_every_chunk() -> None:
    array = _create({}, (4,), (2,), (4,))
    layout = layout_of(array, BytesCodec)
    assert layout is not None
    writer = ChunkWriter(layout, [0, 1], (0,), (4,))
    writer.add(0, np.zeros(4, np.uint8))
    with pytest.raises(RuntimeError, match="still miss chunks of the write"):
        writer.flush()


def test_corrupt_shard_index_is_refused_before_writing() -> None:
    store: dict[str, Any] = {}
    array = _create(store, (4,), (2,), (4,))
    array[:] = np.arange(4, dtype="int16")
    blob = bytearray(store["c/0"].to_bytes())
    blob[-36:-28] = (2**40).to_bytes(8, "little")  # inner chunk 0 starts past the shard
    store["c/0"] = store["c/0"].from_bytes(bytes(blob))
    with pytest.raises(ShardIndexError, match="c/0"):  # the index checksum no longer matches
        _direct_write(array, slice(0, 1), np.array([1], "int16"))
    assert store["c/0"].to_bytes() == bytes(blob)


def test_layout_of_refuses_other_chains() -> None:
    array = zarr.create_array({}, shape=(4,), chunks=(2,), dtype="int16", filters=[])
    assert layout_of(array, ShardingCodec) is None  # the serializer is not the one asked for
    transposed = zarr.create_array(
        {}, shape=(4, 4), chunks=(2, 2), dtype="int16",
        filters=[zarr.codecs.TransposeCodec(order=(1, 0))],
    )  # fmt: skip
    assert layout_of(transposed, BytesCodec) is None  # an array -> array codec first
