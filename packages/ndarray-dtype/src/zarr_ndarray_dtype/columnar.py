"""Columnar access to the cells of any ``ndarray`` array, of any rank and either codec:
:class:`Columnar`, :func:`read_columnar` and :func:`write_columnar`, with no Python object per
cell.

Chunks go through zarr's own pipeline (:mod:`zarr_ndarray_dtype.cell_ids`): zarr fetches,
decompresses, cuts shards and merges partial chunks; the array's codec contributes only its
:class:`~zarr_ndarray_dtype.blocks.BlockCodec`. Reads stream in batches of whole chunks into
one output; writes check every cell and every stored chunk they merge before storing any.
"""

from __future__ import annotations

import itertools
import math
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt
import zarr
from zarr.codecs import ShardingCodec

from zarr_ndarray_dtype import cell_ids
from zarr_ndarray_dtype._compat import regular_chunk_shape
from zarr_ndarray_dtype.blocks import Block, BlockCodec, ColumnsBlock, FillBlock
from zarr_ndarray_dtype.columns import Cells, FillCell, cell_shapes, check_columns, needs_shapes
from zarr_ndarray_dtype.dtype import NDArray
from zarr_ndarray_dtype.errors import StoredChunkError
from zarr_ndarray_dtype.grid import Box, Selection, resolve, slabs
from zarr_ndarray_dtype.segments import offsets_of

__all__ = [
    "Columnar",
    "Scan",
    "read_cells",
    "read_columnar",
    "scan_cells",
    "served",
    "write_cells",
    "write_columnar",
]

#: A read's batches hold about 1/BATCH_SHARE of its stored chunks' decoded bytes each ...
BATCH_SHARE = 16
#: ... and at least this many bytes (fewer batches for small reads); see :class:`_Budget`.
BATCH_BYTES = 8 << 20
#: Cells the first batch may take before any size is known: a read of a few positions or one
#: region stays one batch (one request for a shard's index).
FIRST_BATCH_CELLS = 4096

_T = TypeVar("_T")
_R = TypeVar("_R")
_Ints = npt.NDArray[np.int64]


class Columnar:
    """Cells as columns: cell ``i`` is ``values[offsets[i]:offsets[i + 1]].reshape(shapes[i])``.

    ``offsets`` (int64, one entry more than there are cells, from 0) index the first axis of
    ``values`` (the element dtype, little-endian). Where the pattern's only variable dimension
    is the leading one (``[null, d1..dk]``), ``values`` keeps the fixed extents, shape
    ``(total_rows, d1, ..., dk)``, and ``offsets`` count rows: Arrow's
    ``list<fixed_size_list>``, awkward's ``var * d1 * ... * T``. Otherwise ``values`` is flat
    and ``offsets`` count items. ``shapes`` is the ``(count, ndim)`` int64 table of every cell's
    shape, ``shape`` the selection's shape (``math.prod(shape)`` cells, C order) and
    ``data_type`` the cells' :class:`~zarr_ndarray_dtype.NDArray`.

    ``values, offsets = col`` unpacks the two columns.
    """

    __slots__ = ("_shapes", "data_type", "offsets", "shape", "values")

    def __init__(
        self,
        data_type: NDArray,
        values: np.ndarray,
        offsets: npt.NDArray[np.int64],
        shapes: npt.NDArray[np.int64] | None = None,
        shape: tuple[int, ...] | None = None,
    ) -> None:
        # ``shapes`` may be None only when it follows from the offsets (rows of ``values``).
        self.data_type = data_type
        self.values = values
        self.offsets = offsets
        self._shapes = shapes
        self.shape = (offsets.size - 1,) if shape is None else tuple(int(n) for n in shape)

    @property
    def shapes(self) -> npt.NDArray[np.int64]:
        """The ``(count, ndim)`` int64 shape of every cell (computed once, on first use, for
        ``[null, d1..dk]``, where the row offsets imply it)."""
        if self._shapes is None:
            table = np.empty((self.offsets.size - 1, self.values.ndim), dtype=np.int64)
            np.subtract(self.offsets[1:], self.offsets[:-1], out=table[:, 0])
            table[:, 1:] = self.values.shape[1:]
            self._shapes = table
        return self._shapes

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter((self.values, self.offsets))

    def __repr__(self) -> str:
        return (
            f"Columnar({self.data_type!r}, shape={self.shape}: values {self.values.shape} "
            f"{self.values.dtype}, offsets up to {int(self.offsets[-1])})"
        )

    def to_awkward(self) -> Any:
        """The cells as an ``awkward.Array`` of type ``shape... * <cell type>``, e.g.
        ``N * var * 2 * float32`` for ``[null, 2]`` (``values`` shared, not copied).

        Needs the ``awkward`` extra; see :func:`zarr_ndarray_dtype.awkward.to_awkward`.
        """
        from zarr_ndarray_dtype.awkward import to_awkward

        return to_awkward(self)

    @classmethod
    def from_awkward(cls, array: Any, ndim: int = 1) -> Columnar:
        """The inverse of :meth:`to_awkward`: the first ``ndim`` dimensions of ``array`` index
        the cells, the rest are each cell's. See :func:`zarr_ndarray_dtype.awkward.from_awkward`.
        """
        from zarr_ndarray_dtype.awkward import from_awkward

        return from_awkward(array, ndim)


