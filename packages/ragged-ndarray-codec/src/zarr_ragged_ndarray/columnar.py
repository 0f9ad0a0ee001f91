"""Columnar access: an N-d ``ragged-ndarray`` array as flat ``values``, ``shapes`` and ``offsets``.

For a selection of ``count`` cells (C order over the selection), cell ``i`` is
``values[offsets[i]:offsets[i + 1]].reshape(shapes[i])``: ``values`` is flat with the element
dtype (little-endian), ``shapes`` is the ``(count, ndim)`` int64 table of every cell's full
shape and ``offsets`` int64 with ``count + 1`` entries from 0. The selection's own shape comes
back beside them (:class:`Columnar`), and :func:`write_columnar` takes the same form back. Millions
of cells move without one Python object per cell.

* :func:`read_columnar` fetches the chunks overlapping the selection (concurrently, through
  zarr's store; sharded arrays through their shard index), undoes the bytes -> bytes codecs,
  checks each chunk exactly as the codec does and copies the selected cells into one block, one
  slice per run of cells that are consecutive in both the chunk and the selection. Unwritten
  chunks read as fill cells.
* :func:`write_columnar` checks the input as a whole first, then encodes every chunk straight
  from the columns. Chunks the selection covers only in part are read, patched and rewritten.
  The stored bytes equal those of ``array[selection] = cells`` through zarr's object path,
  including empty-chunk elision (``write_empty_chunks=False`` deletes a chunk of fill cells).
  Sharded arrays are written shard by shard as zarr's sharding codec writes them
  (:class:`zarr_ndarray_dtype.chunk_store.ChunkWriter`); codec chains
  :mod:`~zarr_ragged_ndarray.chunk_io` does not handle go through zarr's object path both ways.

Selections are an int, a slice with step 1, ``...`` or a tuple of those, one per axis; ints drop
their axis from the returned shape, as in numpy.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype import CellError, CellTypeError, NDArray
from zarr_ndarray_dtype.grid import Box, Selection, chunk_boxes, grid_indices, resolve
from zarr_ndarray_dtype.segments import assemble, offsets_of
from zarr_ragged_ndarray.cells import cut_cells, fill_cell, gather_cells
from zarr_ragged_ndarray.chunk_io import ChunkLayout, ChunkWriter, layout_of, read_chunks
from zarr_ragged_ndarray.codec import CODEC_NAME, decode_values, encode_values
from zarr_ragged_ndarray.layout import U32_MAX, element_items

__all__ = ["Columnar", "check_columnar", "read_columnar", "write_columnar"]


class Columnar(NamedTuple):
    """Cells in columnar form (see the module docstring)."""

    values: np.ndarray
    shapes: npt.NDArray[np.int64]
    offsets: npt.NDArray[np.int64]
    shape: tuple[int, ...]


def _array_dtype(array: Any, what: str) -> tuple[NDArray, tuple[int, ...]]:
    metadata = getattr(array, "metadata", None)
    dtype = getattr(metadata, "data_type", None)
    if not isinstance(dtype, NDArray):
        raise TypeError(
            f"{what} needs a zarr array of the 'ndarray' data type, got data type {dtype!r}; "
            "create it with dtype=zarr_ndarray_dtype.NDArray(dtype=..., shape=(...))"
        )
    if dtype.pattern.is_fixed:
        raise ValueError(
            f"{what} serves patterns with a variable dimension (the {CODEC_NAME!r} codec's); "
            f"{list(dtype.shape)} is all-fixed: read it as a plain array"
        )
    return dtype, tuple(int(n) for n in array.metadata.shape)


# ------------------------------------------------------------------------------------ checks


def check_columnar(
    values: Any, shapes: Any, offsets: Any, dtype: NDArray, cells: int | None = None
) -> tuple[np.ndarray, npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Check columnar input against ``dtype``; return C-contiguous LE values and int64 tables.

    ``shapes`` must be a ``(cells, ndim)`` integer table matching the pattern (fixed extents as
    given, variable extents 0 .. 2**32 - 1), ``offsets`` integers with ``cells + 1`` entries,
    starting at 0, each step the item count of the cell's shape and ending at ``len(values)``;
    ``values`` must be 1-D and convert to the element dtype without changing any value. Raises
    ValueError / TypeError naming the problem.
    """
    pattern = dtype.pattern
    tab = np.asarray(shapes)
    off = np.asarray(offsets)
    for name, arr in (("shapes", tab), ("offsets", off)):
        if arr.dtype.kind not in "iu":
            raise TypeError(f"{name} must be an integer array, got dtype {arr.dtype}")
    if tab.ndim != 2 or tab.shape[1] != pattern.ndim:
        raise ValueError(
            f"shapes must be a (cells, {pattern.ndim}) table (one full shape per cell for the "
            f"pattern {pattern.to_json()}), got shape {tab.shape}"
        )
    count = tab.shape[0]
    if cells is not None and count != cells:
        raise ValueError(f"shapes describes {count} cells, but the selection holds {cells}")
    if off.shape != (count + 1,):
        raise ValueError(
            f"offsets must have {count + 1} entries (one more than the cells: cell i is "
            f"values[offsets[i]:offsets[i + 1]]), got shape {off.shape}"
        )
    if count and (int(np.min(tab)) < 0 or int(np.max(tab)) > U32_MAX):
        bad = int(np.argmax(((tab < 0) | (tab > U32_MAX)).any(axis=1)))
        raise ValueError(
            f"shapes[{bad}] = {tab[bad].tolist()}: extents must be 0 .. {U32_MAX} (the layout "
            "stores them as u32le)"
        )
    tab = tab.astype(np.int64, copy=False)
    fixed_axes = [a for a, d in enumerate(pattern.dims) if d is not None]
    if count and fixed_axes:
        want = np.array([pattern.dims[a] for a in fixed_axes], dtype=np.int64)
        wrong = (tab[:, fixed_axes] != want).any(axis=1)
        if wrong.any():
            bad = int(np.argmax(wrong))
            raise CellError(
                f"shapes[{bad}] = {tab[bad].tolist()} does not match pattern {pattern}: the "
                "fixed extents must be as given"
            )
    arr = np.asarray(values)
    if arr.dtype == object:
        raise TypeError(
            "values must be a numeric (or bool) array, not an object array; for a list of "
            "cells write array[...] = cells instead"
        )
    if arr.ndim != 1:
        raise ValueError(
            f"values must be flat (1-D, every cell's items in C order), got {arr.shape}"
        )
    if off.dtype.kind == "u" and off.size and int(np.max(off)) > np.iinfo(np.int64).max:
        raise ValueError(f"offsets hold {int(np.max(off))}, beyond the int64 range")
    off = off.astype(np.int64, copy=False)
    if int(off[0]) != 0 or int(off[-1]) != arr.size:
        raise ValueError(
            f"offsets must start at 0 and end at len(values) = {arr.size}, got "
            f"{int(off[0])} .. {int(off[-1])}"
        )
    steps = np.diff(off)
    variable = tab[:, list(pattern.variable_axes)].astype(np.uint32)
    items = element_items(variable, pattern.fixed_items, arr.size).astype(np.int64)
    if count and (steps != items).any():
        bad = int(np.argmax(steps != items))
        held = int(items[bad])
        described = f"{held} items" if held <= arr.size else f"more than the {arr.size} values"
        raise ValueError(
            f"cell {bad} has shape {tuple(tab[bad].tolist())}, i.e. {described}, but offsets "
            f"give it {int(steps[bad])} (offsets[{bad + 1}] - offsets[{bad}])"
        )
    flat = NDArray(dtype=dtype.dtype, shape=(None,))  # the lossless rules, applied to the block
    try:
        block = flat.coerce_cell(arr)
    except (CellError, CellTypeError) as exc:
        raise type(exc)(f"values do not fit {dtype!r}: {exc}") from exc
    if block.dtype.kind == "b":
        raw = block.view(np.uint8)
        if raw.size and int(np.max(raw)) > 1:  # store bools as 0/1, as the codec does
            block = raw != 0
    return block, tab, off


