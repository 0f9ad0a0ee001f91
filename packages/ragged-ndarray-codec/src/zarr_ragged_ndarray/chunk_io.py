"""The stored chunks of a ``ragged-ndarray`` array: its layout, read and written below zarr's
codec pipeline.

The work is shared with ``zarr-vlen-ndarray`` and lives in :mod:`zarr_ndarray_dtype.chunk_store`
(the bytes -> bytes codecs, the chunk keys, shard indexes read whole or by byte range, shards
written as zarr's sharding codec writes them). This module binds it to the ``ragged-ndarray``
codec: the bytes read and written here are the chunks the codec produces (extents table, then
values).
"""

from __future__ import annotations

from typing import Any

from zarr_ndarray_dtype import chunk_store
from zarr_ndarray_dtype.chunk_store import ChunkLayout, ChunkWriter, read_chunks
from zarr_ragged_ndarray.codec import RaggedNDArrayCodec

__all__ = ["ChunkLayout", "ChunkWriter", "layout_of", "read_chunks"]


def layout_of(array: Any) -> ChunkLayout | None:
    """The chunk layout of a zarr array (any rank) whose serializer is ``ragged-ndarray``.

    None when the codec chain is one :mod:`~zarr_ndarray_dtype.chunk_store` does not handle;
    callers then use zarr's object-array path.
    """
    return chunk_store.layout_of(array, RaggedNDArrayCodec)
