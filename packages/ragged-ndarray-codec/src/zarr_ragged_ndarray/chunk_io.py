"""Raw chunk bytes of an N-d ``ragged-ndarray`` array: fetch, unwrap, wrap and store them.

The glue between zarr and the columnar layer. It reads what the codec pipeline would hand to the
``ragged-ndarray`` codec (each chunk's bytes after undoing the bytes -> bytes codecs such as
``zstd``) and stores encoded chunks the way the pipeline would (applying those codecs, under the
key of the array's own chunk key encoding).

Sharded arrays are read by fetching each needed shard once, decoding its index (``(offset,
nbytes)`` uint64 pairs in C order over the inner chunk grid, through the index codecs, e.g.
``bytes`` + ``crc32c``; a missing inner chunk is ``(2**64 - 1, 2**64 - 1)``) and cutting the inner
chunks out. Writing into shards is not done here (:mod:`zarr_ragged_ndarray.columnar` writes
sharded arrays through zarr's object path). Fetches and codecs run concurrently on zarr's loop.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from zarr.abc.codec import BytesBytesCodec
from zarr.codecs import ShardingCodec
from zarr.core.array_spec import ArraySpec
from zarr.core.buffer import default_buffer_prototype

from zarr_ndarray_dtype import _compat, chunk_codecs
from zarr_ndarray_dtype.shard_index import MISSING, ShardIndexError, index_region
from zarr_ragged_ndarray.codec import RaggedNDArrayCodec

__all__ = ["MISSING", "ChunkLayout", "ShardIndexError", "layout_of", "read_chunks", "write_chunks"]

Coords = tuple[int, ...]


@dataclass(frozen=True)
class ShardLayout:
    """How inner chunks sit in a shard: ``chunks_per_shard`` inner chunks per axis."""

    codec: ShardingCodec
    chunks_per_shard: tuple[int, ...]
    index_nbytes: int
    index_at_start: bool
    index_spec: ArraySpec


@dataclass(frozen=True)
class ChunkLayout:
    """Where and how the chunks of one ``ragged-ndarray`` array are stored."""

    array: Any  # the AsyncArray (store path, metadata)
    chunk_shape: tuple[int, ...]  # cells per chunk along each axis (the inner chunk if sharded)
    bytes_codecs: tuple[BytesBytesCodec, ...]  # after ragged-ndarray, in encode order
    spec: ArraySpec  # the chunk spec handed to those codecs
    shard: ShardLayout | None

    @property
    def chunk_count(self) -> int:
        return math.prod(self.chunk_shape)

    @property
    def write_empty_chunks(self) -> bool:
        return bool(self.spec.config.write_empty_chunks)

    def key(self, coords: Coords) -> str:
        """The store key of the chunk (or shard) at grid ``coords``."""
        return str(self.array.metadata.chunk_key_encoding.encode_chunk_key(coords))


def _split_codecs(codecs: Sequence[Any]) -> tuple[BytesBytesCodec, ...] | None:
    """The bytes -> bytes codecs after a leading ``ragged-ndarray``; None for any other chain."""
    return chunk_codecs.bytes_codecs_after(codecs, RaggedNDArrayCodec)


def layout_of(array: Any) -> ChunkLayout | None:
    """The chunk layout of a zarr array whose serializer is ``ragged-ndarray``.

    Returns None for codec chains this module does not handle (array -> array codecs, nested
    sharding, index codecs other than ``bytes`` + bytes -> bytes, irregular chunk grids);
    callers then use zarr's object-array path.
    """
    async_array = getattr(array, "_async_array", array)
    metadata = async_array.metadata
    grid_shape = _compat.regular_chunk_shape(metadata)
    if grid_shape is None or len(grid_shape) != len(metadata.shape):
        return None
    codecs = tuple(metadata.codecs)
    shard = None
    if len(codecs) == 1 and isinstance(codecs[0], ShardingCodec):
        sharding = codecs[0]
        inner = _split_codecs(tuple(sharding.codecs))
        inner_shape = tuple(int(n) for n in sharding.chunk_shape)
        if (
            inner is None
            or not chunk_codecs.index_is_plain(sharding)
            or len(inner_shape) != len(grid_shape)
            or any(g % i for g, i in zip(grid_shape, inner_shape, strict=True))
        ):
            return None
        per_shard = tuple(g // i for g, i in zip(grid_shape, inner_shape, strict=True))
        shard = ShardLayout(
            codec=sharding,
            chunks_per_shard=per_shard,
            index_nbytes=_compat.shard_index_nbytes(sharding, per_shard),
            index_at_start=_compat.index_location(sharding) == "start",
            index_spec=_compat.shard_index_spec(sharding, per_shard),
        )
        bytes_codecs, chunk_shape = inner, inner_shape
    else:
        found = _split_codecs(codecs)
        if found is None:
            return None
        bytes_codecs, chunk_shape = found, grid_shape
    spec = ArraySpec(
        shape=chunk_shape,
        dtype=metadata.data_type,
        fill_value=metadata.fill_value,
        config=_compat.array_config(async_array),
        prototype=default_buffer_prototype(),
    )
    return ChunkLayout(async_array, chunk_shape, bytes_codecs, spec, shard)


# ----------------------------------------------------------------------------------- reading


async def _unwrap(layout: ChunkLayout, raw: Any, where: str) -> npt.NDArray[np.uint8]:
    """Undo the bytes -> bytes codecs (in reverse order) of one stored chunk."""
    return await chunk_codecs.unwrap_bytes(layout.bytes_codecs, layout.spec, raw, where)


async def _decode_index(
    shard: ShardLayout, blob: npt.NDArray[np.uint8], key: str
) -> npt.NDArray[np.uint64]:
    """The ``(inner chunks, 2)`` offsets and lengths of one shard, checked against its size."""
    raw = index_region(blob, shard.index_nbytes, shard.index_at_start, key)
    count = math.prod(shard.chunks_per_shard)
    codecs = tuple(shard.codec.index_codecs)
    return await chunk_codecs.decode_shard_index(
        codecs, shard.index_spec, raw, count, key, blob.size
    )


async def _read_plain(layout: ChunkLayout, coords: Coords) -> npt.NDArray[np.uint8] | None:
    key = layout.key(coords)
    blob = await chunk_codecs.fetch(layout.array.store_path, key)
    if blob is None:
        return None
    return await _unwrap(layout, blob, f"chunk {key!r}")


async def _read_shard(
    layout: ChunkLayout, shard_coords: Coords, inner: list[int]
) -> list[npt.NDArray[np.uint8] | None]:
    assert layout.shard is not None
    key = layout.key(shard_coords)
    blob = await chunk_codecs.fetch(layout.array.store_path, key)
    if blob is None:
        return [None] * len(inner)
    pairs = await _decode_index(layout.shard, blob, key)
    codecs, spec = layout.bytes_codecs, layout.spec
    reads = (chunk_codecs.unwrap_inner(blob, pairs, i, codecs, spec, key) for i in inner)
    return list(await asyncio.gather(*reads))


async def _read_all(
    layout: ChunkLayout, chunks: Sequence[Coords]
) -> list[npt.NDArray[np.uint8] | None]:
    if layout.shard is None:
        return list(await asyncio.gather(*(_read_plain(layout, c) for c in chunks)))
    per = layout.shard.chunks_per_shard
    by_shard: dict[Coords, list[int]] = {}
    for coords in chunks:
        shard_coords = tuple(c // p for c, p in zip(coords, per, strict=True))
        local = tuple(c % p for c, p in zip(coords, per, strict=True))
        flat = int(np.ravel_multi_index(local, per)) if per else 0
        by_shard.setdefault(shard_coords, []).append(flat)
    shards = list(by_shard)
    results = await asyncio.gather(*(_read_shard(layout, s, by_shard[s]) for s in shards))
    found: dict[tuple[Coords, int], npt.NDArray[np.uint8] | None] = {
        (s, local): chunk
        for s, chunks_of in zip(shards, results, strict=True)
        for local, chunk in zip(by_shard[s], chunks_of, strict=True)
    }
    out = []
    for coords in chunks:
        shard_coords = tuple(c // p for c, p in zip(coords, per, strict=True))
        local = tuple(c % p for c, p in zip(coords, per, strict=True))
        out.append(found[(shard_coords, int(np.ravel_multi_index(local, per)) if per else 0)])
    return out


def read_chunks(
    layout: ChunkLayout, chunks: Sequence[Coords]
) -> list[npt.NDArray[np.uint8] | None]:
    """The codec-level bytes of each chunk at grid ``chunks`` (None where not stored).

    Raises ValueError when a stored chunk does not decode through its bytes codecs and
    :class:`ShardIndexError` for a corrupt shard index.
    """
    return _compat.run(_read_all(layout, list(chunks)))


# ----------------------------------------------------------------------------------- writing


def write_chunks(
    layout: ChunkLayout, items: Sequence[tuple[Coords, npt.NDArray[np.uint8] | None]]
) -> None:
    """Store encoded chunks ``(coords, bytes)`` through the bytes codecs; None deletes the chunk.

    Only for unsharded layouts.
    """
    if layout.shard is not None:
        raise NotImplementedError("write_chunks does not write into shards")
    keyed = [(layout.key(coords), encoded) for coords, encoded in items]
    codecs, spec = layout.bytes_codecs, layout.spec
    _compat.run(chunk_codecs.store_chunks(layout.array.store_path, codecs, spec, keyed))