# ---------------------------------------------------------------------------- chunk pieces


class _Chunk(NamedTuple):
    """One chunk's cells (all of them, chunk C order) as a source for :func:`assemble`."""

    values: np.ndarray
    shapes: npt.NDArray[np.int64]
    starts: npt.NDArray[np.int64]
    sizes: npt.NDArray[np.int64]


def _fill_chunk(fill: np.ndarray, count: int) -> _Chunk:
    sizes = np.full(count, fill.size, dtype=np.int64)
    shapes = np.tile(np.array(fill.shape, dtype=np.int64), (count, 1))
    return _Chunk(np.tile(fill.reshape(-1), count), shapes, offsets_of(sizes)[:-1], sizes)


def _stored_chunk(
    raw: npt.NDArray[np.uint8] | None, layout: ChunkLayout, dtype: NDArray, fill: np.ndarray,
    coords: tuple[int, ...],
) -> _Chunk:  # fmt: skip
    if raw is None:
        return _fill_chunk(fill, layout.chunk_len)
    where = f"the {CODEC_NAME!r} {layout.where(coords)} for {dtype!r}"
    values, shapes, offsets = decode_values(raw, layout.chunk_len, dtype, where)
    return _Chunk(values, shapes, offsets[:-1], np.diff(offsets))


