"""The columnar engine: the cells of a box read from, or written into, an ``ndarray`` array's
chunks with no Python object per cell (async on zarr's loop; decoding, copying and encoding in
worker threads; the chunks' bytes through :mod:`zarr_ndarray_dtype._store`)."""

from __future__ import annotations

import asyncio
import math
import os
from typing import Any

import numpy as np
import numpy.typing as npt
from zarr.abc.store import RangeByteRequest

from zarr_ndarray_dtype import _compat
from zarr_ndarray_dtype._grid import Box, Places, Shape, origins, project, slabs
from zarr_ndarray_dtype._store import ABSENT, Layout, map_threads
from zarr_ndarray_dtype.blocks import Block, ColumnsBlock, FlatCells, offsets_of
from zarr_ndarray_dtype.dtype import FillBlock
from zarr_ndarray_dtype.errors import StoredChunkError

__all__ = ["read", "write"]

BATCH_SHARE = 16  # a batch holds about this share of a read's decoded chunk bytes ...
BATCH_BYTES = 8 << 20  # ... and at least this many bytes (see _Budget)
FIRST_BATCH_CELLS = 4096  # cells of a first batch, before any size is known
FIRST_BATCH_STRETCH = 4  # it may stretch this many times to end on a row of shards

_Ints = npt.NDArray[np.int64]
#: An (inner) chunk: its first cell, its key (its shard's) and its place in the shard (None).
_Piece = tuple[Shape, str, Shape | None]
#: Cells moving from a block to an output: ``(block, (cells in the block, places out))``.
_Move = tuple[Any, tuple[Any, Any]]


def _sizes(moves: list[_Move], sizes: _Ints, shapes: _Ints | None) -> None:
    """Every moved cell's item count (and shape) at its place in the output's tables."""
    for block, (cells, places) in moves:
        sizes[places] = block.sizes[cells]
        if shapes is not None:
            shapes[places] = block.shapes[cells]


def _move(move: _Move, out: npt.NDArray[np.uint8], offsets: _Ints, unit: int) -> None:
    """Copy one move's items to their item ``offsets`` in ``out`` (bytes)."""
    block, (cells, places) = move
    at = int(offsets[places.start]) if isinstance(places, slice) else offsets[places]
    block.copy(cells, out, at * unit)


