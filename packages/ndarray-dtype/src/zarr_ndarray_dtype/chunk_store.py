"""Where the chunks of an ``ndarray`` array live, and reading and writing their codec-level bytes.

Both codec packages read and write chunks below zarr's codec pipeline (columnar access): they
hand this module the bytes their serializer produces (or wants) and it does what the pipeline
would do around them: the bytes -> bytes codecs (e.g. ``zstd``), the chunk keys of the array's
key encoding, and the ``sharding_indexed`` codec.

* :func:`layout_of` describes an array whose codecs are ``serializer`` + bytes -> bytes codecs,
  possibly inside one sharding codec; any other chain gives None (callers then use zarr's
  object-array path).
* :func:`read_chunks` fetches chunks concurrently. A shard is fetched whole and cut by its index,
  or, when a read needs few of its inner chunks, its index and those inner chunks are fetched by
  byte range.
* :class:`ChunkWriter` stores encoded chunks in batches. Sharded arrays are written shard by
  shard the way zarr's sharding codec writes them: the present inner chunks (through the bytes
  -> bytes codecs) back to back in the codec's write order (Morton order unless the codec
  instance says otherwise, see :func:`~zarr_ndarray_dtype.shard_index.write_order`), then or
  before them the index of ``(offset, nbytes)`` pairs (``MISSING`` twice for an absent inner
  chunk) through the index codecs. Which stored cells a write keeps follows zarr's rule
  (:meth:`ChunkLayout.keeps_stored`); inner chunks a write does not touch keep their stored bytes
  verbatim, and a shard left without inner chunks is deleted, so the stored objects equal those
  of zarr's own writes.

A chunk is named by its grid index: an int for a 1-D array, or a tuple of coordinates in the chunk
grid (the inner chunk grid when sharded). Everything runs concurrently on zarr's event loop.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt
from zarr.abc.codec import BytesBytesCodec
from zarr.abc.store import RangeByteRequest, SuffixByteRequest
from zarr.codecs import ShardingCodec
from zarr.core.array_spec import ArraySpec
from zarr.core.buffer import default_buffer_prototype

from zarr_ndarray_dtype import _compat
from zarr_ndarray_dtype.chunk_codecs import (
    as_bytes,
    bytes_codecs_after,
    decode_shard_index,
    encode_shard_index,
    fetch,
    index_is_plain,
    store_chunks,
    unwrap_bytes,
    wrap_bytes,
)
from zarr_ndarray_dtype.shard_index import (
    MISSING,
    ShardIndexError,
    index_region,
    inner_range,
    out_of_range,
    write_order,
)

__all__ = [
    "ChunkLayout",
    "ChunkWriter",
    "Coords",
    "GridIndex",
    "ShardLayout",
    "layout_of",
    "read_chunks",
]

#: A chunk's (or shard's) coordinates in its grid, one per array axis.
Coords = tuple[int, ...]
#: A chunk's grid index: an int (1-D arrays) or coordinates (any rank).
GridIndex = int | Coords
Chunk = npt.NDArray[np.uint8]
#: The grid index type one write uses throughout (ints for 1-D arrays, or coordinates).
Index = TypeVar("Index", int, Coords)

#: A read that needs fewer than this share of a shard's inner chunks fetches the index and the
#: inner chunks by byte range (2 + k requests) instead of the whole shard in one request.
_RANGED_SHARE = 0.25
#: Chunks a :class:`ChunkWriter` holds (encoded) before it stores them: bounds the memory held.
_WRITE_BATCH = 16


@dataclass(frozen=True)
class ShardLayout:
    """How inner chunks sit in a shard: ``shard_grid`` inner chunks per axis."""

    codec: ShardingCodec
    shard_grid: tuple[int, ...]
    index_nbytes: int
    index_at_start: bool
    index_spec: ArraySpec
    order: npt.NDArray[np.intp]  # places in the index, in the order the bytes are laid out

    @property
    def chunks_per_shard(self) -> int:
        return math.prod(self.shard_grid)


@dataclass(frozen=True)
class ChunkLayout:
    """Where and how the chunks of one array are stored."""

    array: Any  # the AsyncArray (store path, metadata)
    chunk_shape: tuple[int, ...]  # cells per chunk along each axis (the inner chunk if sharded)
    bytes_codecs: tuple[BytesBytesCodec, ...]  # after the serializer, in encode order
    spec: ArraySpec  # the chunk spec handed to those codecs
    shard: ShardLayout | None

    @property
    def chunk_len(self) -> int:
        """Cells per chunk (the inner chunk when sharded)."""
        return math.prod(self.chunk_shape)

    @property
    def write_empty_chunks(self) -> bool:
        return bool(self.spec.config.write_empty_chunks)

    def key(self, grid_index: GridIndex) -> str:
        """The store key of chunk (or shard) ``grid_index`` under the array's key encoding."""
        encoding = self.array.metadata.chunk_key_encoding
        coords = (grid_index,) if isinstance(grid_index, int) else tuple(grid_index)
        return str(encoding.encode_chunk_key(coords))

    def in_shard(self, grid_index: GridIndex) -> tuple[GridIndex, int]:
        """``(shard grid index, the inner chunk's place in the shard index)`` of a chunk."""
        assert self.shard is not None
        if isinstance(grid_index, int):
            return divmod(grid_index, self.shard.chunks_per_shard)
        per = self.shard.shard_grid
        shard = tuple(c // p for c, p in zip(grid_index, per, strict=True))
        local = tuple(c % p for c, p in zip(grid_index, per, strict=True))
        return shard, int(np.ravel_multi_index(local, per)) if per else 0

    def keeps_stored(self, grid_index: GridIndex, starts: Coords, stops: Coords) -> bool:
        """Whether a write of the box ``[starts, stops)`` keeps some stored cells of the chunk:
        the chunk is then read, patched and rewritten. zarr's own rule, in one place:

        * zarr caps a chunk at the array's end when it asks whether a write covers it, so an
          edge chunk whose cells inside the array are all written is rewritten from the new
          cells and fill (cells past the end, left by a shrinking resize, are dropped);
        * inside a shard it does not cap (it indexes the whole shard): an inner chunk counts as
          covered only when all of its cells are, so an edge inner chunk keeps its stored cells
          past the array's end.
        """
        coords = (grid_index,) if isinstance(grid_index, int) else tuple(grid_index)
        cs = self.chunk_shape
        lo = tuple(c * n for c, n in zip(coords, cs, strict=True))
        if self.shard is None:
            shape = self.array.metadata.shape
            hi = tuple(min(a + n, int(s)) for a, n, s in zip(lo, cs, shape, strict=True))
        else:
            hi = tuple(a + n for a, n in zip(lo, cs, strict=True))
        return not all(s <= a and b <= e for s, e, a, b in zip(starts, stops, lo, hi, strict=True))

    def where(self, grid_index: GridIndex) -> str:
        """Chunk ``grid_index`` for error messages: its key, or its shard's key and its place."""
        shape = f"of shape {self.chunk_shape}"
        if self.shard is None:
            return f"chunk {self.key(grid_index)!r} {shape}"
        shard, local = self.in_shard(grid_index)
        return f"inner chunk {local} of shard {self.key(shard)!r} {shape}"


def layout_of(array: Any, serializer: type[Any]) -> ChunkLayout | None:
    """The chunk layout of a zarr array (any rank) whose array -> bytes codec is a ``serializer``.

    ``array`` is a ``zarr.Array`` or ``AsyncArray``. Returns None for chains this module does not
    handle (array -> array codecs, nested sharding, index codecs other than ``bytes`` + bytes ->
    bytes, irregular chunk grids).
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
        inner = bytes_codecs_after(tuple(sharding.codecs), serializer)
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
            shard_grid=per_shard,
            index_nbytes=_compat.shard_index_nbytes(sharding, per_shard),
            index_at_start=_compat.index_location(sharding) == "start",
            index_spec=_compat.shard_index_spec(sharding, per_shard),
            order=write_order(per_shard, _compat.subchunk_write_order(sharding)),
        )
        bytes_codecs, chunk_shape = inner, inner_shape
    else:
        found = bytes_codecs_after(codecs, serializer)
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


async def _unwrap(layout: ChunkLayout, raw: Any, where: str) -> Chunk:
    """Undo the bytes -> bytes codecs of one stored chunk."""
    return await unwrap_bytes(layout.bytes_codecs, layout.spec, raw, where)


async def _parse_index(
    shard: ShardLayout, raw: Chunk, key: str, size: int | None
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


async def _stored_shard(layout: ChunkLayout, key: str) -> list[Chunk | None] | None:
    """The stored (still encoded) bytes of every inner chunk of a shard; None for no shard."""
    shard = layout.shard
    assert shard is not None
    blob = await fetch(layout.array.store_path, key)
    if blob is None:
        return None
    raw_index = index_region(blob, shard.index_nbytes, shard.index_at_start, key)
    pairs = await _parse_index(shard, raw_index, key, blob.size)
    return [
        None if start == MISSING and length == MISSING else blob[start : start + length]
        for start, length in pairs.tolist()
    ]


async def _read_plain(layout: ChunkLayout, index: GridIndex) -> Chunk | None:
    key = layout.key(index)
    blob = await fetch(layout.array.store_path, key)
    return None if blob is None else await _unwrap(layout, blob, f"chunk {key!r}")


async def _read_shard(
    layout: ChunkLayout, shard_index: GridIndex, locals_: list[int]
) -> list[Chunk | None]:
    shard = layout.shard
    assert shard is not None
    key = layout.key(shard_index)
    if len(locals_) < _RANGED_SHARE * shard.chunks_per_shard:
        return await _read_shard_ranged(layout, shard, key, locals_)
    stored = await _stored_shard(layout, key)
    if stored is None:
        return [None] * len(locals_)

    async def one(local: int) -> Chunk | None:
        raw = stored[local]
        where = f"inner chunk {local} of shard {key!r}"
        return None if raw is None else await _unwrap(layout, raw, where)

    return list(await asyncio.gather(*(one(i) for i in locals_)))


async def _read_shard_ranged(
    layout: ChunkLayout, shard: ShardLayout, key: str, locals_: list[int]
) -> list[Chunk | None]:
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
    pairs = await _parse_index(shard, as_bytes(raw_index), key, None)

    async def one(local: int) -> Chunk | None:
        found = inner_range(pairs, local)
        if found is None:
            return None
        start, length = found
        if start + length > 2**63 - 1:
            raise out_of_range(key, local, pairs, "fewer")
        got = await store_path.get(
            prototype=prototype, byte_range=RangeByteRequest(start, start + length)
        )
        data = None if got is None else as_bytes(got)
        if data is None or data.size != length:
            raise out_of_range(key, local, pairs, "fewer")
        return await _unwrap(layout, data, f"inner chunk {local} of shard {key!r}")

    return list(await asyncio.gather(*(one(i) for i in locals_)))


async def _read_all(layout: ChunkLayout, indices: Sequence[GridIndex]) -> list[Chunk | None]:
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


def read_chunks(layout: ChunkLayout, indices: Sequence[GridIndex]) -> list[Chunk | None]:
    """The serializer-level bytes of each chunk in ``indices`` (None where it is not stored).

    Raises ValueError when a stored chunk does not decode through its bytes codecs and
    :class:`~zarr_ndarray_dtype.shard_index.ShardIndexError` for a corrupt shard index.
    """
    return _compat.run(_read_all(layout, list(indices)))


# ----------------------------------------------------------------------------------- writing


class _Shard:
    """One shard being rebuilt: each inner chunk's stored bytes, or fresh serializer bytes."""

    def __init__(self, stored: list[Chunk | None] | None, count: int, expected: int) -> None:
        self.inner: list[Chunk | None] = stored if stored is not None else [None] * count
        self.fresh = [False] * count
        self.missing = expected  # chunks of the write still to come


async def _put_shard(layout: ChunkLayout, key: str, shard: _Shard) -> None:
    spec = layout.shard
    assert spec is not None
    target = layout.array.store_path / key
    present = [int(i) for i in spec.order if shard.inner[i] is not None]
    if not present:
        await target.delete()
        return

    async def stored_bytes(local: int) -> Chunk:
        chunk = shard.inner[local]
        assert chunk is not None
        if not shard.fresh[local]:
            return chunk
        return as_bytes(await wrap_bytes(layout.bytes_codecs, layout.spec, chunk))

    parts = list(await asyncio.gather(*(stored_bytes(i) for i in present)))
    lengths = np.array([p.size for p in parts], dtype=np.uint64)
    starts = np.zeros(len(parts), dtype=np.uint64)
    np.cumsum(lengths[:-1], out=starts[1:])
    if spec.index_at_start:
        starts += np.uint64(spec.index_nbytes)
    pairs = np.full((spec.chunks_per_shard, 2), MISSING, dtype=np.uint64)
    pairs[present, 0] = starts
    pairs[present, 1] = lengths
    index_codecs = tuple(spec.codec.index_codecs)
    index = await encode_shard_index(index_codecs, spec.index_spec, pairs, spec.index_nbytes)
    parts.insert(0, index) if spec.index_at_start else parts.append(index)
    await target.set(layout.spec.prototype.buffer.from_array_like(np.concatenate(parts)))


class ChunkWriter(Generic[Index]):
    """Store the serializer-level bytes of the chunks ``indices`` that a write of the box
    ``[starts, stops)`` touches (every chunk the box overlaps, in any order).

    :attr:`indices` gives them back in the order to encode them (shard by shard, so a shard is
    stored as soon as its last chunk arrives); :meth:`existing` gives the stored bytes of those
    the write keeps cells of (:meth:`ChunkLayout.keeps_stored`), before anything is written.
    Then every chunk is :meth:`add`-ed once (None deletes it: an elided chunk) and :meth:`flush`
    stores what is left. Unsharded chunks are stored in batches; for a sharded array, the shards
    whose inner chunks the write does not all cover whole are read once, up front (so a corrupt
    one is refused before anything is written), and their inner chunks outside the write are
    kept as stored.
    """

    def __init__(
        self,
        layout: ChunkLayout,
        indices: Iterable[Index],
        starts: Coords,
        stops: Coords,
    ) -> None:
        self.layout = layout
        self.indices: list[Index] = list(indices)
        self.partial: list[Index] = [
            i for i in self.indices if layout.keeps_stored(i, starts, stops)
        ]
        self.items: list[tuple[Index, Chunk | None]] = []
        self.shards: dict[GridIndex, _Shard] = {}
        self.ready: list[GridIndex] = []
        self.pending = 0
        shard = layout.shard
        if shard is None:
            return
        where = {i: layout.in_shard(i) for i in self.indices}
        self.indices.sort(key=lambda i: where[i])
        expected: dict[GridIndex, int] = {}
        for s, _ in where.values():
            expected[s] = expected.get(s, 0) + 1
        # A shard keeps stored inner chunks unless the write covers every one of them whole.
        keep = {where[i][0] for i in self.partial}
        keep.update(s for s, n in expected.items() if n < shard.chunks_per_shard)
        reread = [s for s in expected if s in keep]

        async def read() -> list[list[Chunk | None] | None]:
            return list(
                await asyncio.gather(*(_stored_shard(layout, layout.key(s)) for s in reread))
            )

        stored = dict(zip(reread, _compat.run(read()), strict=True))
        count = shard.chunks_per_shard
        self.shards = {s: _Shard(stored.get(s), count, n) for s, n in expected.items()}

    def existing(self) -> dict[Index, Chunk | None]:
        """The stored serializer-level bytes of every chunk whose stored cells the write keeps
        (None for such a chunk that is not stored: its cells are fill)."""
        layout = self.layout
        if layout.shard is None:
            return dict(zip(self.partial, read_chunks(layout, self.partial), strict=True))

        async def one(index: Index) -> Chunk | None:
            s, local = layout.in_shard(index)
            raw = self.shards[s].inner[local]
            return None if raw is None else await _unwrap(layout, raw, layout.where(index))

        async def all_() -> list[Chunk | None]:
            return list(await asyncio.gather(*(one(i) for i in self.partial)))

        return dict(zip(self.partial, _compat.run(all_()), strict=True))

    def add(self, index: Index, data: Chunk | None) -> None:
        """Chunk ``index`` is to hold ``data`` (serializer-level bytes), or nothing (None)."""
        layout = self.layout
        if layout.shard is None:
            self.items.append((index, data))
        else:
            s, local = layout.in_shard(index)
            shard = self.shards[s]
            shard.inner[local] = data
            shard.fresh[local] = data is not None
            shard.missing -= 1
            if shard.missing == 0:
                self.ready.append(s)
        self.pending += 1
        if self.pending >= _WRITE_BATCH:
            self._store()

    def flush(self) -> None:
        """Store everything added and not yet stored."""
        unfinished = [s for s, shard in self.shards.items() if shard.missing]
        if unfinished:
            raise RuntimeError(
                f"ChunkWriter.flush: shards {unfinished[:3]} still miss chunks of the write; "
                "add every chunk the writer was created with first"
            )
        self._store()

    def _store(self) -> None:
        layout = self.layout
        if layout.shard is None:
            keyed = [(layout.key(index), data) for index, data in self.items]
            if keyed:
                codecs, spec = layout.bytes_codecs, layout.spec
                _compat.run(store_chunks(layout.array.store_path, codecs, spec, keyed))
            self.items = []
            self.pending = 0
            return
        if not self.ready:
            return  # the chunks added so far all belong to unfinished shards
        ready, self.ready = self.ready, []

        async def put_all() -> None:
            await asyncio.gather(
                *(_put_shard(layout, layout.key(s), self.shards.pop(s)) for s in ready)
            )

        _compat.run(put_all())
        self.pending = 0
