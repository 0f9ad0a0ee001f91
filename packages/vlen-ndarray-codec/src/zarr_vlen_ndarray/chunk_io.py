"""Raw chunk bytes of a ``vlen-ndarray`` array: fetch, unwrap, wrap and store them.

This is the glue between zarr and the columnar layer. It reads what the codec pipeline would
hand to the ``vlen-ndarray`` codec (the framed bytes of each chunk, after undoing the
bytes -> bytes codecs such as ``zstd``) and stores framed bytes the way the pipeline would
(applying those codecs, writing the object under the key of zarr's own chunk key encoding).

Sharded arrays are read by fetching each needed shard once, decoding its index (``(offset,
nbytes)`` uint64 pairs through the index codecs, e.g. ``bytes`` + ``crc32c``; a missing inner
chunk is ``(2**64 - 1, 2**64 - 1)``) and cutting the inner chunks out (by byte range when a
read needs few of a shard's inner chunks). Shards of 1-D arrays are written whole, laid out as
zarr lays them out (see "writing shards" below).

A chunk is named by its grid index: an int for a 1-D array, a tuple of grid coordinates
(:data:`Coords`) for any rank. Inner chunks of a shard are found through the shard index in C
order over the shard's inner grid, as zarr stores it.

Fetching and the codecs run concurrently on zarr's event loop (zarr's store API is async; its
``zstd`` decode runs in worker threads).
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
from zarr.abc.store import RangeByteRequest, SuffixByteRequest
from zarr.codecs import ShardingCodec
from zarr.core.array_spec import ArraySpec
from zarr.core.buffer import default_buffer_prototype

from zarr_ndarray_dtype.chunk_codecs import (
    as_bytes,
    bytes_codecs_after,
    decode_shard_index,
    fetch,
    index_is_plain,
    store_chunks,
    unwrap_bytes,
    unwrap_inner,
    wrap_bytes,
)

# MISSING and ShardIndexError were this module's own; they live in the data type package now,
# shared with zarr-ragged-ndarray, and stay importable from here.
from zarr_ndarray_dtype.shard_index import (
    MISSING,
    ShardIndexError,
    index_region,
    inner_range,
    out_of_range,
)
from zarr_vlen_ndarray._compat import (
    array_config,
    bytes_codec_endian,
    index_location,
    regular_chunk_shape,
    run,
    shard_index_nbytes,
    shard_index_spec,
)
from zarr_vlen_ndarray.codec import VlenNDArrayCodec

__all__ = [
    "MISSING",
    "ChunkLayout",
    "Coords",
    "ShardIndexError",
    "ShardLayout",
    "layout_of",
    "read_chunks",
    "write_chunks",
]

#: A chunk's (or shard's) coordinates in its grid, one per array axis.
Coords = tuple[int, ...]
#: A chunk's grid index: an int (1-D arrays) or coordinates (any rank).
GridIndex = int | Coords


@dataclass(frozen=True)
class ShardLayout:
    """How inner chunks sit in a shard: ``shard_grid`` inner chunks per axis, ``chunks_per_shard``
    in all (for a 1-D array, ``chunks_per_shard`` inner chunks in a row)."""

    codec: ShardingCodec
    chunks_per_shard: int
    shard_grid: tuple[int, ...]
    index_nbytes: int
    index_at_start: bool
    index_spec: ArraySpec


@dataclass(frozen=True)
class ChunkLayout:
    """Where and how the chunks of one ``vlen-ndarray`` array are stored."""

    array: Any  # the AsyncArray (store path, metadata)
    chunk_len: int  # cells per chunk (the inner chunk when sharded); 1-D: the chunk's length
    bytes_codecs: tuple[BytesBytesCodec, ...]  # after vlen-ndarray, in encode order
    spec: ArraySpec  # the chunk spec handed to those codecs
    shard: ShardLayout | None
    chunk_shape: tuple[int, ...]  # cells per chunk along each axis (the inner chunk if sharded)

    @property
    def write_empty_chunks(self) -> bool:
        return bool(self.spec.config.write_empty_chunks)

    def key(self, grid_index: GridIndex) -> str:
        """The store key of chunk (or shard) ``grid_index`` under the array's key encoding."""
        encoding = self.array.metadata.chunk_key_encoding
        coords = (grid_index,) if isinstance(grid_index, int) else tuple(grid_index)
        return str(encoding.encode_chunk_key(coords))

    def in_shard(self, grid_index: GridIndex) -> tuple[GridIndex, int]:
        """``(shard grid index, inner chunk's place in the shard index)`` of a chunk."""
        assert self.shard is not None
        if isinstance(grid_index, int):
            return divmod(grid_index, self.shard.chunks_per_shard)
        per = self.shard.shard_grid
        shard = tuple(c // p for c, p in zip(grid_index, per, strict=True))
        local = tuple(c % p for c, p in zip(grid_index, per, strict=True))
        return shard, int(np.ravel_multi_index(local, per)) if per else 0


def _split_codecs(codecs: Sequence[Any]) -> tuple[BytesBytesCodec, ...] | None:
    """The bytes -> bytes codecs after a leading ``vlen-ndarray``; None for any other chain."""
    return bytes_codecs_after(codecs, VlenNDArrayCodec)


def layout_of(array: Any) -> ChunkLayout | None:
    """The chunk layout of a zarr array (of any rank) whose serializer is ``vlen-ndarray``.

    ``array`` is a ``zarr.Array`` or ``AsyncArray``. Returns None when the codec chain is one
    this module does not handle (array -> array codecs, nested sharding, an index with codecs
    other than ``bytes`` + bytes -> bytes); callers then use zarr's own object-array path.
    """
    async_array = getattr(array, "_async_array", array)
    metadata = async_array.metadata
    grid_shape = regular_chunk_shape(metadata)
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
            or not index_is_plain(sharding)
            or len(inner_shape) != len(grid_shape)
            or any(g % i for g, i in zip(grid_shape, inner_shape, strict=True))
        ):
            return None
        per_shard = tuple(g // i for g, i in zip(grid_shape, inner_shape, strict=True))
        shard = ShardLayout(
            codec=sharding,
            chunks_per_shard=math.prod(per_shard),
            shard_grid=per_shard,
            index_nbytes=shard_index_nbytes(sharding, per_shard),
            index_at_start=index_location(sharding) == "start",
            index_spec=shard_index_spec(sharding, per_shard),
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
    chunk_len = math.prod(chunk_shape)
    return ChunkLayout(async_array, chunk_len, bytes_codecs, spec, shard, chunk_shape)


# ----------------------------------------------------------------------------------- reading


async def _unwrap(layout: ChunkLayout, raw: Any, where: str) -> npt.NDArray[np.uint8]:
    """Undo the bytes -> bytes codecs (in reverse order) of one stored chunk."""
    return await unwrap_bytes(layout.bytes_codecs, layout.spec, raw, where)


async def _decode_index(
    layout: ChunkLayout, shard: ShardLayout, blob: npt.NDArray[np.uint8], key: str
) -> npt.NDArray[np.uint64]:
    """The ``(chunks_per_shard, 2)`` offsets and lengths of one shard, checked against its size."""
    raw = index_region(blob, shard.index_nbytes, shard.index_at_start, key)
    return await _parse_index(shard, raw, key, blob.size)


async def _parse_index(
    shard: ShardLayout, raw: npt.NDArray[np.uint8], key: str, size: int | None
) -> npt.NDArray[np.uint64]:
    """Decode the stored index bytes; check every range against the shard ``size`` if known."""
    if raw.size != shard.index_nbytes:
        raise ShardIndexError(
            f"shard {key!r} has {raw.size} bytes where its {shard.index_nbytes}-byte index "
            "belongs: the shard is truncated"
        )
    codecs = tuple(shard.codec.index_codecs)
    count = shard.chunks_per_shard
    return await decode_shard_index(codecs, shard.index_spec, raw, count, key, size)


async def _get(layout: ChunkLayout, key: str) -> npt.NDArray[np.uint8] | None:
    return await fetch(layout.array.store_path, key)


async def _read_plain(layout: ChunkLayout, index: GridIndex) -> npt.NDArray[np.uint8] | None:
    key = layout.key(index)
    blob = await fetch(layout.array.store_path, key)
    if blob is None:
        return None
    return await _unwrap(layout, blob, f"chunk {key!r}")


#: A read that needs fewer than this share of a shard's inner chunks fetches the index and the
#: inner chunks by byte range (2 + k requests) instead of the whole shard in one request.
_RANGED_SHARE = 0.25


async def _read_shard(
    layout: ChunkLayout, shard_index: GridIndex, locals_: list[int]
) -> list[npt.NDArray[np.uint8] | None]:
    shard = layout.shard
    assert shard is not None
    key = layout.key(shard_index)
    if len(locals_) < _RANGED_SHARE * shard.chunks_per_shard:
        return await _read_shard_ranged(layout, shard, key, locals_)
    blob = await _get(layout, key)
    if blob is None:
        return [None] * len(locals_)
    pairs = await _decode_index(layout, shard, blob, key)
    codecs, spec = layout.bytes_codecs, layout.spec
    reads = (unwrap_inner(blob, pairs, i, codecs, spec, key) for i in locals_)
    return list(await asyncio.gather(*reads))


async def _read_shard_ranged(
    layout: ChunkLayout, shard: ShardLayout, key: str, locals_: list[int]
) -> list[npt.NDArray[np.uint8] | None]:
    """Fetch the index, then only the needed inner chunks, each by byte range."""
    store_path = layout.array.store_path / key
    prototype = default_buffer_prototype()
    where = (
        RangeByteRequest(0, shard.index_nbytes)
        if shard.index_at_start
        else SuffixByteRequest(shard.index_nbytes)
    )
    raw_index = await store_path.get(prototype=prototype, byte_range=where)
    if raw_index is None:
        return [None] * len(locals_)
    raw = np.asarray(raw_index.as_numpy_array(), dtype=np.uint8).reshape(-1)
    pairs = await _parse_index(shard, raw, key, None)

    async def one(local: int) -> npt.NDArray[np.uint8] | None:
        found = inner_range(pairs, local)
        if found is None:
            return None
        start, length = found
        if start + length > 2**63 - 1:
            raise out_of_range(key, local, pairs, "fewer")
        got = await store_path.get(
            prototype=prototype, byte_range=RangeByteRequest(start, start + length)
        )
        data = None if got is None else np.asarray(got.as_numpy_array(), np.uint8).reshape(-1)
        if data is None or data.size != length:
            raise out_of_range(key, local, pairs, "fewer")
        buf = layout.spec.prototype.buffer.from_array_like(data)
        return await _unwrap(layout, buf, f"inner chunk {local} of shard {key!r}")

    return list(await asyncio.gather(*(one(i) for i in locals_)))


async def _read_all(
    layout: ChunkLayout, indices: Sequence[GridIndex]
) -> list[npt.NDArray[np.uint8] | None]:
    if layout.shard is None:
        return list(await asyncio.gather(*(_read_plain(layout, i) for i in indices)))
    where = [layout.in_shard(i) for i in indices]
    by_shard: dict[GridIndex, list[int]] = {}
    for s, local in where:
        by_shard.setdefault(s, []).append(local)
    shards = list(by_shard)
    results = await asyncio.gather(*(_read_shard(layout, s, by_shard[s]) for s in shards))
    found = {
        (s, local): chunk
        for s, chunks in zip(shards, results, strict=True)
        for local, chunk in zip(by_shard[s], chunks, strict=True)
    }
    return [found[w] for w in where]


def read_chunks(
    layout: ChunkLayout, indices: Sequence[GridIndex]
) -> list[npt.NDArray[np.uint8] | None]:
    """The framed bytes of each chunk in ``indices`` (None where the chunk is not stored).

    Raises ValueError when a stored chunk or shard does not decode through its codecs, and
    :class:`ShardIndexError` for a corrupt shard index.
    """
    return run(_read_all(layout, list(indices)))


# ----------------------------------------------------------------------------------- writing


def write_chunks(
    layout: ChunkLayout, items: Sequence[tuple[GridIndex, npt.NDArray[np.uint8] | None]]
) -> None:
    """Store framed chunks ``(grid index, bytes)`` through the bytes codecs; None deletes it.

    Only for unsharded layouts.
    """
    if layout.shard is not None:
        raise NotImplementedError("write_chunks does not write into shards")
    keyed = [(layout.key(index), framed) for index, framed in items]
    run(store_chunks(layout.array.store_path, layout.bytes_codecs, layout.spec, keyed))


# ------------------------------------------------------------------------- writing shards
#
# A shard of a 1-D array is written the way zarr's ``sharding_indexed`` codec writes it (3.1.0 ..
# 3.4.x; on a 1-D grid morton, lexicographic and colexicographic order coincide): the present inner
# chunks, each through the bytes -> bytes codecs, back to back in grid order; then the index of
# ``(offset, nbytes)`` uint64 pairs (``MISSING`` twice for an absent inner chunk), offsets absolute
# within the shard (shifted by the index size when the index comes first), serialized by the
# index's ``bytes`` codec and its bytes -> bytes codecs (e.g. ``crc32c``), at the start or the end.
# A shard without any present inner chunk is deleted. Inner chunks the write does not touch keep
# their stored bytes verbatim, as zarr's partial shard writes keep them.


async def _stored_inner(
    layout: ChunkLayout, shard_index: int
) -> list[npt.NDArray[np.uint8] | None]:
    shard = layout.shard
    assert shard is not None
    key = layout.key(shard_index)
    blob = await _get(layout, key)
    if blob is None:
        return [None] * shard.chunks_per_shard
    pairs = await _decode_index(layout, shard, blob, key)
    out: list[npt.NDArray[np.uint8] | None] = []
    for start, length in pairs.tolist():
        out.append(None if start == MISSING and length == MISSING else blob[start : start + length])
    return out


def read_stored_shards(
    layout: ChunkLayout, shard_indices: Sequence[int]
) -> list[list[npt.NDArray[np.uint8] | None]]:
    """The stored (still encoded) bytes of every inner chunk of each shard; None where absent.

    Raises :class:`ShardIndexError` for a corrupt shard index.
    """

    async def gather() -> list[list[npt.NDArray[np.uint8] | None]]:
        return list(await asyncio.gather(*(_stored_inner(layout, s) for s in shard_indices)))

    return run(gather())


def unwrap_stored(
    layout: ChunkLayout, stored: npt.NDArray[np.uint8], where: str
) -> npt.NDArray[np.uint8]:
    """The framed bytes of one stored inner chunk (its bytes -> bytes codecs undone)."""
    buf = layout.spec.prototype.buffer.from_array_like(stored)
    return run(_unwrap(layout, buf, where))


async def _wrap(layout: ChunkLayout, framed: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    return as_bytes(await wrap_bytes(layout.bytes_codecs, layout.spec, framed))


async def _encode_index(shard: ShardLayout, pairs: npt.NDArray[np.uint64]) -> Any:
    """The shard index as stored: the ``bytes`` codec's byte order, then its bytes codecs."""
    codecs = tuple(shard.codec.index_codecs)
    order = ">" if bytes_codec_endian(codecs[0]) == "big" else "<"
    buf: Any = shard.index_spec.prototype.buffer.from_bytes(pairs.astype(f"{order}u8").tobytes())
    for codec in codecs[1:]:
        buf = await codec._encode_single(buf, shard.index_spec)
    return buf


async def _put_shard(
    layout: ChunkLayout,
    shard_index: int,
    inner: Sequence[npt.NDArray[np.uint8] | None],
    fresh: Sequence[bool],
) -> None:
    shard = layout.shard
    assert shard is not None
    store_path = layout.array.store_path / layout.key(shard_index)
    parts = list(
        await asyncio.gather(
            *(
                _wrap(layout, chunk) if chunk is not None and is_new else _same(chunk)
                for chunk, is_new in zip(inner, fresh, strict=True)
            )
        )
    )
    pairs = np.full((shard.chunks_per_shard, 2), MISSING, dtype=np.uint64)
    present = [i for i, part in enumerate(parts) if part is not None]
    if not present:
        await store_path.delete()
        return
    lengths = np.array([parts[i].size for i in present], dtype=np.uint64)  # type: ignore[union-attr]
    starts = np.zeros(len(present), dtype=np.uint64)
    np.cumsum(lengths[:-1], out=starts[1:])
    if shard.index_at_start:
        starts += np.uint64(shard.index_nbytes)
    pairs[present, 0] = starts
    pairs[present, 1] = lengths
    index = await _encode_index(shard, pairs)
    index_bytes = np.asarray(index.as_numpy_array(), dtype=np.uint8).reshape(-1)
    if index_bytes.size != shard.index_nbytes:
        raise ShardIndexError(
            f"the shard index encodes to {index_bytes.size} bytes, not the "
            f"{shard.index_nbytes} its codecs promise; this index codec chain is not supported"
        )
    pieces = [parts[i] for i in present]
    pieces.insert(0, index_bytes) if shard.index_at_start else pieces.append(index_bytes)
    blob = np.concatenate(pieces)  # type: ignore[arg-type]
    await store_path.set(layout.spec.prototype.buffer.from_array_like(blob))


async def _same(chunk: npt.NDArray[np.uint8] | None) -> npt.NDArray[np.uint8] | None:
    return chunk


def write_shards(
    layout: ChunkLayout,
    items: Sequence[tuple[int, Sequence[npt.NDArray[np.uint8] | None], Sequence[bool]]],
) -> None:
    """Store whole shards ``(shard_index, inner, fresh)``.

    ``inner[i]`` is inner chunk ``i`` of the shard: framed bytes when ``fresh[i]`` (the bytes ->
    bytes codecs are applied here, concurrently), the stored bytes of an untouched inner chunk
    otherwise, or None for an absent (elided or never written) inner chunk. A shard without any
    inner chunk is deleted.
    """
    if layout.shard is None:
        raise ValueError("write_shards needs a sharded layout; use write_chunks")
    if len(layout.chunk_shape) != 1:
        raise NotImplementedError(
            f"write_shards lays out shards of 1-D arrays only, not of chunk shape "
            f"{layout.chunk_shape} (zarr orders an N-d shard's inner chunks along a Morton "
            "curve); write N-d sharded arrays through zarr"
        )

    async def put_all() -> None:
        await asyncio.gather(*(_put_shard(layout, s, inner, fresh) for s, inner, fresh in items))

    run(put_all())
