"""Chunk bytes as the Zarr v3 spec lays them out, read and written without a codec pipeline:
keys, the array's bytes -> bytes codecs, and one level of sharding (the index, inner chunks,
their write order). The columnar engine's only I/O, so it runs under any pipeline zarr is
configured with.
"""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import zarr
from zarr.abc.codec import BytesBytesCodec
from zarr.abc.store import RangeByteRequest, SuffixByteRequest
from zarr.buffer import default_buffer_prototype
from zarr.codecs import BytesCodec, ShardingCodec

from zarr_ndarray_dtype import _compat
from zarr_ndarray_dtype._grid import Shape, morton
from zarr_ndarray_dtype.blocks import BlockCodec
from zarr_ndarray_dtype.codecs import FixedBlocks
from zarr_ndarray_dtype.dtype import FillCell, NDArrayDType
from zarr_ndarray_dtype.errors import StoredChunkError

__all__ = ["ABSENT", "Layout", "Shard", "block_codec_of", "map_threads"]

#: An inner chunk absent from a shard, in its index (offset and length both).
ABSENT = 2**64 - 1
#: Thread jobs per core that a batch's chunks are decoded, copied or encoded in (runs of
#: chunks, a few per core so that cores that finish early take another).
JOBS_PER_CORE = 4

Raw = npt.NDArray[np.uint8]


def block_codec_of(serializer: Any) -> BlockCodec | None:
    """The block codec of an ``ndarray`` array's serializer (zarr's ``bytes`` is all-fixed)."""
    codec: BlockCodec | None = getattr(serializer, "block_codec", None)
    if codec is None and isinstance(serializer, BytesCodec):
        return FixedBlocks()
    return codec


