"""Tests for zarr_ndarray_dtype._cell_ids: views of an array through zarr's own pipeline."""

from __future__ import annotations

import gc
import threading
import warnings
from typing import Any

import numpy as np
import pytest
import zarr
from ndarray_dtype_testing import RequestLog, ToyCodec
from zarr.abc.store import SuffixByteRequest
from zarr.codecs import Crc32cCodec, ShardingCodec, TransposeCodec, ZstdCodec

from zarr_ndarray_dtype import NDArrayDType as NDArray
from zarr_ndarray_dtype import _cell_ids
from zarr_ndarray_dtype._cell_ids import (
    CellIds,
    DiscardWrites,
    chunk_name,
    keep_index,
    read_view,
    serializer_of,
    view,
    whole_shards,
)

F32_NN = NDArray(dtype="float32", shape=(None, None))


def _array(**kw: Any) -> Any:
    return zarr.create_array(
        {}, shape=(8, 6), dtype=F32_NN, serializer=ToyCodec(), compressors=ZstdCodec(level=1), **kw
    )


def test_a_read_hands_each_chunk_to_the_codec_and_answers_with_cell_ids() -> None:
    array = _array(chunks=(2, 3), shards=(4, 6))
    array[0:2, 0:3] = np.array([np.zeros((1, 1), "f4")] * 6 + [None], dtype=object)[:6].reshape(
        2, 3
    )
    seen: list[int] = []

    def decode(raw: np.ndarray, count: int) -> int:
        seen.append(count)
        return 100  # the chunk's base id

    ids = view(array, CellIds(decode, lambda ids, empty: None))[0:3, 1:3]
    assert seen == [6]  # one stored inner chunk; the others read as fill (id 0)
    assert ids[0:2, 0:2].tolist() == [[101, 102], [104, 105]]
    assert ids[2].tolist() == [0, 0]


def test_a_write_encodes_through_the_codec_and_a_dry_run_stores_nothing() -> None:
    array = _array(chunks=(2, 3), filters=[TransposeCodec(order=(1, 0))])
    chunks: list[list[int]] = []

    def encode(ids: np.ndarray, write_empty: bool) -> np.ndarray | None:
        chunks.append(ids.tolist())
        return None if not ids.any() else np.frombuffer(b"12345", np.uint8)

    ids = np.arange(1, 7, dtype=np.uint64).reshape(2, 3)
    view(array, CellIds(lambda raw, n: 1, encode), store=DiscardWrites)[0:2, 0:3] = ids
    assert sorted(array.store._store_dict) == ["zarr.json"]
    assert chunks == [[1, 4, 2, 5, 3, 6]]  # the chunk as the transpose codec hands it over
    view(array, CellIds(lambda raw, n: 1, encode))[0:2, 0:3] = ids
    assert "c/0/0" in array.store._store_dict


def test_serializer_and_chunk_names() -> None:
    sharded = _array(chunks=(2, 3), shards=(4, 6))
    assert isinstance(serializer_of(sharded.metadata), ToyCodec)
    assert isinstance(sharded.metadata.codecs[0], ShardingCodec)
    assert chunk_name(sharded.metadata, (7, 4)) == "inner chunk 3 of shard 'c/1/0'"
    plain = _array(chunks=(2, 3))
    assert chunk_name(plain.metadata, (5, 4)) == "chunk 'c/2/1'"


def _shards(store: Any = None, location: str = "end") -> Any:
    """16 cells of 1-3 items in two shards of four inner chunks (index at ``location``)."""
    array = zarr.create_array(
        {} if store is None else store, shape=(16,), chunks=(2,),
        dtype=NDArray(dtype="float32", shape=(None,)), serializer=ToyCodec(),
        shards={"shape": (8,), "index_location": location},
    )  # fmt: skip
    cells = np.empty(16, dtype=object)
    cells[:] = [np.arange(1 + i % 3, dtype="f4") for i in range(16)]
    array[:] = cells
    return array


@pytest.mark.parametrize("location", ["start", "end"])
def test_a_view_that_keeps_the_index_fetches_it_once_per_shard(location: str) -> None:
    store = RequestLog()
    array = _shards(store, location)
    keep = keep_index(array.metadata)
    assert keep is not None and keep_index(_array(chunks=(2, 3)).metadata) is None
    ids = view(array, CellIds(lambda raw, n: 2, lambda ids, empty: None), store=keep)
    store.asked.clear()
    parts = [ids[a : a + 2] for a in (0, 2, 4, 8, 12)]  # inner chunks: three of one shard
    assert [p.tolist() for p in parts] == [[2, 3]] * 5
    index = [
        r for _, r in store.asked
        if isinstance(r, SuffixByteRequest) or (location == "start" and r.start == 0)
    ]  # fmt: skip
    assert len(store.asked) == 2 + 5 and len(index) == 2, store.asked  # an index per shard


