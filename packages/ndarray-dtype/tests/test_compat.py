"""Tests for zarr_ndarray_dtype._compat: each shim gives one answer on every zarr release."""

from __future__ import annotations

from typing import Any

import pytest
import zarr
from zarr.codecs import BytesCodec, ShardingCodec

from zarr_ndarray_dtype._compat import (
    array_config,
    bytes_codec_endian,
    index_location,
    regular_chunk_shape,
    shard_index_nbytes,
    shard_index_spec,
    subchunk_write_order,
)


def _sharded(location: str, endian: Any) -> ShardingCodec:
    return ShardingCodec(
        chunk_shape=(2,),
        codecs=[BytesCodec(endian="little")],
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


def test_subchunk_write_order() -> None:
    codec = _sharded("end", "little")
    assert subchunk_write_order(codec) == "morton"  # every release's default
    if "subchunk_write_order" in ShardingCodec.__dataclass_fields__:  # zarr >= 3.3.0
        object.__setattr__(codec, "subchunk_write_order", "colexicographic")
        assert subchunk_write_order(codec) == "colexicographic"


def test_regular_chunk_shape_and_config() -> None:
    array = zarr.create_array(
        {}, shape=(10, 4), chunks=(5, 2), dtype="int16", config={"write_empty_chunks": True}
    )
    assert regular_chunk_shape(array.metadata) == (5, 2)
    assert array_config(array._async_array).write_empty_chunks is True


def test_rectilinear_grid_has_no_regular_chunk_shape() -> None:
    # zarr >= 3.2 has rectilinear chunk grids (experimental, off by default).
    v3 = pytest.importorskip("zarr.core.metadata.v3")
    if not hasattr(v3, "RectilinearChunkGridMetadata"):
        pytest.skip("this zarr release has no rectilinear chunk grids")
    with zarr.config.set({"array.rectilinear_chunks": True}):
        array = zarr.create_array({}, shape=(10,), chunks=[[4, 6]], dtype="int16")
        assert regular_chunk_shape(array.metadata) is None
