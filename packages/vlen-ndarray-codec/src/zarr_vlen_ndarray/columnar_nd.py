"""Columnar access to ``vlen-ndarray`` arrays of any rank other than 1 (N-d selections).

:func:`~zarr_vlen_ndarray.columnar.read_columnar` and
:func:`~zarr_vlen_ndarray.columnar.write_columnar` hand arrays that are not 1-D to this module.
A selection (an int, a slice with step 1, ``...`` or a tuple of those, one per axis) is a box of
cells (:mod:`zarr_ndarray_dtype.grid`); its cells travel in C order of the selection, as the
``values`` / ``offsets`` columns of :class:`~zarr_vlen_ndarray.columns.Columnar`, whose
``shape`` is the selection's (int axes dropped).

* :func:`read_columnar_nd` fetches the chunks the box overlaps (concurrently; sharded arrays
  through each shard's index), unframes each with the codec's decoder (several chunks in
  threads) and gathers the selected
  cells into one block with :func:`zarr_ndarray_dtype.segments.assemble` (one copy per run of
  cells consecutive in both the chunk and the selection). Unwritten chunks read as fill cells.
* :func:`write_columnar_nd` checks the columns as a whole, then frames every chunk straight from
  them; chunks the box covers only in part (edge chunks included) are read, patched and
  rewritten, and a chunk of fill cells is deleted when ``write_empty_chunks`` is False: the
  stored bytes equal those of ``array[selection] = cells``. Sharded arrays are written shard
  by shard as zarr's sharding codec writes them
  (:class:`zarr_ndarray_dtype.chunk_store.ChunkWriter`). Codec chains
  :mod:`~zarr_vlen_ndarray.chunk_io` does not handle go through zarr's object path both ways.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype import NDArray, readonly_cells
from zarr_ndarray_dtype.grid import Box, Selection, chunk_boxes, grid_indices, resolve
from zarr_ndarray_dtype.segments import assemble
from zarr_vlen_ndarray.block import decode_block, encode_block, offsets_from_rows
from zarr_vlen_ndarray.cells import gather_cells, trailing_dims
from zarr_vlen_ndarray.chunk_io import ChunkLayout, ChunkWriter, Coords, layout_of, read_chunks
from zarr_vlen_ndarray.columns import Columnar, FillCell, array_dtype, check_columnar

__all__ = ["read_columnar_nd", "write_columnar_nd"]


def _chunk(
    layout: ChunkLayout,
    framed: npt.NDArray[np.uint8] | None,
    coords: Coords,
    dtype: NDArray,
    fill: FillCell,
) -> tuple[np.ndarray, npt.NDArray[np.int64]]:
    """Every cell of one chunk (chunk C order) as ``(values, offsets)``; fill cells if absent."""
    if framed is None:
        values, rows = fill.cells(layout.chunk_len)
        return values, offsets_from_rows(rows)
    return decode_block(framed, layout.chunk_len, dtype, where=layout.where(coords))


def _decode_all(
    layout: ChunkLayout,
    stored: list[npt.NDArray[np.uint8] | None],
    coords: list[Coords],
    dtype: NDArray,
    fill: FillCell,
) -> list[tuple[np.ndarray, npt.NDArray[np.int64]]]:
    """:func:`_chunk` of every chunk, in threads when several are stored (numpy releases the
    GIL while it moves payloads); a corrupt chunk raises the error of the first in order."""
    workers = min(sum(framed is not None for framed in stored), os.cpu_count() or 1)
    if workers <= 1:
        return [_chunk(layout, f, c, dtype, fill) for f, c in zip(stored, coords, strict=True)]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda f, c: _chunk(layout, f, c, dtype, fill), stored, coords))


def _gather(
    sources: list[np.ndarray],
    which: npt.NDArray[np.intp],
    starts: npt.NDArray[np.int64],
    rows: npt.NDArray[np.int64],
    dtype: NDArray,
) -> np.ndarray:
    """The rows ``sources[which[i]][starts[i]:starts[i] + rows[i]]`` of every cell, in order."""
    fixed = trailing_dims(dtype)
    per_row = math.prod(fixed)
    flat, _ = assemble(
        [s.reshape(-1) for s in sources], which, starts * per_row, rows * per_row,
        dtype.item_dtype,
    )  # fmt: skip
    return flat.reshape((int(rows.sum()), *fixed))


# -------------------------------------------------------------------------------------- read


def read_columnar_nd(array: Any, selection: Selection = ...) -> Columnar:
    """Read the cells ``selection`` of a ``vlen-ndarray`` array (any rank) as ``Columnar``.

    Cells come in C order of the selection; a corrupt chunk raises the codec's
    :class:`~zarr_vlen_ndarray.framing.FramingError`, a corrupt shard index
    :class:`~zarr_vlen_ndarray.chunk_io.ShardIndexError`.
    """
    dtype, shape = array_dtype(array, "read_columnar")
    box = resolve(selection, shape, "read_columnar")
    count = math.prod(box.extents)
    if not count:
        empty = np.empty((0, *trailing_dims(dtype)), dtype=dtype.item_dtype)
        return Columnar(empty, np.zeros(1, dtype=np.int64), box.shape)
    layout = layout_of(array)
    if layout is None:
        return _read_fallback(array, box, dtype)
    fill = FillCell(dtype, layout.spec.fill_value)
    pieces = chunk_boxes(layout.chunk_shape, box)
    coords = [p.coords for p in pieces]
    decoded = _decode_all(layout, read_chunks(layout, coords), coords, dtype, fill)
    sources: list[np.ndarray] = []
    which = np.empty(count, dtype=np.intp)
    starts = np.empty(count, dtype=np.int64)
    rows = np.empty(count, dtype=np.int64)
    for n, (piece, (values, offsets)) in enumerate(zip(pieces, decoded, strict=True)):
        local = grid_indices(piece.lo, piece.extents, layout.chunk_shape)
        pos = grid_indices(piece.at, piece.extents, box.extents)
        sources.append(values)
        which[pos] = n
        starts[pos] = offsets[local]
        rows[pos] = offsets[local + 1] - offsets[local]
    block = _gather(sources, which, starts, rows, dtype)
    return Columnar(block, offsets_from_rows(rows), box.shape)


def _read_fallback(array: Any, box: Box, dtype: NDArray) -> Columnar:
    """Through zarr's object-array path (codec chains :mod:`chunk_io` does not handle)."""
    got = array[box.slices]
    if not (isinstance(got, np.ndarray) and got.dtype == object and got.shape == box.extents):
        # zarr 3.1.0 hands back the cell itself (not wrapped) for arr[()] of a 0-d array.
        cell, got = got, np.empty(1, dtype=object)
        got[0] = cell
    block, rows = gather_cells(got.reshape(-1).tolist(), dtype)
    return Columnar(block, offsets_from_rows(rows), box.shape)