def served(array: Any, what: str) -> tuple[NDArray, BlockCodec]:
    """The data type of an ``ndarray`` array and the block codec of its serializer."""
    metadata = getattr(array, "metadata", None)
    dtype = getattr(metadata, "data_type", None)
    if not isinstance(dtype, NDArray):
        raise TypeError(
            f"{what} needs a zarr array of the 'ndarray' data type, got data type {dtype!r}; "
            "create it with dtype=zarr_ndarray_dtype.NDArray(dtype=..., shape=(...))"
        )
    serializer = cell_ids.serializer_of(metadata)
    codec: BlockCodec | None = getattr(serializer, "block_codec", None)
    if codec is None:
        name = serializer.to_dict().get("name")
        raise ValueError(
            f"{what} reads and writes cells stored by the 'vlen-ndarray', 'ragged-ndarray' or "
            f"'bytes' codec; this {list(dtype.shape)} array is stored by {name!r}, which gives "
            "no columnar access: read it as a plain zarr array"
        )
    return dtype, codec


# ----------------------------------------------------------------------------------- sources


class _Sources:
    """Where the cells of one pass of zarr come from: blocks with consecutive id ranges.

    Block 0 is the fill cell (id 0). Every other block takes the ids ``base .. base + count -
    1``, one id left unused between blocks, so that ids consecutive in a chunk or a selection
    come from one block.
    """

    def __init__(self, fill: FillBlock, first: list[Block]) -> None:
        self.blocks: list[Any] = [fill]  # a read registers (bytes, cells) and decodes later
        self.bases = [0]
        self.next = 2
        self.lock = threading.Lock()
        for block in first:
            self.add(block, block.sizes.size)

    def add(self, block: object, count: int) -> int:
        """Register ``block`` (or what stands for it) of ``count`` cells; its base id."""
        with self.lock:
            base = self.next
            self.blocks.append(block)
            self.bases.append(base)
            self.next = base + count + 1
            return base


class _Runs(NamedTuple):
    """Runs of consecutive cells of one block: where they are, how long, whose, from which."""

    pos: _Ints
    length: _Ints
    source: _Ints
    first: _Ints  # the block's cell at the run's start


def _runs(ids: npt.NDArray[np.uint64], bases: list[int]) -> _Runs:
    """Cut ids (in C order of a chunk or a selection) into runs of one block's cells."""
    n = ids.size
    if not n:
        empty = np.zeros(0, np.int64)
        return _Runs(empty, empty, empty, empty)
    steps = np.diff(ids.view(np.int64))  # ids stay far below 2**63
    breaks = steps != 1
    if breaks.any():
        breaks &= (steps != 0) | (ids[1:] != 0)  # fill cells (id 0) in a row: one run too
    pos = np.flatnonzero(breaks)
    pos += 1
    pos = np.concatenate(([0], pos)).astype(np.int64)
    start = ids[pos].astype(np.int64)
    source = np.searchsorted(np.array(bases, np.int64), start, side="right").astype(np.int64) - 1
    length = np.diff(np.append(pos, n))
    return _Runs(pos, length, source, start - np.array(bases, np.int64)[source])


