"""Reading through zarr: the cells of a box, batch by batch of whole chunks, decoded by the
codec's block codec and copied into one output (the engine behind ``read_columnar``)."""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype import _cell_ids, _runs
from zarr_ndarray_dtype._cell_ids import data_type_and_codec
from zarr_ndarray_dtype._columns import FillBlock, FillCell, check_out
from zarr_ndarray_dtype._compat import regular_chunk_shape
from zarr_ndarray_dtype._grid import Box, Selection, resolve, slabs, whole_chunks
from zarr_ndarray_dtype.blocks import Block, BlockCodec, needs_shapes
from zarr_ndarray_dtype.blocks import FlatCells as Cells
from zarr_ndarray_dtype.dtype import NDArrayDType as NDArray
from zarr_ndarray_dtype.errors import StoredChunkError

__all__ = ["Scan", "read_cells", "scan_cells", "through_zarr"]

#: A read's batches hold about 1/BATCH_SHARE of its stored chunks' decoded bytes each ...
BATCH_SHARE = 16
#: ... and at least this many bytes (fewer batches for small reads); see :class:`_Budget`.
BATCH_BYTES = 8 << 20
#: Cells the first batch may take before any size is known: a read of a few positions or one
#: region stays one batch (one request for a shard's index).
FIRST_BATCH_CELLS = 4096
#: The first batch of a box more than one cell across may take this many times its cells to
#: end on a shard's boundary rather than cut a row of shards (each shard cut costs requests
#: more; later batches are sized from the bytes seen, and a row of shards that fits them is
#: never cut).
FIRST_BATCH_STRETCH = 4

#: Thread jobs per core that a batch's chunks are decoded or copied in (runs of chunks, a
#: few per core so that cores that finish early take another).
MAP_JOBS_PER_CORE = 4

_T = TypeVar("_T")
_R = TypeVar("_R")
_Ints = npt.NDArray[np.int64]


def read_cells(array: Any, selection: Selection, what: str, out: Any = None) -> tuple[Cells, Box]:
    """The cells ``selection`` of an array as :class:`Cells` (in the buffers ``out`` when given,
    see :func:`~zarr_ndarray_dtype._columns.check_out`), and the selection's box."""
    dtype, codec = data_type_and_codec(array, what)
    box = resolve(selection, tuple(int(n) for n in array.metadata.shape), what)
    reader = Reader(array, dtype, codec)
    if out is not None:
        reader.values, reader.offsets = check_out(out, dtype, math.prod(box.extents))
    return reader.read(box).cells, box


class Scan(NamedTuple):
    """The cells of a selection without their values: sizes (and shapes), and which of them a
    stored chunk holds (the others are fill cells of unwritten chunks)."""

    cells: Cells  # values empty
    stored: npt.NDArray[np.bool_]
    chunk_nbytes: int  # the stored chunks' bytes as the codec reads them (after decompression)


def scan_cells(array: Any, selection: Selection, what: str) -> Scan:
    """Decode the chunks of ``selection`` (every rule of the codec checked) but copy no values."""
    dtype, codec = data_type_and_codec(array, what)
    box = resolve(selection, tuple(int(n) for n in array.metadata.shape), what)
    return Reader(array, dtype, codec).read(box, copy=False)


