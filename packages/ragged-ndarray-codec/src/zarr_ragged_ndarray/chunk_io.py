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
from zarr.codecs import BytesCodec, ShardingCodec
from zarr.core.array_spec import ArraySpec
from zarr.core.buffer import default_buffer_prototype

from zarr_ragged_ndarray._compat import array_config, index_location, run
from zarr_ragged_ndarray.codec import RaggedNDArrayCodec

__all__ = ["MISSING", "ChunkLayout", "ShardIndexError", "layout_of", "read_chunks", "write_chunks"]

#: Offset and length of an inner chunk that a shard does not hold.
MISSING = 2**64 - 1

Coords = tuple[int, ...]


class ShardIndexError(ValueError):
    """A shard or its index is corrupt (bad size, checksum, or a range outside the shard)."""


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
    if not codecs or not isinstance(codecs[0], RaggedNDArrayCodec):
        return None
    rest = tuple(codecs[1:])
    if not all(isinstance(c, BytesBytesCodec) for c in rest):
        return None
    return rest  # type: ignore[return-value]


def _index_is_plain(codec: ShardingCodec) -> bool:
    index_codecs = tuple(codec.index_codecs)
    return (
        bool(index_codecs)
        and isinstance(index_codecs[0], BytesCodec)
        and all(isinstance(c, BytesBytesCodec) for c in index_codecs[1:])
    )