async def map_threads(
    fn: Callable[[Any], Any], items: Sequence[Any], *, aside: bool = False
) -> list[Any]:
    """``fn`` over ``items`` in order, in worker threads, a few runs of items per core (the
    kernels and compressors release the GIL); on the loop's thread for one item or one core,
    unless ``aside`` (the loop has other work meanwhile)."""
    cores = os.cpu_count() or 1
    if not items or ((len(items) == 1 or cores == 1) and not aside):
        return [fn(x) for x in items]
    size = -(-len(items) // (cores * JOBS_PER_CORE))
    runs = [items[i : i + size] for i in range(0, len(items), size)]
    done = await asyncio.gather(
        *(asyncio.to_thread(lambda r: [fn(x) for x in r], r) for r in runs), return_exceptions=True
    )
    failed = next((e for e in done if isinstance(e, BaseException)), None)
    if failed is not None:  # the first failing item in order, whichever thread failed first
        raise failed
    return [result for run in done for result in run]  # type: ignore[union-attr]


@dataclass(frozen=True)
class Shard:
    """The sharding of an array: the inner grid, the index's codecs and place."""

    per: Shape  # inner chunks along every axis of a shard
    index_dtype: np.dtype[Any]  # the index's uint64, in its byte order
    index_chain: tuple[Any, ...]  # bytes -> bytes codecs of the index
    index_nbytes: int
    at_start: bool
    order: list[Shape]  # the inner chunks in the order their bytes are written


@dataclass(frozen=True)
class Layout:
    """Where and how an ``ndarray`` array's chunks are stored, resolved once per call."""

    dtype: NDArrayDType
    codec: BlockCodec
    shape: Shape
    chunks: Shape  # the stored objects' grid (shards when sharded)
    inner: Shape  # the chunks the block codec decodes
    chain: tuple[Any, ...]  # bytes -> bytes codecs after the serializer
    shard: Shard | None
    path: Any  # the array's StorePath
    key: Callable[[Shape], str]  # chunk grid index -> key
    spec: Any  # zarr's ArraySpec of one (inner) chunk
    write_empty: bool
    coalesce: tuple[int, int]  # inner chunks this far apart, up to this long, one request
    fill: FillCell
    name: str  # the array's path, for messages

    @classmethod
    def of(cls, array: Any) -> Layout | None:
        """The layout of an ``ndarray`` array whose serializer has a block codec; None where
        the engine leaves the chunks to zarr (an irregular grid, ``transpose``, codecs around
        sharding, nested sharding)."""
        metadata = array.metadata
        chunks = getattr(metadata.chunk_grid, "chunk_shape", None)
        codecs = tuple(metadata.codecs)
        sharding = codecs[0] if isinstance(codecs[0], ShardingCodec) else None
        if chunks is None or (sharding is not None and len(codecs) > 1):
            return None
        inner_codecs = tuple(sharding.codecs) if sharding is not None else codecs
        codec = block_codec_of(inner_codecs[0])
        chain = inner_codecs[1:]
        if codec is None or not all(isinstance(c, BytesBytesCodec) for c in chain):
            return None
        chunks = tuple(int(n) for n in chunks)
        inner = tuple(int(n) for n in sharding.chunk_shape) if sharding is not None else chunks
        config = _compat.array_config(array)
        dtype = metadata.data_type
        spec = _compat.array_spec(inner, dtype, metadata.fill_value, config)
        shard = None if sharding is None else _shard(sharding, chunks, inner, spec)
        if sharding is not None and shard is None:
            return None
        return cls(
            dtype, codec, tuple(int(n) for n in metadata.shape), chunks, inner, chain, shard,
            array.store_path, metadata.chunk_key_encoding.encode_chunk_key, spec,
            bool(config.write_empty_chunks),
            (_coalesce(config, "gap_bytes", 1 << 20), _coalesce(config, "bytes", 16 << 20)),
            FillCell(dtype, metadata.fill_value),
            str(array.store_path.path),
        )  # fmt: skip

    def key_at(self, cell: Shape) -> str:
        """The key of the stored object (chunk or shard) holding ``cell``."""
        return self.key(tuple(np.floor_divide(cell, self.chunks).tolist()))

    def first(self, origin: Shape, place: Shape) -> Shape:
        """The first cell of the inner chunk at ``place`` of the shard at ``origin``."""
        return tuple(np.add(origin, np.multiply(place, self.inner)).tolist())

    def chunk_name(self, cell: Shape, *, inner: bool = True) -> str:
        """The stored chunk holding ``cell``, for messages: ``chunk 'c/3' of array 'a/b'``, or
        ``inner chunk 5 of shard 'c/0' of array 'a/b'`` (its place in the shard's index;
        ``shard 'c/0' ...`` if not ``inner``); the array's path left out at a store's root."""
        key = self.key_at(cell)
        array = f" of array {self.name!r}" if self.name else ""
        if self.shard is None:
            return f"chunk {key!r}{array}"
        if not inner:
            return f"shard {key!r}{array}"
        local = tuple((c % g) // i for c, g, i in zip(cell, self.chunks, self.inner, strict=True))
        place = int(np.ravel_multi_index(local, self.shard.per)) if local else 0
        return f"inner chunk {place} of shard {key!r}{array}"

    # ------------------------------------------------------------------------ bytes -> bytes

    async def decode(self, raw: Any, chain: tuple[Any, ...] | None = None) -> Any:
        """One Buffer through a bytes -> bytes chain (the chunks' by default), last codec
        first: synchronously where zarr runs the chain so, else through the codecs' decode."""
        chain = self.chain if chain is None else chain
        if (decode := _compat.chain_sync(chain, self.spec, encode=False)) is not None:
            return decode(raw)
        for codec in reversed(chain):
            (raw,) = await codec.decode([(raw, self.spec)])
        return raw

    async def encode(self, raws: list[Raw | None]) -> list[Any]:
        """Chunk bytes (None: not stored) through the bytes -> bytes chain, as Buffers: in
        threads where zarr runs the chain synchronously, else through the codecs' encode."""
        encode = _compat.chain_sync(self.chain, self.spec, encode=True)
        if encode is not None:
            return await map_threads(lambda r: None if r is None else encode(_buffer(r)), raws)

        async def one(raw: Raw | None) -> Any:
            buffer = None if raw is None else _buffer(raw)
            for codec in self.chain if buffer is not None else ():
                (buffer,) = await codec.encode([(buffer, self.spec)])
            return buffer

        return list(await asyncio.gather(*(one(r) for r in raws)))

    # ------------------------------------------------------------------------ store

    async def get(self, key: str, byte_range: Any = None) -> Any:
        return await (self.path / key).get(default_buffer_prototype(), byte_range)

    async def put(self, key: str, value: Any) -> None:
        await ((self.path / key).delete() if value is None else (self.path / key).set(value))

    async def index(
        self, key: str, shard: Any = None, get: Callable[..., Any] | None = None
    ) -> npt.NDArray[np.uint64] | None:
        """The ``(*per, 2)`` offsets and lengths of a stored shard's inner chunks, from the
        shard's bytes (fetched alone, by ``get``, when not given); None for a shard not
        stored."""
        spec = self.shard
        assert spec is not None
        if shard is None:
            where = RangeByteRequest(0, spec.index_nbytes) if spec.at_start else None
            shard = await (get or self.get)(key, where or SuffixByteRequest(spec.index_nbytes))
            if shard is None:
                return None
        size = len(shard)
        raw = shard[: spec.index_nbytes] if spec.at_start else shard[size - spec.index_nbytes :]
        try:
            if size < spec.index_nbytes:
                raise ValueError(f"{size} bytes, shorter than the index ({spec.index_nbytes})")
            decoded = await self.decode(raw, spec.index_chain)
            table = np.frombuffer(decoded.to_bytes(), dtype=spec.index_dtype)
            table = table.astype(np.uint64).reshape(*spec.per, 2)
        except Exception as exc:  # whatever the index's codecs raise
            array = f" of array {self.name!r}" if self.name else ""
            raise StoredChunkError.of(f"the index of the stored shard {key!r}{array}", exc) from exc
        return table

    async def assemble(self, chunks: dict[Shape, Any]) -> Any:
        """A shard's bytes from its inner chunks' (Buffers by place; None or absent: not
        stored), laid out as zarr lays them out; None when no inner chunk is stored."""
        spec = self.shard
        assert spec is not None
        table = np.full((*spec.per, 2), ABSENT, dtype=np.uint64)
        parts = []
        at = spec.index_nbytes if spec.at_start else 0
        for place in spec.order:
            part = chunks.get(place)
            if part is None or not len(part):
                continue
            table[place] = (at, len(part))
            parts.append(part)
            at += len(part)
        if not parts:
            return None
        index = _buffer(table.astype(spec.index_dtype).view(np.uint8))
        for codec in spec.index_chain:
            (index,) = await codec.encode([(index, self.spec)])
        blob = [index, *parts] if spec.at_start else [*parts, index]
        joined = np.concatenate([np.asarray(b.as_numpy_array()).view(np.uint8) for b in blob])
        return _buffer(joined)


def _coalesce(config: Any, what: str, default: int) -> int:
    """zarr's ``sharding_coalesce_max_*`` setting: the array's (zarr >= 3.4), else zarr's."""
    key = f"sharding_coalesce_max_{what}"
    value = getattr(config, key, None)
    return int(zarr.config.get(f"array.{key}", default) if value is None else value)


def _buffer(raw: Raw) -> Any:
    return default_buffer_prototype().buffer.from_array_like(raw.reshape(-1).view(np.uint8))


def _shard(sharding: Any, chunks: Shape, inner: Shape, spec: Any) -> Shard | None:
    """The sharding's settings; None for what the engine leaves to zarr (nested sharding,
    index codecs other than ``bytes`` + bytes -> bytes, shards not a whole number of inner
    chunks)."""
    index_codecs = tuple(sharding.index_codecs)
    first, chain = index_codecs[0], index_codecs[1:]
    if (
        not isinstance(first, BytesCodec)
        or not all(isinstance(c, BytesBytesCodec) for c in chain)
        or any(c % i for c, i in zip(chunks, inner, strict=True))
    ):
        return None
    per = tuple(c // i for c, i in zip(chunks, inner, strict=True))
    nbytes = 16 * math.prod(per)
    for codec in chain:
        nbytes = codec.compute_encoded_size(nbytes, spec)
    where = sharding.index_location
    order = getattr(sharding, "subchunk_write_order", "morton")
    places = morton(per) if order == "morton" else [tuple(p) for p in np.ndindex(per)]
    if order == "colexicographic":
        places = [p[::-1] for p in np.ndindex(per[::-1])]
    endian = _compat.endian_name(first.endian) or "little"
    return Shard(
        per, np.dtype("<u8" if endian == "little" else ">u8"), chain, nbytes,
        str(getattr(where, "value", where)) == "start", places,
    )  # fmt: skip