def _by_block(runs: _Runs) -> list[tuple[int, npt.NDArray[np.intp]]]:
    """``(block, its runs)`` for every block the runs come from."""
    if not runs.source.size:
        return []
    order = np.argsort(runs.source, kind="stable")
    sources = runs.source[order]
    cut = np.flatnonzero(np.concatenate(([True], sources[1:] != sources[:-1], [True])))
    return [(int(sources[a]), order[a:b]) for a, b in itertools.pairwise(cut.tolist())]


#: Runs at least this long (on average) are moved run by run, as slices; shorter ones at once.
_LONG_RUN = 64

_Span = tuple[slice | _Ints, slice | _Ints]


def _spans(runs: _Runs, group: npt.NDArray[np.intp], block: int) -> list[_Span]:
    """``(cells of the block, their positions)`` of the runs ``group``: a pair of slices per run
    when the runs are long (no index arrays), else one pair of index arrays."""
    lengths = runs.length[group]
    if block and lengths.size * _LONG_RUN <= int(lengths.sum()):
        return [
            (slice(first, first + n), slice(pos, pos + n))
            for pos, n, first in zip(
                runs.pos[group].tolist(), lengths.tolist(), runs.first[group].tolist(), strict=True
            )
        ]
    return [_cells(runs, group, block)]


def _places(offsets: _Ints, positions: slice | _Ints, unit: int) -> int | _Ints:
    """Where cells at ``positions`` go in the output bytes: the first one's byte offset for a
    slice (the rest follow back to back), else each one's (see ``Block.copy``)."""
    if isinstance(positions, slice):
        return int(offsets[positions.start]) * unit
    return offsets[positions] * unit


def _cells(runs: _Runs, group: npt.NDArray[np.intp], block: int) -> tuple[_Ints, _Ints]:
    """``(cells of the block, their positions)`` of the runs ``group``, in order."""
    lengths = runs.length[group]
    step = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(
        offsets_of(lengths)[:-1], lengths
    )
    positions = np.repeat(runs.pos[group], lengths) + step
    cells = np.repeat(runs.first[group], lengths) + step if block else np.zeros_like(step)
    return cells, positions


# -------------------------------------------------------------------------------------- read


def read_columnar(array: zarr.Array, selection: Selection = ...) -> Columnar:
    """Read the cells ``selection`` of an ``ndarray`` array as :class:`Columnar`.

    ``selection`` is an int, a slice with step 1, ``...`` or a tuple of those, one per axis
    (ints drop their axis from the shape). Unwritten chunks read as fill cells; a corrupt chunk
    raises its codec's ValueError naming it. No Python object is made per cell.

    >>> import zarr, numpy as np
    >>> from zarr_ndarray_dtype import NDArray
    >>> import zarr_vlen_ndarray  # the codec of [null, d1..dk]
    >>> a = zarr.create_array({}, shape=(3,), chunks=(2,),
    ...                       dtype=NDArray(dtype="int16", shape=(None, 2)))
    >>> a[0] = np.array([[1, 2], [3, 4]], np.int16)
    >>> col = read_columnar(a)
    >>> col.values.tolist(), col.offsets.tolist(), col.shapes.tolist()
    ([[1, 2], [3, 4]], [0, 2, 2, 2], [[2, 2], [0, 2], [0, 2]])
    """
    dtype = served(array, "read_columnar")[0]
    cells, box = read_cells(array, selection, "read_columnar")
    pattern = dtype.pattern
    if not pattern.is_leading_variable:
        shapes = cell_shapes(cells, pattern)
        return Columnar(dtype, cells.values, cells.offsets, shapes, box.shape)
    offsets = cells.offsets  # the engine's own array: items to rows in place
    if pattern.fixed_items != 1:
        offsets //= pattern.fixed_items
    values = cells.values.reshape(-1, *pattern.dims[1:])
    return Columnar(dtype, values, offsets, None, box.shape)


