"""Tests for zarr_ndarray_dtype._compat: each shim gives one answer on every zarr release."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import zarr
import zarr.core.codec_pipeline
from zarr.codecs import BytesCodec, Crc32cCodec, ShardingCodec, ZstdCodec

from zarr_ndarray_dtype._compat import (
    array_config,
    cuts_shards_in_sync,
    decode_bytes,
    endian_name,
    regular_chunk_shape,
    run,
)


def test_endian_name() -> None:
    assert endian_name(BytesCodec(endian="big").endian) == "big"
    assert endian_name(BytesCodec(endian="little").endian) == "little"
    assert endian_name(None) is None


def test_regular_chunk_shape_and_config() -> None:
    array = zarr.create_array(
        {}, shape=(10, 4), chunks=(5, 2), dtype="int16", config={"write_empty_chunks": True}
    )
    assert regular_chunk_shape(array.metadata) == (5, 2)
    assert array_config(array).write_empty_chunks is True
    assert array_config(zarr.open_array(array.store_path, mode="r")).write_empty_chunks is False


def test_rectilinear_grid_has_no_regular_chunk_shape() -> None:
    # zarr >= 3.2 has rectilinear chunk grids (experimental, off by default).
    v3 = pytest.importorskip("zarr.core.metadata.v3")
    if not hasattr(v3, "RectilinearChunkGridMetadata"):
        pytest.skip("this zarr release has no rectilinear chunk grids")
    with zarr.config.set({"array.rectilinear_chunks": True}):
        array = zarr.create_array({}, shape=(10,), chunks=[[4, 6]], dtype="int16")
        assert regular_chunk_shape(array.metadata) is None


def test_a_codec_without_a_synchronous_decode_decodes_in_one_batch_through_zarr() -> None:
    class Batched:  # a bytes -> bytes codec as zarr < 3.4 has them: asynchronous only
        def __init__(self) -> None:
            self.batches: list[int] = []

        async def decode(self, pairs: Any) -> list[Any]:
            pairs = list(pairs)
            self.batches.append(len(pairs))
            return [None if chunk is None else chunk + b"!" for chunk, _ in pairs]

    codec = Batched()
    assert run(decode_bytes([codec], [b"a", None, b"b"], "spec", 2)) == [b"a!", None, b"b!"]
    assert codec.batches == [3]
    # nor is a shard holding it cut without an event loop
    sharding = SimpleNamespace(
        index_codecs=(BytesCodec(), Crc32cCodec()),
        codecs=(BytesCodec(), codec),
        _shard_reader_from_bytes_sync=None,
    )
    assert not cuts_shards_in_sync(sharding)


def test_a_shard_is_cut_without_an_event_loop_from_zarr_3_3() -> None:
    array = zarr.create_array(
        {}, shape=(8, 6), chunks=(2, 3), shards=(4, 6), dtype="int16", compressors=ZstdCodec()
    )
    sharding = array.metadata.codecs[0]
    assert isinstance(sharding, ShardingCodec)
    # zarr >= 3.3.0 has a synchronous shard reader, and every codec of this array runs so
    sync = hasattr(sharding, "_shard_reader_from_bytes_sync")
    assert cuts_shards_in_sync(sharding) is sync
    assert sync is hasattr(zarr.core.codec_pipeline, "FusedCodecPipeline")