# -------------------------------------------------------------------------------------- read


def read_columnar(array: Any, selection: Selection = ...) -> Columnar:
    """Read the cells ``selection`` of an ``ndarray`` array as :class:`Columnar`.

    Cells are in C order of the selection. Unwritten chunks read as fill cells. A corrupt chunk
    raises the codec's :class:`~zarr_ragged_ndarray.layout.RaggedLayoutError`.

    >>> import zarr, numpy as np
    >>> from zarr_ndarray_dtype import NDArray
    >>> a = zarr.create_array({}, shape=(2, 2), chunks=(1, 2),
    ...                       dtype=NDArray(dtype="int16", shape=(None, None)))
    >>> a[0, 1] = np.array([[1, 2], [3, 4]], np.int16)
    >>> col = read_columnar(a, (0, slice(None)))
    >>> col.values.tolist(), col.shapes.tolist(), col.offsets.tolist(), col.shape
    ([1, 2, 3, 4], [[0, 0], [2, 2]], [0, 0, 4], (2,))
    """
    dtype, shape = _array_dtype(array, "read_columnar")
    box = resolve(selection, shape, "read_columnar")
    item = dtype.item_dtype
    count = math.prod(box.extents)
    if not count:
        empty = np.zeros((0, dtype.pattern.ndim), dtype=np.int64)
        return Columnar(np.empty(0, item), empty, np.zeros(1, np.int64), box.shape)
    layout = layout_of(array)
    if layout is None:
        got = array[box.slices]
        if not (isinstance(got, np.ndarray) and got.dtype == object and got.shape == box.extents):
            # zarr 3.1.0 hands back the cell itself (not wrapped) for arr[()] of a 0-d array.
            cell, got = got, np.empty(1, dtype=object)
            got[0] = cell
        values, shapes = gather_cells(got.reshape(-1).tolist(), dtype)
        return Columnar(values, shapes, offsets_of(np.prod(shapes, axis=1)), box.shape)
    fill = fill_cell(dtype, layout.spec.fill_value)
    pieces = chunk_boxes(layout.chunk_shape, box)
    stored = read_chunks(layout, [p[0] for p in pieces])
    sources: list[np.ndarray] = []
    which = np.empty(count, dtype=np.intp)
    starts = np.empty(count, dtype=np.int64)
    sizes = np.empty(count, dtype=np.int64)
    shapes = np.empty((count, dtype.pattern.ndim), dtype=np.int64)
    for n, ((coords, lo, extents, at), raw) in enumerate(zip(pieces, stored, strict=True)):
        chunk = _stored_chunk(raw, layout, dtype, fill, coords)
        local = grid_indices(lo, extents, layout.chunk_shape)
        pos = grid_indices(at, extents, box.extents)
        sources.append(chunk.values)
        which[pos] = n
        starts[pos] = chunk.starts[local]
        sizes[pos] = chunk.sizes[local]
        shapes[pos] = chunk.shapes[local]
    values, offsets = assemble(sources, which, starts, sizes, item)
    return Columnar(values, shapes, offsets, box.shape)


