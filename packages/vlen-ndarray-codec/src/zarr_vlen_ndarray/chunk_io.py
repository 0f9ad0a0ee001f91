"""The stored chunks of a ``vlen-ndarray`` array: its layout, read and written below zarr's codec
pipeline.

The work is shared with ``zarr-ragged-ndarray`` and lives in :mod:`zarr_ndarray_dtype.chunk_store`
(the bytes -> bytes codecs, the chunk keys, shard indexes read whole or by byte range, shards
written as zarr's sharding codec writes them). This module binds it to the ``vlen-ndarray``
codec: the bytes read and written here are the framed chunks the codec produces.
"""

from __future__ import annotations

from typing import Any

from zarr_ndarray_dtype import chunk_store
from zarr_ndarray_dtype.chunk_store import ChunkLayout, ChunkWriter, Coords, read_chunks

# MISSING and ShardIndexError were this module's own; they live in the data type package now and
# stay importable from here.
from zarr_ndarray_dtype.shard_index import MISSING, ShardIndexError
from zarr_vlen_ndarray.codec import VlenNDArrayCodec

__all__ = [
    "MISSING",
    "ChunkLayout",
    "ChunkWriter",
    "Coords",
    "ShardIndexError",
    "layout_of",
    "read_chunks",
]


def layout_of(array: Any) -> ChunkLayout | None:
    """The chunk layout of a zarr array (any rank) whose serializer is ``vlen-ndarray``.

    None when the codec chain is one :mod:`~zarr_ndarray_dtype.chunk_store` does not handle;
    callers then use zarr's own object-array path.
    """
    return chunk_store.layout_of(array, VlenNDArrayCodec)