@pytest.mark.parametrize(
    ("location", "compressors", "order"),
    [
        ("start", [ZstdCodec(level=1)], "C"),
        ("end", [ZstdCodec(level=1), Crc32cCodec()], "F"),  # decoded in reverse: crc, zstd
        ("end", [], "C"),
    ],
)
def test_the_shard_view_reads_whole_shards_as_the_cells_view_does(
    location: str, compressors: list[Any], order: str, pipeline: str
) -> None:
    """Edge shards, an unwritten shard, inner chunks not stored: each cell comes from the
    same bytes and place; every shard is one request for the whole object (under zarr >= 3.3's
    FusedCodecPipeline too, which decodes shards synchronously, several at once)."""
    store = RequestLog()
    array = zarr.create_array(
        store, shape=(13, 7), chunks=(2, 3), shards={"shape": (4, 6), "index_location": location},
        dtype=F32_NN, serializer=ToyCodec(), compressors=compressors, config={"order": order},
    )  # fmt: skip
    cells = np.empty((13, 7), dtype=object)
    for i, j in np.ndindex(13, 7):  # rows 4-7 unwritten; inner chunks of only fill cells
        fill = 4 <= i < 8 or (i // 2 + j // 3) % 3 == 0
        cells[i, j] = np.zeros((0, 0), "f4") if fill else np.full((1, 1 + j % 2), i, "f4")
    array[...] = cells
    seen: list[tuple[bytes, int]] = []
    lock = threading.Lock()

    def decode(raw: np.ndarray, count: int) -> int:
        with lock:
            seen.append((raw.tobytes(), count))
            return 1000 * len(seen)

    def sources(ids: np.ndarray) -> list[Any]:
        flat = ids.reshape(-1).tolist()
        return [None if i == 0 else (seen[i // 1000 - 1], i % 1000) for i in flat]

    with read_view(array, decode) as views:
        shards = views.shards(array)
        assert shards is not None and views.shards(array) is shards  # built once
        store.asked.clear()
        whole = sources(shards[...])
        asked = [(k, r) for k, r in store.asked if k != "zarr.json"]
        assert sorted(k for k, _ in asked) == [f"c/{i}/{j}" for i in range(4) for j in range(2)]
        assert all(r is None for _, r in asked)  # each shard one request, for the whole object
        assert sum(1 for s in whole if s is None) == sum(c.size == 0 for c in cells.reshape(-1))
        seen.clear()
        assert sources(views.cells(array)[...]) == whole


def test_shards_whose_inner_chunks_are_not_serializer_and_bytes_codecs_have_no_shard_view() -> None:
    plain = _array(chunks=(2, 3), shards=(4, 6))
    assert whole_shards(plain.metadata) is plain.metadata.codecs[0]
    with warnings.catch_warnings():  # zarr warns that sharding then reads whole shards
        warnings.simplefilter("ignore")
        transposed = _array(chunks=(2, 3), shards=(4, 6), filters=[TransposeCodec(order=(1, 0))])
    assert whole_shards(transposed.metadata) is None  # the transpose runs outside the shards
    inner = ShardingCodec(chunk_shape=(2, 3), codecs=[TransposeCodec(order=(1, 0)), ToyCodec()])
    within = zarr.create_array(
        {}, shape=(8, 6), chunks=(4, 6), dtype=F32_NN, serializer=inner, compressors=None
    )
    assert whole_shards(within.metadata) is None
    ones = np.empty((2, 3), dtype=object)
    ones[...] = [[np.ones((1, 1), "f4")] * 3] * 2
    within[0:2, 0:3] = ones
    with read_view(within, lambda raw, n: 2) as views:  # ids laid out by zarr's transpose
        assert views.shards(within) is None
        assert views.cells(within)[0:2, 0:3].tolist() == [[2, 4, 6], [3, 5, 7]]


def _index_requests(store: RequestLog) -> int:
    return sum(isinstance(r, SuffixByteRequest) for _, r in store.asked)


def test_a_read_view_is_reused_one_read_at_a_time_and_forgets_the_indexes() -> None:
    store = RequestLog()
    array = _shards(store)
    sizes: list[int] = []

    def decode(raw: np.ndarray, count: int) -> int:
        sizes.append(count)
        return 2

    with read_view(array, decode) as first:
        store.asked.clear()
        assert first.cells(array)[0:4].tolist() == [2, 3, 2, 3]  # each inner chunk: base 2, then 3
        assert first.cells(array)[4:8].tolist() == [2, 3, 2, 3]
        assert _index_requests(store) == 1  # the shard's index once
        with read_view(array, lambda raw, n: 7) as second:  # a concurrent read: its own view
            assert second is not first and second.cells(array)[0:2].tolist() == [7, 8]
    with read_view(array, lambda raw, n: 9) as again:  # the next read takes a kept view ...
        assert again is first or again is second
        store.asked.clear()
        assert again.cells(array)[0:2].tolist() == [9, 10]
        assert _index_requests(store) == 1  # ... that fetches the index again (it may change)
    assert sizes == [2] * 4
    array.resize((24,))  # new metadata: a new view, which sees the new shape
    with read_view(array, lambda raw, n: 2) as grown:
        assert grown is not first and grown is not second and grown.cells(array).shape == (24,)


def test_a_read_view_that_fails_is_not_kept() -> None:
    array = _shards()
    with pytest.raises(OSError, match="the store failed"), read_view(array, lambda r, n: 2):
        raise OSError("the store failed")  # zarr's other tasks may still decode into it
    entry = _cell_ids._VIEWS.get(id(array))
    assert entry is None or not entry[1]


def test_concurrent_reads_of_one_array_each_see_their_own_chunks() -> None:
    array = _shards()
    got: dict[int, list[int]] = {}

    def read(base: int) -> None:
        for _ in range(20):
            with read_view(array, lambda raw, n: base) as ids:
                got[base] = ids.cells(array)[0:8].tolist()
                assert got[base] == [base, base + 1] * 4

    threads = [threading.Thread(target=read, args=(100 * k,)) for k in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == [100, 200, 300, 400]


def test_an_arrays_kept_views_go_with_it() -> None:
    array = _shards()
    with read_view(array, lambda raw, n: 2):
        pass
    key = id(array)
    assert key in _cell_ids._VIEWS
    del array
    gc.collect()
    assert key not in _cell_ids._VIEWS