def read_cells(array: Any, selection: Selection, what: str) -> tuple[Cells, Box]:
    """The cells ``selection`` of an array as :class:`Cells`, and the selection's box."""
    dtype, codec = served(array, what)
    box = resolve(selection, tuple(int(n) for n in array.metadata.shape), what)
    return _Reader(array, dtype, codec).read(box).cells, box


class Scan(NamedTuple):
    """The cells of a selection without their values: sizes (and shapes), and which of them a
    stored chunk holds (the others are fill cells of unwritten chunks)."""

    cells: Cells  # values empty
    stored: npt.NDArray[np.bool_]
    chunk_nbytes: int  # the stored chunks' bytes as the codec reads them (after decompression)


def scan_cells(array: Any, selection: Selection, what: str) -> Scan:
    """Decode the chunks of ``selection`` (every rule of the codec checked) but copy no values."""
    dtype, codec = served(array, what)
    box = resolve(selection, tuple(int(n) for n in array.metadata.shape), what)
    return _Reader(array, dtype, codec).read(box, copy=False)


class _Reader:
    """One read: a view of the array, and the chunks zarr hands it batch by batch."""

    def __init__(self, array: Any, dtype: NDArray, codec: BlockCodec) -> None:
        self.array, self.dtype, self.codec = array, dtype, codec
        self.with_shapes = needs_shapes(dtype.pattern)
        self.fill = FillBlock(FillCell(dtype, array.metadata.fill_value), self.with_shapes)
        codec_ids = cell_ids.CellIds(self._register, _no_writes)
        self.view = cell_ids.view(array, codec_ids, store=cell_ids.keep_index(array.metadata))
        self.values = np.empty(0, dtype=dtype.item_dtype)
        self.fetching = _Sources(self.fill, [])
        self.pool: ThreadPoolExecutor | None = None

    def _register(self, raw: npt.NDArray[np.uint8], count: int) -> int:
        return self.fetching.add((raw, count), count)

    def _fetch(self, part: Box) -> tuple[_Sources, npt.NDArray[np.uint64]]:
        """zarr reads the chunks of ``part``: their bytes (registered) and the ids of its cells.
        One fetch runs at a time, so the view's codec registers into the one being fetched."""
        self.fetching = sources = _Sources(self.fill, [])
        ids = _through_zarr(self.array, part, partial(self.view.__getitem__, part.slices))
        return sources, np.asarray(ids, dtype=np.uint64).reshape(-1)

    def _batches(
        self, box: Box, budget: _Budget
    ) -> Iterator[tuple[Box, _Sources, npt.NDArray[np.uint64]]]:
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
        has several cores (the kernels release the GIL); a failing item raises the error of
        the first failing one in order."""
        if min(len(items), os.cpu_count() or 1) <= 1:
            return [fn(x) for x in items]
        return list(self._threads().map(fn, items))

    def read(self, box: Box, copy: bool = True) -> Scan:
        try:
            return self._read(box, copy)
        finally:
            if self.pool is not None:  # a fetch ahead still running is waited for
                self.pool.shutdown(cancel_futures=True)
                self.pool = None

    def _read(self, box: Box, copy: bool) -> Scan:
        count = math.prod(box.extents)
        offsets = np.zeros(count + 1, dtype=np.int64)
        shapes = np.empty((count, self.dtype.pattern.ndim), np.int64) if self.with_shapes else None
        stored = np.zeros(0 if copy else count, dtype=np.bool_)
        chunk_nbytes = 0
        at = 0
        budget = _Budget(count)
        for part, sources, ids in self._batches(box, budget) if count else ():
            n = ids.size
            runs = _runs(ids, sources.bases)
            del ids
            groups = _by_block(runs)
            blocks = self._decode(part, sources, runs, groups)
            spans = [(k, _spans(runs, group, k)) for k, group in groups]
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
            if copy:  # the output's estimate (the items so far, at this rate for every cell)
                # and a sixteenth more: a reserve short of the last batch grows the output by
                # realloc, which copies it where it cannot grow in place
                self._copy(blocks, spans, mine, -(-int(mine[-1]) * count * 17 // (16 * at)))
        # the part of the output written (the rest was reserved, never touched)
        values = self.values[: int(offsets[-1])]
        return Scan(Cells(values, offsets, shapes), stored, chunk_nbytes)

    def _decode(
        self,
        part: Box,
        sources: _Sources,
        runs: _Runs,
        groups: list[tuple[int, npt.NDArray[np.intp]]],
    ) -> list[Block]:
        """Every chunk of the batch decoded (in threads); a corrupt one raises its codec's error,
        the first in C order of the selection when several are."""
        metadata, dtype, codec = self.array.metadata, self.dtype, self.codec
        first = {k: int(np.min(runs.pos[g])) for k, g in groups}
        todo = sorted((k for k in first if k), key=first.__getitem__)

        def decode(k: int) -> Block:
            raw, count = sources.blocks[k]
            where = cell_ids.chunk_name(metadata, _cell_at(part, first[k]))
            return codec.decode(raw, count, dtype, where)

        blocks: list[Any] = list(sources.blocks)
        for k, block in zip(todo, self._map(decode, todo), strict=True):
            blocks[k] = block
        return blocks

    def _copy(
        self,
        blocks: list[Block],
        spans: list[tuple[int, list[_Span]]],
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
        unit = self.values.dtype.itemsize

        def copy(job: tuple[int, list[_Span]]) -> None:
            k, pairs = job
            for cells, positions in pairs:
                blocks[k].copy(cells, out, _places(offsets, positions, unit))
            if k:
                blocks[k] = None  # type: ignore[call-overload]  # copied: release the chunk

        self._map(copy, spans)


class _Budget:
    """How many cells a read's next batch takes, and whether it may be fetched while the one
    before it is copied.

    A batch holds about a sixteenth of what the read's stored chunks hold once decoded (the
    read's output, as estimated from the batches so far), and at least :data:`BATCH_BYTES`
    (fewer, larger requests for small reads); the first one a sixteenth of the cells, or
    :data:`FIRST_BATCH_CELLS`. The next batch is fetched while one is copied only when a batch
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