# ------------------------------------------------------------------------------------- write


def write_columnar(
    array: Any, values: Any, shapes: Any, offsets: Any, selection: Selection = ...
) -> None:
    """Write columnar cells into ``selection`` of an ``ndarray`` array (the inverse of
    :func:`read_columnar`; cells in C order of the selection).

    The input is checked as a whole first (:func:`check_columnar`), so nothing is written when
    any cell does not fit. Stored chunks are byte-identical to ``array[selection] = cells``.
    """
    dtype, shape = _array_dtype(array, "write_columnar")
    box = resolve(selection, shape, "write_columnar")
    count = math.prod(box.extents)
    block, tab, off = check_columnar(values, shapes, offsets, dtype, count)
    if not count:
        return
    layout = layout_of(array)
    if layout is None:
        # cut_cells freezes what it is given: hand it a view, not the caller's array.
        cells = cut_cells(block.view(), tab, off, dtype)
        array[box.slices] = cells.reshape(box.extents)
        return
    _write_direct(layout, dtype, box, block, tab, off)


def _is_fill(chunk_values: np.ndarray, shapes: npt.NDArray[np.int64], fill: np.ndarray) -> bool:
    """Whether every cell equals the fill cell, as zarr's comparison with the fill decides."""
    if (shapes != np.array(fill.shape, dtype=np.int64)).any():
        return False
    if not fill.size:
        return True
    block = chunk_values.reshape(shapes.shape[0], fill.size)
    same = block == fill.reshape(-1)
    if fill.dtype.kind in "fc":
        same |= np.isnan(block) & np.isnan(fill.reshape(-1))
    return bool(same.all())


def _write_direct(
    layout: ChunkLayout,
    dtype: NDArray,
    box: Box,
    block: np.ndarray,
    tab: npt.NDArray[np.int64],
    off: npt.NDArray[np.int64],
) -> None:
    fill = fill_cell(dtype, layout.spec.fill_value)
    elide = not layout.write_empty_chunks
    cs = layout.chunk_shape
    n_chunk = layout.chunk_len
    pieces = {p.coords: p for p in chunk_boxes(cs, box)}
    writer = ChunkWriter(layout, pieces, box.starts, box.stops)
    # The stored chunks whose other cells the write keeps, all decoded (and so checked) before
    # anything is written; cells neither written nor kept are fill.
    blank = _fill_chunk(fill, n_chunk)
    bases = {c: _stored_chunk(raw, layout, dtype, fill, c) for c, raw in writer.existing().items()}
    in_starts, in_sizes = off[:-1], np.diff(off)
    for coords in writer.indices:
        base = bases.get(coords, blank)
        _, lo, extents, at = pieces[coords]
        local = grid_indices(lo, extents, cs)
        pos = grid_indices(at, extents, box.extents)
        which = np.ones(n_chunk, dtype=np.intp)
        starts = base.starts.copy()
        sizes = base.sizes.copy()
        shapes = base.shapes.copy()
        which[local] = 0
        starts[local] = in_starts[pos]
        sizes[local] = in_sizes[pos]
        shapes[local] = tab[pos]
        values, _ = assemble([block, base.values], which, starts, sizes, block.dtype)
        if elide and _is_fill(values, shapes, fill):
            writer.add(coords, None)
        else:
            writer.add(coords, encode_values(values, shapes, dtype))
    writer.flush()