# ------------------------------------------------------------------------------------- write


def write_columnar_nd(array: Any, values: Any, offsets: Any, selection: Selection = ...) -> None:
    """Write ``(values, offsets)`` (cells in C order of ``selection``) into a ``vlen-ndarray``
    array of any rank: the inverse of :func:`read_columnar_nd`.

    The columns are checked as a whole first (:func:`~zarr_vlen_ndarray.columns.check_columnar`;
    ``offsets`` has one entry more than the selection has cells), so nothing is written when any
    cell does not fit. Stored chunks are byte-identical to ``array[selection] = cells``.
    """
    dtype, shape = array_dtype(array, "write_columnar")
    box = resolve(selection, shape, "write_columnar")
    count = math.prod(box.extents)
    block, off = check_columnar(values, offsets, dtype, count)
    if not count:
        return
    layout = layout_of(array)
    if layout is None:
        # readonly_cells freezes the block it is given: hand it a view, not the caller's array.
        cells = readonly_cells(block.view(), off)
        array[box.slices] = cells.reshape(box.extents)
        return
    _write_direct(layout, dtype, box, block, off)


def _write_direct(
    layout: ChunkLayout,
    dtype: NDArray,
    box: Box,
    block: np.ndarray,
    offsets: npt.NDArray[np.int64],
) -> None:
    fill = FillCell(dtype, layout.spec.fill_value)
    elide = not layout.write_empty_chunks
    cs = layout.chunk_shape
    pieces = {p.coords: p for p in chunk_boxes(cs, box)}
    writer = ChunkWriter(layout, pieces, box.starts, box.stops)
    # The stored chunks whose other cells the write keeps, all decoded (and so checked) before
    # anything is written; cells neither written nor kept are fill.
    bases = {c: _chunk(layout, framed, c, dtype, fill) for c, framed in writer.existing().items()}
    blank: tuple[np.ndarray, npt.NDArray[np.int64]] | None = None
    in_starts, in_rows = offsets[:-1], np.diff(offsets)
    for coords in writer.indices:
        piece = pieces[coords]
        if coords in bases:
            base, base_offsets = bases[coords]
        else:
            if blank is None:
                blank = _chunk(layout, None, coords, dtype, fill)
            base, base_offsets = blank
        local = grid_indices(piece.lo, piece.extents, cs)
        pos = grid_indices(piece.at, piece.extents, box.extents)
        which = np.ones(layout.chunk_len, dtype=np.intp)
        starts = base_offsets[:-1].copy()
        rows = np.diff(base_offsets)
        which[local] = 0
        starts[local] = in_starts[pos]
        rows[local] = in_rows[pos]
        values = _gather([block, base], which, starts, rows, dtype)
        writer.add(coords, frame_or_elide(values, rows, dtype, fill, elide, layout.where(coords)))
    writer.flush()


def frame_or_elide(
    values: np.ndarray,
    rows: npt.NDArray[np.int64],
    dtype: NDArray,
    fill: FillCell,
    elide: bool,
    where: str,
) -> npt.NDArray[np.uint8] | None:
    """One chunk's cells ``(values, rows)`` framed, or None when they are all fill cells and
    ``elide`` (zarr's ``write_empty_chunks=False``) drops the chunk."""
    if elide and fill.equals(values, rows):
        return None
    return encode_block(values, offsets_from_rows(rows), dtype, where=where)