def _nbytes(sources: _Sources) -> int:
    """The bytes of the chunks a fetch registered (as the codec reads them)."""
    return sum(int(raw.size) for raw, _ in sources.blocks[1:])


def _no_writes(ids: npt.NDArray[np.uint64], write_empty: bool) -> None:
    raise AssertionError("a read view never encodes")


def _cell_at(part: Box, position: int) -> tuple[int, ...]:
    """The array coordinates of the cell at ``position`` (C order) of the box ``part``."""
    local = np.unravel_index(position, part.extents) if part.extents else ()
    return tuple(s + int(i) for s, i in zip(part.starts, local, strict=True))


def _inner_chunks(metadata: Any) -> tuple[int, ...] | None:
    """The shape of the chunks zarr decodes one by one (inner chunks when sharded)."""
    codecs = tuple(metadata.codecs)
    if len(codecs) == 1 and isinstance(codecs[0], ShardingCodec):
        return tuple(int(n) for n in codecs[0].chunk_shape)
    return regular_chunk_shape(metadata)


def _slabs(box: Box, metadata: Any, limit: Callable[[], int]) -> Iterator[Box]:
    """The batches of a read: slabs of whole shards where the limit holds a row of them (zarr
    then fetches each shard in one request), else of whole (inner) chunks; the box for other
    grids."""
    grid = regular_chunk_shape(metadata)
    if grid is None:
        return iter((box,))
    inner = _inner_chunks(metadata)
    return slabs(box, [grid] if inner in (None, grid) else [grid, inner], limit)


# ---------------------------------------------------------------------------- zarr failures