def layout_of(array: Any) -> ChunkLayout | None:
    """The chunk layout of a zarr array whose serializer is ``ragged-ndarray``.

    Returns None for codec chains this module does not handle (array -> array codecs, nested
    sharding, index codecs other than ``bytes`` + bytes -> bytes, irregular chunk grids);
    callers then use zarr's object-array path.
    """
    async_array = getattr(array, "_async_array", array)
    metadata = async_array.metadata
    grid = getattr(metadata.chunk_grid, "chunk_shape", None)
    if grid is None or len(grid) != len(metadata.shape):
        return None
    grid_shape = tuple(int(n) for n in grid)
    codecs = tuple(metadata.codecs)
    shard = None
    if len(codecs) == 1 and isinstance(codecs[0], ShardingCodec):
        sharding = codecs[0]
        inner = _split_codecs(tuple(sharding.codecs))
        inner_shape = tuple(int(n) for n in sharding.chunk_shape)
        if (
            inner is None
            or not _index_is_plain(sharding)
            or len(inner_shape) != len(grid_shape)
            or any(g % i for g, i in zip(grid_shape, inner_shape, strict=True))
        ):
            return None
        per_shard = tuple(g // i for g, i in zip(grid_shape, inner_shape, strict=True))
        shard = ShardLayout(
            codec=sharding,
            chunks_per_shard=per_shard,
            index_nbytes=int(sharding._shard_index_size(per_shard)),
            index_at_start=index_location(sharding) == "start",
            index_spec=sharding._get_index_chunk_spec(per_shard),
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
        config=array_config(async_array),
        prototype=default_buffer_prototype(),
    )
    return ChunkLayout(async_array, chunk_shape, bytes_codecs, spec, shard)


# ----------------------------------------------------------------------------------- reading


async def _unwrap(layout: ChunkLayout, raw: Any, where: str) -> npt.NDArray[np.uint8]:
    """Undo the bytes -> bytes codecs (in reverse order) of one stored chunk."""
    buf = raw
    for codec in reversed(layout.bytes_codecs):
        try:
            buf = await codec._decode_single(buf, layout.spec)
        except (ValueError, RuntimeError, TypeError) as exc:
            name = codec.to_dict().get("name", type(codec).__name__)
            raise ValueError(
                f"{where}: the {name!r} codec cannot decode the stored bytes ({exc}); the chunk "
                "is corrupt or was written with other codecs"
            ) from exc
    return np.asarray(buf.as_numpy_array(), dtype=np.uint8).reshape(-1)


async def _decode_index(
    shard: ShardLayout, blob: npt.NDArray[np.uint8], key: str
) -> npt.NDArray[np.uint64]:
    """The ``(inner chunks, 2)`` offsets and lengths of one shard, checked against its size."""
    size = blob.size
    if size < shard.index_nbytes:
        raise ShardIndexError(
            f"shard {key!r} has {size} bytes, fewer than its {shard.index_nbytes}-byte index: "
            "the shard is truncated"
        )
    at = 0 if shard.index_at_start else size - shard.index_nbytes
    codecs = tuple(shard.codec.index_codecs)
    buf: Any = shard.index_spec.prototype.buffer.from_array_like(blob[at : at + shard.index_nbytes])
    for codec in reversed(codecs[1:]):
        try:
            buf = await codec._decode_single(buf, shard.index_spec)
        except (ValueError, RuntimeError, TypeError) as exc:
            raise ShardIndexError(f"shard {key!r}: its index does not decode ({exc})") from exc
    data = np.asarray(buf.as_numpy_array(), dtype=np.uint8).reshape(-1)
    inner = math.prod(shard.chunks_per_shard)
    if data.size != 16 * inner:
        raise ShardIndexError(
            f"shard {key!r}: its index holds {data.size} bytes after decoding, not the "
            f"{16 * inner} of {inner} (offset, nbytes) pairs"
        )
    endian = getattr(codecs[0], "endian", None)
    order = ">" if str(getattr(endian, "value", endian)) == "big" else "<"
    pairs = data.view(f"{order}u8").astype(np.uint64).reshape(inner, 2)
    present = ~((pairs[:, 0] == MISSING) & (pairs[:, 1] == MISSING))
    if present.any():
        starts, lengths = pairs[present, 0], pairs[present, 1]
        bad = (starts > size) | (lengths > np.uint64(size) - np.minimum(starts, np.uint64(size)))
        if bad.any():
            which = int(np.flatnonzero(present)[int(np.argmax(bad))])
            raise ShardIndexError(
                f"shard {key!r}: inner chunk {which} claims bytes [{int(pairs[which, 0])}, "
                f"+{int(pairs[which, 1])}) but the shard has {size} bytes; the shard index is "
                "corrupt"
            )
    return pairs


async def _get(layout: ChunkLayout, key: str) -> Any:
    return await (layout.array.store_path / key).get(prototype=default_buffer_prototype())


async def _read_plain(layout: ChunkLayout, coords: Coords) -> npt.NDArray[np.uint8] | None:
    key = layout.key(coords)
    buf = await _get(layout, key)
    if buf is None:
        return None
    return await _unwrap(layout, buf, f"chunk {key!r}")


async def _read_shard(
    layout: ChunkLayout, shard_coords: Coords, inner: list[int]
) -> list[npt.NDArray[np.uint8] | None]:
    assert layout.shard is not None
    key = layout.key(shard_coords)
    buf = await _get(layout, key)
    if buf is None:
        return [None] * len(inner)
    blob = np.asarray(buf.as_numpy_array(), dtype=np.uint8).reshape(-1)
    pairs = await _decode_index(layout.shard, blob, key)
    prototype = layout.spec.prototype

    async def one(local: int) -> npt.NDArray[np.uint8] | None:
        start, length = int(pairs[local, 0]), int(pairs[local, 1])
        if start == MISSING and length == MISSING:
            return None
        piece = prototype.buffer.from_array_like(blob[start : start + length])
        return await _unwrap(layout, piece, f"inner chunk {local} of shard {key!r}")

    return list(await asyncio.gather(*(one(i) for i in inner)))


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
    return run(_read_all(layout, list(chunks)))


# ----------------------------------------------------------------------------------- writing


async def _put(layout: ChunkLayout, coords: Coords, encoded: npt.NDArray[np.uint8] | None) -> None:
    store_path = layout.array.store_path / layout.key(coords)
    if encoded is None:
        await store_path.delete()
        return
    buf: Any = layout.spec.prototype.buffer.from_array_like(encoded)
    for codec in layout.bytes_codecs:
        buf = await codec._encode_single(buf, layout.spec)
    await store_path.set(buf)


async def _write_all(
    layout: ChunkLayout, items: Sequence[tuple[Coords, npt.NDArray[np.uint8] | None]]
) -> None:
    await asyncio.gather(*(_put(layout, c, encoded) for c, encoded in items))


def write_chunks(
    layout: ChunkLayout, items: Sequence[tuple[Coords, npt.NDArray[np.uint8] | None]]
) -> None:
    """Store encoded chunks ``(coords, bytes)`` through the bytes codecs; None deletes the chunk.

    Only for unsharded layouts.
    """
    if layout.shard is not None:
        raise NotImplementedError("write_chunks does not write into shards")
    run(_write_all(layout, items))
