"""Columnar access: a ``vlen-ndarray`` array as flat ``values`` plus ``offsets``.

:func:`read_columnar` and :func:`write_columnar` serve every rank: this module holds their 1-D
path (described below); arrays of any other rank go to :mod:`zarr_vlen_ndarray.columnar_nd`.
The result is a :class:`~zarr_vlen_ndarray.columns.Columnar`, a ``(values, offsets)`` 2-tuple
that also carries the selection's ``shape``.

Cell ``i`` of the selection is ``values[offsets[i]:offsets[i + 1]]``: ``values`` has shape
``(total, d1, ..., dk)`` and the element dtype (little-endian), ``offsets`` is int64 with one
entry more than there are cells, starting at 0. This is the layout of an Arrow list column, so
millions of cells move without one Python object per cell.

* :func:`read_columnar` fetches the chunks overlapping the selection (concurrently, through
  zarr's store) and undoes the bytes -> bytes codecs; then, with the two steps of the codec's
  own decoder (:mod:`zarr_vlen_ndarray.block`), it checks and scans every chunk
  (:func:`~zarr_vlen_ndarray.block.plan_block`, which copies nothing), allocates the output
  once, and copies each chunk's selected cells straight into its slice of the output
  (:func:`~zarr_vlen_ndarray.block.extract_block`), releasing each chunk's bytes as soon as
  they are copied. Both steps run on several chunks concurrently in threads (the compiled
  kernel releases the GIL). The memory needed beyond the stored chunks is the output itself
  plus 16 bytes per cell. Unwritten chunks read as fill cells (empty cells for the default
  fill value).
* :func:`write_columnar` checks the input once over the whole block (offsets start at 0, never
  decrease, end at ``len(values)``; values convert losslessly to the element dtype) and frames
  every chunk straight from ``values``/``offsets``. Chunks only partly covered (including the
  last chunk of an array whose length is not a multiple of the chunk length) are read, patched
  and rewritten, as zarr does. The stored bytes are identical to writing the same cells through
  zarr's object-array path, including empty-chunk elision: with ``write_empty_chunks=False``
  (zarr's default) a chunk whose cells all equal the fill value is deleted, not written.

Arrays whose codec chain this module does not handle directly (array -> array codecs before
``vlen-ndarray``, nested sharding) go through zarr's object-array path, with the same results.
Sharded arrays are read and written directly: a write builds each touched shard the way zarr's
``sharding_indexed`` codec does (see :mod:`zarr_ndarray_dtype.chunk_store`), keeping untouched inner
chunks verbatim, so the stored shards are byte-identical to the object path's.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from typing import Any, TypeVar, cast

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype import NDArray, readonly_cells
from zarr_ndarray_dtype.grid import Selection as NDSelection
from zarr_ndarray_dtype.grid import resolve
from zarr_vlen_ndarray.block import (
    BlockPlan,
    decode_block,
    extract_block,
    offsets_from_rows,
    plan_block,
)
from zarr_vlen_ndarray.cells import gather_cells, trailing_dims
from zarr_vlen_ndarray.chunk_io import ChunkLayout, ChunkWriter, layout_of, read_chunks
from zarr_vlen_ndarray.columnar_nd import frame_or_elide, read_columnar_nd, write_columnar_nd
from zarr_vlen_ndarray.columns import Columnar, FillCell, array_dtype, check_columnar

__all__ = ["Columnar", "check_columnar", "read_columnar", "write_columnar"]

Selection = slice | int | tuple[slice | int]


# ------------------------------------------------------------------------------------ checks


def _array_dtype(array: Any, what: str) -> tuple[NDArray, int]:
    """The ``ndarray`` data type and length of a 1-D array served by ``vlen-ndarray``."""
    dtype, shape = array_dtype(array, what)
    return dtype, int(shape[0])


def _one_d(selection: NDSelection, n: int, what: str) -> tuple[Selection, tuple[int, ...]]:
    """A 1-D selection without ``...`` and the shape it selects (``()`` for an int)."""
    items = selection if isinstance(selection, tuple) else (selection,)
    if any(item is Ellipsis for item in items):
        box = resolve(selection, (n,), what)
        start, stop = box.starts[0], box.stops[0]
        return (start if not box.shape else slice(start, stop)), box.shape
    plain = cast(Selection, selection)
    start, stop = _resolve(plain, n, what)  # raises for anything else, naming it
    return plain, (() if isinstance(items[0], int | np.integer) else (stop - start,))


def _resolve(selection: Selection, n: int, what: str) -> tuple[int, int]:
    """``(start, stop)`` of a contiguous selection of a length-``n`` axis."""
    if isinstance(selection, tuple):
        if len(selection) != 1:
            raise IndexError(f"{what}: the array is 1-D, got the {len(selection)}-d selection")
        selection = selection[0]
    if isinstance(selection, int | np.integer) and not isinstance(selection, bool):
        i = int(selection)
        if not -n <= i < n:
            raise IndexError(f"{what}: index {i} is out of bounds for {n} cells")
        i %= n
        return i, i + 1
    if not isinstance(selection, slice):
        raise TypeError(
            f"{what}: selection must be a slice or an int, got {type(selection).__name__}"
        )
    start, stop, step = selection.indices(n)
    if step != 1:
        raise ValueError(
            f"{what}: only contiguous selections (step 1) are supported, got step {step}; "
            "read the covering range and take every k-th cell from the offsets"
        )
    return start, max(start, stop)


# ---------------------------------------------------------------------------- chunk blocks


def _cut(
    values: np.ndarray, offsets: npt.NDArray[np.int64], a: int, b: int
) -> tuple[np.ndarray, npt.NDArray[np.int64]]:
    """Cells ``a:b`` of a decoded chunk as (values, rows); values is a view, no copy."""
    return values[int(offsets[a]) : int(offsets[b])], np.diff(offsets[a : b + 1])


# -------------------------------------------------------------------------------------- read


def read_columnar(array: Any, selection: NDSelection = ...) -> Columnar:
    """Read the cells ``selection`` of a ``vlen-ndarray`` array (any rank) as :class:`Columnar`.

    ``selection`` is an int, a slice with step 1, ``...`` or a tuple of those, one per axis
    (default: everything). The result unpacks as ``values, offsets`` (cells in C order of the
    selection) and has the selection's ``shape`` (int axes dropped, as numpy does). 1-D arrays
    take the path below; N-d ones :func:`~zarr_vlen_ndarray.columnar_nd.read_columnar_nd`.

    >>> import zarr, numpy as np
    >>> from zarr_vlen_ndarray import NDArray, VlenNDArrayCodec
    >>> g = zarr.create_array({}, shape=(2, 3), chunks=(1, 2), serializer=VlenNDArrayCodec(),
    ...                       dtype=NDArray(dtype="int16", shape=(None,)))
    >>> write_columnar(g, np.arange(4, dtype=np.int16), np.array([0, 1, 1, 2, 2, 3, 4]))
    >>> col = read_columnar(g, (slice(None), 1))
    >>> col.values.tolist(), col.offsets.tolist(), col.shape
    ([2], [0, 0, 1], (2,))
    """
    _, shape = array_dtype(array, "read_columnar")
    if len(shape) != 1:
        return read_columnar_nd(array, selection)
    one, selected = _one_d(selection, shape[0], "read_columnar")
    values, offsets = _read_columnar_1d(array, one)
    return Columnar(values, offsets, selected)


def _read_columnar_1d(
    array: Any, selection: Selection = slice(None)
) -> tuple[np.ndarray, npt.NDArray[np.int64]]:
    """Read the cells of a 1-D ``vlen-ndarray`` array as ``(values, offsets)``.

    ``selection`` is a slice with step 1 (default: everything) or an int. ``values`` has shape
    ``(total, d1, ..., dk)`` and the element dtype (little-endian); ``offsets`` is int64 with
    ``cells + 1`` entries. Unwritten chunks read as fill cells. A corrupt chunk raises the
    codec's ValueError (:class:`~zarr_vlen_ndarray.framing.FramingError`) naming the problem.

    >>> import zarr, numpy as np
    >>> from zarr_vlen_ndarray import NDArray, VlenNDArrayCodec
    >>> a = zarr.create_array({}, shape=(3,), chunks=(2,), serializer=VlenNDArrayCodec(),
    ...                       dtype=NDArray(dtype="int16", shape=(None,)))
    >>> write_columnar(a, np.array([1, 2, 3], np.int16), np.array([0, 2, 2, 3]))
    >>> values, offsets = read_columnar(a)
    >>> values.tolist(), offsets.tolist()
    ([1, 2, 3], [0, 2, 2, 3])
    """
    dtype, n = _array_dtype(array, "read_columnar")
    start, stop = _resolve(selection, n, "read_columnar")
    fixed = trailing_dims(dtype)
    item = dtype.item_dtype
    if start == stop:
        return np.empty((0, *fixed), dtype=item), np.zeros(1, dtype=np.int64)
    layout = layout_of(array)
    if layout is None:
        return _read_fallback(array, start, stop, dtype)
    size = layout.chunk_len
    fill = FillCell(dtype, layout.spec.fill_value)
    indices = range(start // size, (stop - 1) // size + 1)
    stored = read_chunks(layout, indices)
    workers = _workers(sum(framed is not None for framed in stored))
    with ExitStack() as stack:
        pool = stack.enter_context(ThreadPoolExecutor(workers)) if workers > 1 else None
        # Pass 1: every stored chunk checked and scanned (nothing copied).
        plans = _plan_many(layout, indices, stored, dtype, pool)
        # The cells each chunk gives: cells a:b of chunk `index`.
        spans = [
            (max(start, i * size) - i * size, min(stop, (i + 1) * size) - i * size) for i in indices
        ]
        # Offsets: each cell's rows written in place, then summed in place (no temporaries).
        offsets = np.empty(stop - start + 1, dtype=np.int64)
        offsets[0] = 0
        cell_at = 0
        for plan, (a, b) in zip(plans, spans, strict=True):
            cell_rows = offsets[cell_at + 1 : cell_at + 1 + b - a]
            if plan is None:
                cell_rows[...] = fill.rows
            else:
                np.floor_divide(plan.nbytes[a:b], dtype.fixed_nbytes, out=cell_rows)
            cell_at += b - a
        np.cumsum(offsets[1:], out=offsets[1:])
        jobs: list[tuple[int, int, int, int, int]] = []  # (plan position, a, b, row from, to)
        fills: list[tuple[int, int, int]] = []  # (cells, row from, to)
        cell_at = 0
        for k, (plan, (a, b)) in enumerate(zip(plans, spans, strict=True)):
            lo, hi = int(offsets[cell_at]), int(offsets[cell_at + b - a])
            if plan is not None:
                jobs.append((k, a, b, lo, hi))
            elif hi > lo:
                fills.append((b - a, lo, hi))
            cell_at += b - a
        # Pass 2: one output; each chunk's cells copied straight into its slice.
        values = np.empty((int(offsets[-1]), *fixed), dtype=item)
        for cells, lo, hi in fills:
            values[lo:hi] = fill.cells(cells)[0]
        _extract_many(plans, jobs, values, pool)
    return values, offsets


def _workers(jobs: int) -> int:
    """Threads for ``jobs`` chunks: one per CPU, never more than there are chunks."""
    return max(1, min(jobs, os.cpu_count() or 1))


_T = TypeVar("_T")
_R = TypeVar("_R")


def _map(pool: ThreadPoolExecutor | None, fn: Callable[[_T], _R], items: list[_T]) -> list[_R]:
    """``fn`` over ``items`` in order, in the pool's threads when there is a pool.

    A failing item raises the error of the first failing one in order, as a sequential loop
    would.
    """
    if pool is None:
        return [fn(x) for x in items]
    return list(pool.map(fn, items))


def _plan_many(
    layout: ChunkLayout,
    indices: Sequence[int],
    stored: list[npt.NDArray[np.uint8] | None],
    dtype: NDArray,
    pool: ThreadPoolExecutor | None,
) -> list[BlockPlan | None]:
    """Check and scan the stored chunks (None stays None), in the pool's threads if any.

    Takes ownership of ``stored`` (emptied here: each plan then holds the only reference to its
    chunk's bytes). Results keep the order of ``indices``.
    """
    jobs = [(i, framed) for i, framed in zip(indices, stored, strict=True) if framed is not None]
    stored.clear()

    def plan(job: tuple[int, npt.NDArray[np.uint8]]) -> BlockPlan:
        index, framed = job
        return plan_block(framed, layout.chunk_len, dtype, where=layout.where(index))

    done = _map(pool, plan, jobs)
    found = dict(zip((i for i, _ in jobs), done, strict=True))
    jobs.clear()
    done.clear()
    return [found.pop(i, None) for i in indices]


def _extract_many(
    plans: list[BlockPlan | None],
    jobs: list[tuple[int, int, int, int, int]],
    values: np.ndarray,
    pool: ThreadPoolExecutor | None,
) -> None:
    """Copy cells ``a:b`` of ``plans[k]`` into ``values[lo:hi]``, for every job ``(k, a, b, lo,
    hi)``.

    Each plan is dropped from ``plans`` as soon as it is copied, releasing its chunk's bytes
    while the other chunks are still being copied.
    """

    def extract(job: tuple[int, int, int, int, int]) -> None:
        k, a, b, lo, hi = job
        plan = plans[k]
        assert plan is not None
        plans[k] = None
        extract_block(plan, a, b, values[lo:hi])

    _map(pool, extract, jobs)


def _decode(
    layout: ChunkLayout, framed: npt.NDArray[np.uint8], index: int, dtype: NDArray
) -> tuple[np.ndarray, npt.NDArray[np.int64]]:
    """One stored chunk as (values, offsets), decoded and checked by the codec's decoder."""
    return decode_block(framed, layout.chunk_len, dtype, where=layout.where(index))


def _read_fallback(
    array: Any, start: int, stop: int, dtype: NDArray
) -> tuple[np.ndarray, npt.NDArray[np.int64]]:
    """Through zarr's object-array path (codec chains :mod:`chunk_io` does not handle)."""
    cells = array[start:stop]
    block, rows = gather_cells(list(cells), dtype)
    return block, offsets_from_rows(rows)


# ------------------------------------------------------------------------------------- write


def write_columnar(array: Any, values: Any, offsets: Any, selection: NDSelection = ...) -> None:
    """Write ``(values, offsets)`` into the cells ``selection`` of a ``vlen-ndarray`` array.

    The inverse of :func:`read_columnar`, for every rank: cells in C order of the selection,
    ``offsets`` with one entry more than the selection has cells. 1-D arrays take the path
    below; N-d ones :func:`~zarr_vlen_ndarray.columnar_nd.write_columnar_nd`.
    """
    _, shape = array_dtype(array, "write_columnar")
    if len(shape) != 1:
        write_columnar_nd(array, values, offsets, selection)
        return
    one, _ = _one_d(selection, shape[0], "write_columnar")
    _write_columnar_1d(array, values, offsets, one)


def _write_columnar_1d(
    array: Any,
    values: Any,
    offsets: Any,
    selection: Selection = slice(None),
) -> None:
    """Write ``(values, offsets)`` into the cells ``selection`` of a 1-D ``vlen-ndarray`` array.

    The inverse of :func:`read_columnar`: cell ``i`` is ``values[offsets[i]:offsets[i + 1]]``.
    The input is checked as a whole first (:func:`check_columnar`), so nothing is written when
    any cell does not fit. Stored chunks are byte-identical to ``array[selection] = cells``;
    chunks of fill cells are deleted when the array's ``write_empty_chunks`` is False. Sharded
    arrays are written shard by shard as zarr writes them; codec chains with array -> array
    codecs go through zarr's object-array path.
    """
    dtype, n = _array_dtype(array, "write_columnar")
    start, stop = _resolve(selection, n, "write_columnar")
    block, off = check_columnar(values, offsets, dtype, stop - start)
    if start == stop:
        return
    layout = layout_of(array)
    if layout is None:
        _write_fallback(array, block, off, start, stop)
        return
    _write_direct(layout, dtype, block, off, start, stop)


def _write_fallback(
    array: Any, block: np.ndarray, offsets: npt.NDArray[np.int64], start: int, stop: int
) -> None:
    """Through zarr's object-array path (codec chains :mod:`chunk_io` does not handle)."""
    # readonly_cells freezes the block it is given: hand it a view, not the caller's array.
    cells = readonly_cells(block.view(), offsets)
    array[start:stop] = cells


def _write_direct(
    layout: ChunkLayout,
    dtype: NDArray,
    block: np.ndarray,
    offsets: npt.NDArray[np.int64],
    start: int,
    stop: int,
) -> None:
    size = layout.chunk_len
    fill = FillCell(dtype, layout.spec.fill_value)
    elide = not layout.write_empty_chunks
    first_chunk, last_chunk = start // size, (stop - 1) // size
    writer = ChunkWriter(layout, range(first_chunk, last_chunk + 1), (start,), (stop,))
    # The stored chunks whose other cells the write keeps, all decoded (and so checked) before
    # anything is written; cells neither written nor kept are fill.
    fill_values, fill_rows = fill.cells(size)
    blank = fill_values, offsets_from_rows(fill_rows)
    bases = {
        index: blank if framed is None else _decode(layout, framed, index, dtype)
        for index, framed in writer.existing().items()
    }
    for index in writer.indices:
        first = index * size
        a, b = max(start, first) - first, min(stop, first + size) - first
        values, rows = _cut(block, offsets, first + a - start, first + b - start)
        if a or b != size:
            old_values, old_offsets = bases.get(index, blank)
            head_v, head_r = _cut(old_values, old_offsets, 0, a)
            tail_v, tail_r = _cut(old_values, old_offsets, b, size)
            values = np.concatenate([head_v, values, tail_v])
            rows = np.concatenate([head_r, rows, tail_r])
        writer.add(index, frame_or_elide(values, rows, dtype, fill, elide, layout.where(index)))
    writer.flush()