def _through_zarr(
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
    probe = cell_ids.view(array, cell_ids.CellIds(lambda raw, n: 2, _no_writes))
    inner = _inner_chunks(metadata)
    sharded = inner != grid
    for region in _regions(box, grid):
        failure = _fails(probe, region)
        if failure is None:
            continue
        start = tuple(r.start for r in region)
        name = cell_ids.chunk_name(metadata, start, inner=False)
        what = f"the stored {name}"
        if sharded and inner is not None:
            shard = Box(start, tuple(r.stop for r in region), ())
            parts = [(r, _fails(probe, r)) for r in _regions(shard, inner)]
            if all(f is not None for _, f in parts):
                what = f"the index of the stored {name}"
            else:
                bad, failure = next((r, f) for r, f in parts if f is not None)
                what = f"the stored {cell_ids.chunk_name(metadata, tuple(r.start for r in bad))}"
        raise StoredChunkError.of(what, failure) from exc


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


# ------------------------------------------------------------------------------------- write


def write_columnar(
    array: zarr.Array,
    values: npt.ArrayLike,
    offsets: npt.ArrayLike,
    selection: Selection = ...,
    *earlier_form: object,
    shapes: npt.ArrayLike | None = None,
) -> None:
    """Write columnar cells into ``selection`` of an ``ndarray`` array: the inverse of
    :func:`read_columnar`, with the same rule (cell ``i`` is
    ``values[offsets[i]:offsets[i + 1]].reshape(shapes[i])``, cells in C order of the selection).

    ``values`` is flat, or for ``[null, d1..dk]`` of shape ``(total_rows, d1, ..., dk)`` with
    ``offsets`` counting rows. ``shapes`` (a ``(cells, ndim)`` integer table) is needed only
    for patterns with two or more variable dimensions; given for any pattern, it is checked.
    ``write_columnar(b, col.values, col.offsets, shapes=col.shapes)`` of ``col =
    read_columnar(a)`` stores chunks byte-identical to ``b[...] = a[...]``.

    Everything is checked first, so nothing is written when any cell does not fit (values
    convert to the element dtype only without loss), nor when a stored chunk the write keeps
    cells of is corrupt. (``earlier_form`` only catches calls of the earlier signature, to
    name the new one.)
    """
    if earlier_form or np.ndim(offsets) == 2:  # a shape table where the offsets go
        raise TypeError(
            "write_columnar takes (array, values, offsets, selection=..., *, shapes=None): the "
            "earlier call write_columnar(array, values, shapes, offsets, selection) is now "
            "write_columnar(array, values, offsets, selection, shapes=shapes)"
        )
    dtype = served(array, "write_columnar")[0]
    box = resolve(selection, tuple(int(n) for n in array.metadata.shape), "write_columnar")
    cells = check_columns(values, offsets, dtype, math.prod(box.extents), shapes=shapes)
    write_cells(array, cells, box, "write_columnar")


def write_cells(array: Any, cells: Cells, box: Box, what: str) -> None:
    """Write checked ``cells`` into the box of an array (cells in C order of the box)."""
    dtype, codec = served(array, what)
    count = math.prod(box.extents)
    if not count:
        return
    ids = np.arange(2, count + 2, dtype=np.uint64).reshape(box.extents)  # the cells: block 1
    # zarr reads the stored chunks a write covers in part: when it stores several objects,
    # a first pass (storing nothing) decodes them all, so that none is stored if one is corrupt.
    for dry in (True, False) if _partial_objects(array.metadata, box) > 1 else (False,):
        writer = _Writer(array, dtype, codec, cells, dry=dry)
        try:
            writer.write(box, ids)
        except Exception as exc:
            if exc in writer.failed:  # a corrupt stored chunk: reading the box names it
                _Reader(array, dtype, codec).read(box)
            raise


def _partial_objects(metadata: Any, box: Box) -> int:
    """How many stored objects (chunks, or shards) a write of ``box`` stores at most, when it
    covers the array in part (0 when it covers it all); 2 for grids that are not regular."""
    shape = tuple(int(n) for n in metadata.shape)
    if box.starts == (0,) * len(shape) and box.stops == shape:
        return 0
    grid = regular_chunk_shape(metadata)
    if grid is None:
        return 2
    spans = zip(box.starts, box.stops, grid, strict=True)
    return math.prod((b - 1) // g - a // g + 1 for a, b, g in spans)


class _Writer:
    """One pass of zarr's write over cell ids: the cells come from the fill cell, the caller's
    cells and the stored chunks zarr decodes to merge them."""

    def __init__(self, array: Any, dtype: NDArray, codec: BlockCodec, cells: Cells, dry: bool):
        self.array, self.dtype, self.codec, self.dry = array, dtype, codec, dry
        self.with_shapes = needs_shapes(dtype.pattern)
        self.fill = FillCell(dtype, array.metadata.fill_value)
        self.sources = _Sources(FillBlock(self.fill, self.with_shapes), [ColumnsBlock(cells)])
        self.fills: dict[int, npt.NDArray[np.bool_]] = {}
        self.failed: list[BaseException] = []

    def write(self, box: Box, ids: np.ndarray) -> None:
        codec = cell_ids.CellIds(self._decode, self._encode)
        store = cell_ids.DiscardWrites if self.dry else None
        target = cell_ids.view(self.array, codec, store=store)

        def run() -> None:
            target[box.slices] = ids

        _through_zarr(self.array, box, run, self.failed)

    def _decode(self, raw: npt.NDArray[np.uint8], count: int) -> int:
        where = "stored chunk (one the write keeps cells of)"
        try:
            block = self.codec.decode(raw, count, self.dtype, where)
        except Exception as exc:
            self.failed.append(exc)  # the codec's own error: raised as it is
            raise
        return self.sources.add(block, count)

    def _encode(
        self, ids: npt.NDArray[np.uint64], write_empty: bool
    ) -> npt.NDArray[np.uint8] | None:
        if self.dry:
            return None
        with self.sources.lock:
            blocks, bases = list(self.sources.blocks), list(self.sources.bases)
        runs = _runs(ids, bases)
        spans = [(k, pair) for k, g in _by_block(runs) for pair in _spans(runs, g, k)]
        if not write_empty and all(self._is_fill(k, cells) for k, (cells, _) in spans):
            return None
        k, (cells, _) = spans[0]
        if len(spans) == 1 and isinstance(cells, slice) and isinstance(blocks[k], ColumnsBlock):
            whole = blocks[k].cells()  # one run of the caller's cells: a view, no copy
            a, b = cells.start, cells.stop
            offsets = whole.offsets[a : b + 1] - whole.offsets[a]
            values = whole.values[int(whole.offsets[a]) : int(whole.offsets[b])]
            shapes = None if whole.shapes is None else whole.shapes[a:b]
            return self.codec.encode(Cells(values, offsets, shapes), self.dtype, "chunk")
        sizes = np.empty(ids.size, dtype=np.int64)
        shapes = (
            np.empty((ids.size, self.dtype.pattern.ndim), np.int64) if self.with_shapes else None
        )
        for k, (cells, positions) in spans:
            sizes[positions] = blocks[k].sizes[cells]
            if shapes is not None:
                table = blocks[k].shapes
                assert table is not None
                shapes[positions] = table[cells]
        offsets = offsets_of(sizes)
        values = np.empty(int(offsets[-1]), dtype=self.dtype.item_dtype)
        out, unit = values.view(np.uint8), values.dtype.itemsize
        for k, (cells, positions) in spans:
            blocks[k].copy(cells, out, _places(offsets, positions, unit))
        return self.codec.encode(Cells(values, offsets, shapes), self.dtype, "chunk")

    def _is_fill(self, k: int, cells: slice | _Ints) -> bool:
        if not k:
            return True
        mask = self.fills.get(k)
        if mask is None:
            mask = self.fills.setdefault(k, self.fill.matches(self.sources.blocks[k].cells()))
        return bool(mask[cells].all())
