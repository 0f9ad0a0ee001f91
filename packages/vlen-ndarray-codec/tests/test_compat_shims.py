"""Tests for zarr_vlen_ndarray._compat: each shim gives one answer on every zarr release."""

from __future__ import annotations

from typing import Any

import zarr
from zarr.codecs import BytesCodec, ShardingCodec

from zarr_ndarray_dtype import NDArray
from zarr_vlen_ndarray import VlenNDArrayCodec
from zarr_vlen_ndarray._compat import (
    array_config,
    bytes_codec_endian,
    index_location,
    regular_chunk_shape,
    shard_index_nbytes,
    shard_index_spec,
)

I16 = NDArray(dtype="int16", shape=(None,))


def _sharded(location: str, endian: Any) -> ShardingCodec:
    return ShardingCodec(
        chunk_shape=(2,),
        codecs=[VlenNDArrayCodec()],
        index_codecs=[BytesCodec(endian=endian)],
        index_location=location,
    )


def test_bytes_codec_endian() -> None:
    assert bytes_codec_endian(BytesCodec(endian="big")) == "big"
    assert bytes_codec_endian(BytesCodec(endian="little")) == "little"
    assert bytes_codec_endian(BytesCodec(endian=None)) is None


def test_index_location() -> None:
    assert index_location(_sharded("start", "little")) == "start"
    assert index_location(_sharded("end", "little")) == "end"


def test_shard_index_size_and_spec() -> None:
    codec = _sharded("end", "little")
    assert shard_index_nbytes(codec, (3,)) == 3 * 16  # (offset, nbytes) u64 pairs, no checksum
    spec = shard_index_spec(codec, (3,))
    assert tuple(spec.shape) == (3, 2)


def test_regular_chunk_shape_and_config() -> None:
    array = zarr.create_array(
        {},
        shape=(10, 4),
        chunks=(5, 2),
        dtype=I16,
        serializer=VlenNDArrayCodec(),
        config={"write_empty_chunks": True},
    )
    assert regular_chunk_shape(array.metadata) == (5, 2)
    assert array_config(array._async_array).write_empty_chunks is True