class _Budget:
    """How many cells a read's next batch takes, and whether it may be fetched while the one
    before it is copied: a batch holds about a sixteenth of the read's decoded chunk bytes (as
    estimated from the batches so far), at least :data:`BATCH_BYTES` and an inner chunk a core
    (decoded side by side); the next one is fetched during the copy if the two stay within
    about a quarter of the output beside it."""

    def __init__(self, count: int, least: int) -> None:
        self.count, self.seen, self.nbytes, self.least = count, 0, 0, least

    def estimate(self) -> int:
        return int(self.nbytes / self.seen * self.count) if self.seen else 0

    def cells(self) -> int:
        if not self.nbytes:
            return max(FIRST_BATCH_CELLS, self.count // BATCH_SHARE)
        share = max(float(BATCH_BYTES), self.estimate() / BATCH_SHARE)
        return max(self.least, int(share * self.seen / self.nbytes))

    def observe(self, cells: int, nbytes: int) -> bool:
        self.seen += cells
        self.nbytes += nbytes
        return not self.nbytes or nbytes <= 1.25 * self.estimate() / BATCH_SHARE


class Reader:
    """One read of a box: its batches fetched, decoded and copied into one output."""

    def __init__(self, layout: Layout, values: np.ndarray | None = None) -> None:
        self.layout = layout
        self.with_shapes = layout.dtype.pattern.needs_shapes
        self.fill = FillBlock(layout.fill, self.with_shapes)
        self.values = np.empty(0, layout.dtype.item_dtype) if values is None else values
        self.grows = values is None
        self.indexes: dict[str, Any] = {}  # shard key -> its index (None: not stored)
        self.limit = asyncio.Semaphore(_compat.concurrency())

    # ------------------------------------------------------------------------ batches

    def pieces(self, part: Box) -> list[tuple[_Piece, bool]]:
        """The (inner) chunks of ``part`` in C order, each with whether its shard is read
        whole (every inner chunk of it inside the array is in ``part``)."""
        layout, shard = self.layout, self.layout.shard
        out: list[tuple[_Piece, bool]] = []
        for origin in origins(part, layout.chunks):
            key = layout.key_at(origin)
            if shard is None:
                out.append(((origin, key, None), True))
                continue
            stops = tuple(np.minimum(np.add(origin, layout.chunks), layout.shape).tolist())
            lo, hi = np.maximum(origin, part.starts), np.minimum(stops, part.stops)
            inside = Box(tuple(lo.tolist()), tuple(hi.tolist()), ())
            firsts = origins(inside, layout.inner)
            whole = len(firsts) == len(origins(Box(origin, stops, ()), layout.inner))
            for first in firsts:
                place = tuple(np.floor_divide(np.subtract(first, origin), layout.inner).tolist())
                out.append(((first, key, place), whole))
        return out

    async def get(self, key: str, byte_range: Any = None) -> Any:
        """A store request, at most zarr's ``async.concurrency`` of a read's in flight."""
        async with self.limit:
            return await self.layout.get(key, byte_range)

    async def fetch(self, part: Box) -> tuple[list[_Piece], list[Block | None]]:
        """The chunks of ``part``, fetched, decoded and checked (None: not stored)."""
        listed = self.pieces(part)
        pieces = [p for p, _ in listed]
        if self.layout.shard is None:
            raws = list(await asyncio.gather(*(self.get(key) for _, key, _ in pieces)))
        else:
            raws = [None] * len(pieces)
            members: dict[str, list[int]] = {}
            for i, (_, key, _) in enumerate(pieces):
                members.setdefault(key, []).append(i)
            whole = {piece[1] for piece, w in listed if w}
            await asyncio.gather(
                *(self.shard(k, m, k in whole, pieces, raws) for k, m in members.items())
            )
        return pieces, await self.decode(pieces, raws)

    async def shard(
        self, key: str, members: list[int], whole: bool, pieces: list[_Piece], raws: list[Any]
    ) -> None:
        """Put the bytes of the inner chunks ``members`` of shard ``key`` in ``raws``: cut from
        the whole shard, or fetched by range (neighbours within zarr's coalescing settings in
        one request), the shard's index fetched once a read."""
        blob = await self.get(key) if whole else None
        if whole and blob is None:
            return
        if blob is not None:
            index = await self.layout.index(key, blob)
        else:
            if key not in self.indexes:
                self.indexes[key] = asyncio.ensure_future(self.layout.index(key, get=self.get))
            index = await self.indexes[key]
        if index is None:
            return
        spans = []
        for i in members:
            place = pieces[i][2]
            assert place is not None
            start, length = (int(n) for n in index[place])
            if start != ABSENT:
                spans.append((start, start + length, i))
        if blob is not None:
            for start, stop, i in spans:
                raws[i] = blob[start:stop]
            return
        runs: list[list[tuple[int, int, int]]] = []
        gap, most = self.layout.coalesce
        for span in sorted(spans):
            if runs and span[0] - runs[-1][-1][1] <= gap and span[1] - runs[-1][0][0] <= most:
                runs[-1].append(span)
            else:
                runs.append([span])

        async def fetch_run(run: list[tuple[int, int, int]]) -> None:
            lo, hi = run[0][0], max(stop for _, stop, _ in run)
            got = await self.get(key, RangeByteRequest(lo, hi))
            for start, stop, i in run:
                raws[i] = got[start - lo : stop - lo]

        await asyncio.gather(*(fetch_run(run) for run in runs))

    async def decode(self, pieces: list[_Piece], raws: list[Any]) -> list[Block | None]:
        layout = self.layout
        count = math.prod(layout.inner)
        sync = _compat.chain_sync(layout.chain, layout.spec, encode=False)
        if layout.chain and sync is None:  # zarr < 3.3: the codecs' own decode
            raws = list(await asyncio.gather(*map(self._unchain, pieces, raws)))

        def block(job: tuple[_Piece, Any]) -> Block | None:
            piece, raw = job
            if raw is None:
                return None
            if sync is not None:
                try:
                    raw = sync(raw)
                except Exception as exc:
                    name = f"the stored {layout.chunk_name(piece[0])}"
                    raise StoredChunkError.of(name, exc) from exc
            flat = np.asarray(raw.as_numpy_array()).reshape(-1).view(np.uint8)
            try:
                return layout.codec.decode(flat, count, layout.dtype, "chunk")
            except Exception:
                pass  # decoded again to name the chunk (the codec is deterministic)
            return layout.codec.decode(flat, count, layout.dtype, layout.chunk_name(piece[0]))

        return await map_threads(block, list(zip(pieces, raws, strict=True)))

    async def _unchain(self, piece: _Piece, raw: Any) -> Any:
        try:
            return None if raw is None else await self.layout.decode(raw)
        except Exception as exc:
            name = f"the stored {self.layout.chunk_name(piece[0])}"
            raise StoredChunkError.of(name, exc) from exc

    # ------------------------------------------------------------------------ the read

    async def read(self, box: Box, offsets: _Ints, copy: bool = True) -> FlatCells:
        """The cells of ``box`` (item ``offsets`` filled in place); ``copy=False`` checks
        every chunk but copies no values."""
        count = math.prod(box.extents)
        offsets[0] = 0
        ndim = self.layout.dtype.pattern.ndim
        shapes = np.empty((count, ndim), np.int64) if self.with_shapes else None
        budget = _Budget(count, math.prod(self.layout.inner) * (os.cpu_count() or 1))
        units = [self.layout.chunks, self.layout.inner]
        parts = slabs(box, units, budget.cells, FIRST_BATCH_STRETCH) if count else iter(())
        part = next(parts, None)
        pending = None if part is None else asyncio.ensure_future(self.fetch(part))
        at = 0
        copying = copy
        try:
            while part is not None and pending is not None:
                pieces, blocks = await pending
                n = math.prod(part.extents)
                nbytes = sum(int(b.sizes.sum()) for b in blocks if b is not None)
                overlap = budget.observe(n, nbytes * self.values.itemsize)
                following = next(parts, None)
                pending = None
                if following is not None and overlap:
                    pending = asyncio.ensure_future(self.fetch(following))
                    await asyncio.sleep(0)  # it starts fetching before the copy
                moves = self.moves(part, pieces, blocks)
                mine = offsets[at : at + n + 1]
                _sizes(moves, mine[1:], None if shapes is None else shapes[at:])
                np.cumsum(mine, out=mine)  # mine[0]: where the batch starts
                if copying and not self.grows and int(mine[-1]) > self.values.size:
                    copying = False  # only the sizes from here: the error says how many
                if copying:
                    await self.copy(moves, mine, count, at + n, aside=pending is not None)
                at += n
                if following is not None and pending is None:
                    pending = asyncio.ensure_future(self.fetch(following))
                part = following
        finally:
            if pending is not None:  # a fetch ahead, when the read failed or was closed
                pending.cancel()  # (awaited by no one: its outcome is taken when it ends)
                pending.add_done_callback(lambda t: t.cancelled() or t.exception())
        if copying != copy:
            raise ValueError(
                f"out's values hold {self.values.size:,} items, but the cells of this selection "
                f"hold {int(offsets[-1]):,}: pass values with room for {int(offsets[-1]):,} "
                "items (any shape), or leave out unset (the arrays given are partly overwritten)"
            )
        total = int(offsets[-1]) if copy else 0
        return FlatCells(
            self.values if self.values.size == total else self.values[:total], offsets, shapes
        )

    def moves(
        self, part: Box, pieces: list[_Piece], blocks: list[Block | None]
    ) -> list[tuple[Any, Places]]:
        """Which cells of which block go where in ``part`` (the fill block by index)."""
        moves: list[tuple[Any, Places]] = []
        for (origin, _, _), block in zip(pieces, blocks, strict=True):
            places = project(origin, self.layout.inner, part)
            if places is None:
                continue
            if block is None:
                pos = places[1]
                if isinstance(pos, slice):
                    pos = np.arange(pos.start, pos.stop, dtype=np.int64)
                moves.append((self.fill, (np.zeros(pos.size, np.intp), pos)))
            else:
                moves.append((block, places))
        return moves

    async def copy(
        self, moves: list[_Move], mine: _Ints, count: int, done: int, aside: bool = False
    ) -> None:
        """Copy every move of a batch to its item offsets in the output (grown, when it must,
        to the whole read's estimate: the items so far at this rate for every cell, and a
        sixteenth more)."""
        total = int(mine[-1])
        if self.values.size < total:
            items = max(total, -(-total * count * 17 // (16 * done)))
            if not self.values.size:
                self.values = np.empty(items, dtype=self.values.dtype)
            else:
                self.values.resize((items,), refcheck=False)  # realloc: usually in place
        out, unit = self.values.view(np.uint8), self.values.itemsize
        await map_threads(lambda move: _move(move, out, mine, unit), moves, aside=aside)


async def read(
    layout: Layout, box: Box, *, copy: bool = True, out: tuple[np.ndarray, _Ints] | None = None
) -> FlatCells:
    """The cells of ``box`` as :class:`FlatCells` (in the buffers ``out`` when given)."""
    values, offsets = out or (None, np.zeros(math.prod(box.extents) + 1, dtype=np.int64))
    return await Reader(layout, values).read(box, offsets, copy)


# ---------------------------------------------------------------------------- writes


async def write(jobs: list[tuple[Layout, Box, FlatCells]]) -> None:
    """Write checked cells (C order of each box) into the chunks of one or more arrays: the
    chunks and shards the boxes cover in part are read and decoded first, of every array (a
    corrupt one stops the write before anything is stored), then every chunk the boxes touch
    is rebuilt, encoded and stored (deleted when all fill and empty chunks are not written)."""
    writers = [_Writer(*job) for job in jobs if math.prod(job[1].extents)]
    outers = [origins(w.box, w.layout.chunks) for w in writers]
    keeps = [asyncio.gather(*map(w.keep, outer)) for w, outer in zip(writers, outers, strict=True)]
    kept = await asyncio.gather(*keeps)
    for writer, outer, old in zip(writers, outers, kept, strict=True):
        stored = list(zip(outer, old, strict=True))
        per = max(1, len(stored) // 8)  # an eighth of the write at a time
        for at in range(0, len(stored), per):
            await writer.store(stored[at : at + per])


class _Writer:
    def __init__(self, layout: Layout, box: Box, cells: FlatCells) -> None:
        self.layout, self.box = layout, box
        self.source = ColumnsBlock(cells)
        self.with_shapes = layout.dtype.pattern.needs_shapes
        self.fill = FillBlock(layout.fill, self.with_shapes)
        self.reader = Reader(layout)

    def covers(self, origin: Shape, chunk: Shape, *, clip: bool = True) -> bool:
        """Whether the box holds every cell of the chunk at ``origin`` (those inside the array
        when ``clip``: zarr writes a chunk so covered afresh, its padding the fill)."""
        ends = np.add(origin, chunk)
        if clip:
            ends = np.minimum(ends, self.layout.shape)
        return bool(np.all(self.box.starts <= np.array(origin)) and np.all(ends <= self.box.stops))

    async def keep(self, origin: Shape) -> Any:
        """What a write keeps of the stored object at ``origin``: for a chunk the box covers in
        part, its decoded block; for a shard, its inner chunks' bytes by place and the decoded
        blocks of those the box covers in part. None where nothing is kept."""
        layout = self.layout
        # zarr rewrites a shard afresh only when the write covers every inner chunk of it
        if self.covers(origin, layout.chunks, clip=layout.shard is None):
            return None
        key = layout.key_at(origin)
        if layout.shard is None:
            (block,) = await self.reader.decode([(origin, key, None)], [await self.reader.get(key)])
            return block
        shard = await self.reader.get(key)
        if shard is None:
            return {}, {}
        index = await layout.index(key, shard)
        assert index is not None
        raw: dict[Shape, Any] = {}
        for place in np.ndindex(layout.shard.per):
            start, length = (int(n) for n in index[place])
            if start != ABSENT:
                raw[place] = shard[start : start + length]
        partial = [  # inner chunks the box touches and does not cover (nor a shard's padding)
            (first, place)
            for place in raw
            if project(first := layout.first(origin, place), layout.inner, self.box) is not None
            and not self.covers(first, layout.inner, clip=False)
        ]
        pieces: list[_Piece] = [(first, key, place) for first, place in partial]
        blocks = await self.reader.decode(pieces, [raw[place] for _, place in partial])
        return raw, {place: b for (_, place), b in zip(partial, blocks, strict=True)}

    async def store(self, group: list[tuple[Shape, Any]]) -> None:
        """Rebuild, encode and store the stored objects of ``group`` (origin, what is kept)."""
        layout = self.layout
        jobs: list[tuple[Shape, Any]] = []  # (inner chunk origin, its old block or None)
        for origin, old in group:
            if layout.shard is None:
                jobs.append((origin, old))
                continue
            blocks = old[1] if old is not None else {}
            complete = old is None
            for place in np.ndindex(layout.shard.per):
                first = layout.first(origin, place)
                if complete or (project(first, layout.inner, self.box) is not None):
                    jobs.append((first, blocks.get(place)))
        encoded = await layout.encode(await map_threads(self.chunk, jobs))
        by_origin = dict(zip((first for first, _ in jobs), encoded, strict=True))
        puts: list[tuple[str, Any]] = []
        for origin, old in group:
            key = layout.key_at(origin)
            if layout.shard is None:
                puts.append((key, by_origin[origin]))
                continue
            chunks = dict(old[0]) if old is not None else {}
            for place in np.ndindex(layout.shard.per):
                if (first := layout.first(origin, place)) in by_origin:
                    chunks[place] = by_origin[first]
            puts.append((key, await layout.assemble(chunks)))
        await asyncio.gather(*(self.put(key, value) for key, value in puts))

    async def put(self, key: str, value: Any) -> None:
        async with self.reader.limit:  # as many in flight as a read's requests
            await self.layout.put(key, value)

    def chunk(self, job: tuple[Shape, Block | None]) -> npt.NDArray[np.uint8] | None:
        """The encoded bytes of the (inner) chunk at ``origin``: the box's cells where it has
        them, the old chunk's (or the fill) elsewhere; None when all fill and empty chunks
        are not written."""
        origin, old = job
        layout, count = self.layout, math.prod(self.layout.inner)
        places = project(origin, layout.inner, self.box)
        if places is not None and isinstance(places[0], slice) and places[0] == slice(0, count):
            cells, (a, b) = self.source.cells(), (places[1].start, places[1].stop)
            chunk = FlatCells(
                cells.values[int(cells.offsets[a]) : int(cells.offsets[b])],
                cells.offsets[a : b + 1] - cells.offsets[a],
                None if cells.shapes is None else cells.shapes[a:b],
            )  # the box's cells, as they are: no copy
        else:
            rest = np.ones(count, dtype=bool)
            moves: list[_Move] = []
            if places is not None:
                rest[places[0]] = False
                moves.append((self.source, (places[1], places[0])))
            kept = np.flatnonzero(rest)
            moves.append((old, (kept, kept)) if old is not None else (self.fill, (0 * kept, kept)))
            sizes = np.empty(count, np.int64)
            ndim = layout.dtype.pattern.ndim
            shapes = np.empty((count, ndim), np.int64) if self.with_shapes else None
            _sizes(moves, sizes, shapes)
            offsets = offsets_of(sizes)
            values = np.empty(int(offsets[-1]), layout.dtype.item_dtype)
            for move in moves:
                _move(move, values.view(np.uint8), offsets, values.itemsize)
            chunk = FlatCells(values, offsets, shapes)
        if not layout.write_empty and layout.fill.matches(chunk).all():
            return None
        return layout.codec.encode(chunk, layout.dtype, layout.chunk_name(origin))