class Reader:
    """One read: views of the array (:class:`~zarr_ndarray_dtype._cell_ids.ReadView`), and
    the chunks zarr hands them batch by batch."""

    def __init__(self, array: Any, dtype: NDArray, codec: BlockCodec) -> None:
        self.array, self.dtype, self.codec = array, dtype, codec
        self.with_shapes = needs_shapes(dtype.pattern)
        self.fill = FillBlock(FillCell(dtype, array.metadata.fill_value), self.with_shapes)
        self.view: _cell_ids.ReadView | None = None  # while reading (_cell_ids.read_view)
        self.values = np.empty(0, dtype=dtype.item_dtype)
        # the caller's buffers, when the read fills them (the values then never grow)
        self.offsets: npt.NDArray[np.int64] | None = None
        self.fetching = _runs.Sources(self.fill, [])
        self.pool: ThreadPoolExecutor | None = None

    def _register(self, raw: npt.NDArray[np.uint8], count: int) -> int:
        return self.fetching.add((raw, count), count)

    def _fetch(self, part: Box) -> tuple[_runs.Sources, npt.NDArray[np.uint64]]:
        """zarr reads the chunks of ``part``: their bytes (registered) and the ids of its cells.
        One fetch runs at a time, so the view's codec registers into the one being fetched.
        Whole shards go through the shard view (each shard's inner chunks decoded at once)."""
        self.fetching = sources = _runs.Sources(self.fill, [])
        assert self.view is not None
        target = None
        metadata = self.array.metadata
        grid = regular_chunk_shape(metadata)
        if grid is not None and whole_chunks(part, grid, tuple(metadata.shape)):
            target = self.view.shards(self.array)
        if target is None:
            target = self.view.cells(self.array)
        ids = through_zarr(self.array, part, partial(target.__getitem__, part.slices))
        return sources, np.asarray(ids, dtype=np.uint64).reshape(-1)

    def _batches(
        self, box: Box, budget: _Budget
    ) -> Iterator[tuple[Box, _runs.Sources, npt.NDArray[np.uint64]]]:
        """The box in batches of whole chunks, each fetched by zarr while the one before it is
        being copied when both fit the read's budget, else after it."""
        parts = _slabs(box, self.array.metadata, budget.cells)
        part = next(parts, None)
        if part is None:
            return
        fetched = self._fetch(part)
        while True:
            sources, ids = fetched
            overlap = budget.observe(ids.size, _nbytes(sources))
            following = next(parts, None)
            pending = None
            if following is not None and overlap:
                pending = self._threads().submit(self._fetch, following)
            yield part, sources, ids
            del sources, ids, fetched
            if following is None:
                return
            fetched = pending.result() if pending is not None else self._fetch(following)
            part = following

    def _threads(self) -> ThreadPoolExecutor:
        """The read's threads: one per core, and one to fetch the next batch."""
        if self.pool is None:
            self.pool = ThreadPoolExecutor((os.cpu_count() or 1) + 1)
        return self.pool

    def _map(self, fn: Callable[[_T], _R], items: list[_T]) -> list[_R]:
        """``fn`` over ``items`` in order, in the read's threads when several and the machine
        has several cores (the kernels release the GIL), a few runs of items per thread (a
        thread job costs about what decoding a small chunk does); a failing item raises the
        error of the first failing one in order."""
        cores = os.cpu_count() or 1
        if min(len(items), cores) <= 1:
            return [fn(x) for x in items]
        size = -(-len(items) // (cores * MAP_JOBS_PER_CORE))
        runs = [items[i : i + size] for i in range(0, len(items), size)]
        done = self._threads().map(lambda run: [fn(x) for x in run], runs)
        return [result for run in done for result in run]

    def read(self, box: Box, copy: bool = True) -> Scan:
        with _cell_ids.read_view(self.array, self._register) as self.view:
            try:
                return self._read(box, copy)
            finally:
                if self.pool is not None:  # a fetch ahead still running is waited for
                    self.pool.shutdown(cancel_futures=True)
                    self.pool = None
                self.view = None  # the view serves other reads after this one

    def _read(self, box: Box, copy: bool) -> Scan:
        count = math.prod(box.extents)
        if self.offsets is None:
            offsets = np.zeros(count + 1, dtype=np.int64)
        else:
            offsets = self.offsets
            offsets.fill(0)
        shapes = np.empty((count, self.dtype.pattern.ndim), np.int64) if self.with_shapes else None
        stored = np.zeros(0 if copy else count, dtype=np.bool_)
        chunk_nbytes = 0
        at = 0
        copying = copy  # until the caller's values prove too small: then only sizes are read
        budget = _Budget(count)
        for part, sources, ids in self._batches(box, budget) if count else ():
            n = ids.size
            runs = _runs.runs_of(ids, sources.bases)
            del ids
            groups = _runs.by_block(runs)
            blocks = self._decode(part, sources, runs, groups)
            spans = [(k, _runs.spans(runs, group, k)) for k, group in groups]
            mine = offsets[at : at + n + 1]
            for k, pairs in spans:
                for cells, positions in pairs:
                    mine[1:][positions] = blocks[k].sizes[cells]
                    if shapes is not None:
                        shape_table = blocks[k].shapes
                        assert shape_table is not None
                        shapes[at:][positions] = shape_table[cells]
                    if not copy:
                        stored[at:][positions] = k != 0
            np.cumsum(mine, out=mine)
            chunk_nbytes += _nbytes(sources)
            sources.blocks[1:] = []  # the blocks hold what they need of the chunks
            at += n
            if copying and self.offsets is not None and int(mine[-1]) > self.values.size:
                copying = False
            if copying:  # the output's estimate (the items so far, at this rate for every cell)
                # and a sixteenth more: a reserve short of the last batch grows the output by
                # realloc, which copies it where it cannot grow in place
                self._copy(blocks, spans, mine, -(-int(mine[-1]) * count * 17 // (16 * at)))
        if copying != copy:
            raise ValueError(
                f"out's values hold {self.values.size:,} items, but the cells of this selection "
                f"hold {int(offsets[-1]):,}: pass values with room for {int(offsets[-1]):,} "
                "items (any shape), or leave out unset (the arrays given are partly overwritten)"
            )
        # the part of the output written (the rest was reserved, never touched)
        values = self.values[: int(offsets[-1])]
        return Scan(Cells(values, offsets, shapes), stored, chunk_nbytes)

    def _decode(
        self,
        part: Box,
        sources: _runs.Sources,
        runs: _runs.Runs,
        groups: list[tuple[int, npt.NDArray[np.intp]]],
    ) -> list[Block]:
        """Every chunk of the batch decoded (in threads); a corrupt one raises its codec's error,
        the first in C order of the selection when several are. The chunk is named (its key
        found) only then: the codec decodes it again to say which chunk fails."""
        metadata, dtype, codec = self.array.metadata, self.dtype, self.codec
        first = {k: int(np.min(runs.pos[g])) for k, g in groups}
        todo = sorted((k for k in first if k), key=first.__getitem__)

        def decode(k: int) -> Block:
            raw, count = sources.blocks[k]
            try:
                return codec.decode(raw, count, dtype, "chunk")
            except Exception as exc:
                failed = exc
            where = _cell_ids.chunk_name(metadata, _cell_at(part, first[k]))
            codec.decode(raw, count, dtype, where)  # raises again, naming the chunk
            raise failed

        blocks: list[Any] = list(sources.blocks)
        for k, block in zip(todo, self._map(decode, todo), strict=True):
            blocks[k] = block
        return blocks

    def _copy(
        self,
        blocks: list[Block],
        spans: list[tuple[int, list[_runs.Span]]],
        offsets: _Ints,
        reserve: int,
    ) -> None:
        """Copy every cell of the batch to its item ``offsets`` in the output. An output too
        small for them grows to ``reserve`` items, the whole read's estimate: reserved pages
        cost nothing until written, and growing once spares copies of what is written."""
        total = int(offsets[-1])
        if self.values.size < total:
            items = max(total, reserve)
            if not self.values.size:
                self.values = np.empty(items, dtype=self.values.dtype)
            else:
                self.values.resize((items,), refcheck=False)  # realloc: usually in place
        out = self.values.view(np.uint8)
        itemsize = self.values.dtype.itemsize

        def copy(job: tuple[int, list[_runs.Span]]) -> None:
            k, pairs = job
            for cells, positions in pairs:
                blocks[k].copy(cells, out, _runs.places(offsets, positions, itemsize))
            if k:
                blocks[k] = None  # type: ignore[call-overload]  # copied: release the chunk

        self._map(copy, spans)


class _Budget:
    """How many cells a read's next batch takes, and whether it may be fetched while the one
    before it is copied.

    A batch holds about a sixteenth of what the read's stored chunks hold once decoded (the
    read's output, as estimated from the batches so far), and at least :data:`BATCH_BYTES`
    (fewer, larger requests for small reads); the first one a sixteenth of the cells, or
    :data:`FIRST_BATCH_CELLS` (up to :data:`FIRST_BATCH_STRETCH` times that when it then ends
    on a row of shards' boundary). The next batch is fetched while one is copied only when a batch
    is about a sixteenth of the output: then the two (and the fetched bytes of one) stay within
    about a quarter of it beside the output; otherwise the batches take turns.
    """

    def __init__(self, count: int) -> None:
        self.count = count
        self.seen = 0  # cells fetched so far
        self.nbytes = 0  # their decoded chunk bytes

    def estimate(self) -> int:
        """The whole read's decoded bytes, estimated from the batches so far."""
        return int(self.nbytes / self.seen * self.count) if self.seen else 0

    def cells(self) -> int:
        """The cells of the next batch."""
        if not self.nbytes:
            return max(FIRST_BATCH_CELLS, self.count // BATCH_SHARE)
        share = max(float(BATCH_BYTES), self.estimate() / BATCH_SHARE)
        return max(1, int(share * self.seen / self.nbytes))

    def observe(self, cells: int, nbytes: int) -> bool:
        """Count a fetched batch; True when the next one may be fetched while it is copied
        (a batch cut at whole chunks may exceed its sixteenth by a little, not more)."""
        self.seen += cells
        self.nbytes += nbytes
        return not self.nbytes or nbytes <= 1.25 * self.estimate() / BATCH_SHARE


def _nbytes(sources: _runs.Sources) -> int:
    """The bytes of the chunks a fetch registered (as the codec reads them)."""
    return sum(int(raw.size) for raw, _ in sources.blocks[1:])


def _cell_at(part: Box, position: int) -> tuple[int, ...]:
    """The array coordinates of the cell at ``position`` (C order) of the box ``part``."""
    local = np.unravel_index(position, part.extents) if part.extents else ()
    return tuple(s + int(i) for s, i in zip(part.starts, local, strict=True))


def _inner_chunks(metadata: Any) -> tuple[int, ...] | None:
    """The shape of the chunks zarr decodes one by one (inner chunks when sharded)."""
    sharding = _cell_ids.sharding_of(metadata)
    if sharding is not None:
        return tuple(int(n) for n in sharding.chunk_shape)
    return regular_chunk_shape(metadata)


def _slabs(box: Box, metadata: Any, limit: Callable[[], int]) -> Iterator[Box]:
    """The batches of a read: slabs of whole shards where the limit holds a row of them (zarr
    then fetches each shard in one request), else of whole (inner) chunks; the box for other
    grids."""
    grid = regular_chunk_shape(metadata)
    if grid is None:
        return iter((box,))
    inner = _inner_chunks(metadata)
    units = [grid] if inner in (None, grid) else [grid, inner]
    return slabs(box, units, limit, FIRST_BATCH_STRETCH)


# ---------------------------------------------------------------------------- zarr failures


def through_zarr(
    array: Any, box: Box, run: Callable[[], _R], ours: list[BaseException] | None = None
) -> _R:
    """``run()``, zarr reading or writing ``box`` through a view. When zarr or the store fails
    (not a codec of ours, whose errors in ``ours`` pass as they are), the stored object to blame
    is found by reading the chunks of the box one by one, and named in a StoredChunkError."""
    try:
        return run()
    except Exception as exc:
        if ours and exc in ours:
            raise
        _blame(array, box, exc)
        raise


def _blame(array: Any, box: Box, exc: Exception) -> None:
    """Raise StoredChunkError for the first stored chunk of ``box`` that zarr cannot read."""
    metadata = array.metadata
    grid = regular_chunk_shape(metadata)
    if grid is None:
        return
    # a view of its own: reads that fail leave zarr's other tasks decoding into it
    probe = _cell_ids.view(array, _cell_ids.CellIds(lambda raw, n: 2, _cell_ids.no_writes))
    failed = _first_failure(probe, metadata, box, grid)
    if failed is not None:
        what, failure = failed
        raise StoredChunkError.of(what, failure) from exc


def _first_failure(
    probe: Any, metadata: Any, box: Box, grid: tuple[int, ...]
) -> tuple[str, Exception] | None:
    """The first stored object of ``box`` that zarr fails to read through ``probe``, named,
    and its failure."""
    inner = _inner_chunks(metadata)
    sharded = inner != grid
    for region in _regions(box, grid):
        failure = _fails(probe, region)
        if failure is None:
            continue
        start = tuple(r.start for r in region)
        name = _cell_ids.chunk_name(metadata, start, inner=False)
        what = f"the stored {name}"
        if sharded and inner is not None:
            shard = Box(start, tuple(r.stop for r in region), ())
            parts = [(r, _fails(probe, r)) for r in _regions(shard, inner)]
            if all(f is not None for _, f in parts):
                what = f"the index of the stored {name}"
            else:
                bad, failure = next((r, f) for r, f in parts if f is not None)
                what = f"the stored {_cell_ids.chunk_name(metadata, tuple(r.start for r in bad))}"
        return what, failure
    return None


def _regions(box: Box, chunks: tuple[int, ...]) -> Iterator[tuple[slice, ...]]:
    """The part of ``box`` in every chunk of a regular grid it overlaps, in C order."""
    ranges = [
        range(a // c, (b - 1) // c + 1)
        for a, b, c in zip(box.starts, box.stops, chunks, strict=True)
    ]
    for index in itertools.product(*ranges):
        yield tuple(
            slice(max(a, i * c), min(b, (i + 1) * c))
            for i, a, b, c in zip(index, box.starts, box.stops, chunks, strict=True)
        )


def _fails(probe: Any, region: tuple[slice, ...]) -> Exception | None:
    try:
        probe[region]
    except Exception as exc:  # whatever zarr or the store raises marks the chunk bad
        return exc
    return None
