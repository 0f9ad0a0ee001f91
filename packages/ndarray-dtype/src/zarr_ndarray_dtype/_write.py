"""Writing through zarr: checked cells into a box, zarr merging them with the stored chunks it
keeps cells of (the engine behind ``write_columnar`` and object writes of boxes)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype import _cell_ids, _runs
from zarr_ndarray_dtype._cell_ids import data_type_and_codec
from zarr_ndarray_dtype._columns import FillBlock, FillCell
from zarr_ndarray_dtype._compat import regular_chunk_shape
from zarr_ndarray_dtype._grid import Box
from zarr_ndarray_dtype._read import Reader, through_zarr
from zarr_ndarray_dtype.blocks import BlockCodec, ColumnsBlock, needs_shapes, offsets_of
from zarr_ndarray_dtype.blocks import FlatCells as Cells
from zarr_ndarray_dtype.dtype import NDArrayDType as NDArray

__all__ = ["write_cells"]

_Ints = npt.NDArray[np.int64]


def write_cells(array: Any, cells: Cells, box: Box, what: str) -> None:
    """Write checked ``cells`` into the box of an array (cells in C order of the box)."""
    dtype, codec = data_type_and_codec(array, what)
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
                Reader(array, dtype, codec).read(box)
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
        self.sources = _runs.Sources(FillBlock(self.fill, self.with_shapes), [ColumnsBlock(cells)])
        self.fills: dict[int, npt.NDArray[np.bool_]] = {}
        self.failed: list[BaseException] = []

    def write(self, box: Box, ids: np.ndarray) -> None:
        codec = _cell_ids.CellIds(self._decode, self._encode)
        store = _cell_ids.DiscardWrites if self.dry else None
        target = _cell_ids.view(self.array, codec, store=store)

        def run() -> None:
            target[box.slices] = ids

        through_zarr(self.array, box, run, self.failed)

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
        if self.dry:  # stored nowhere; not None, which would delete it (zarr 3.1.0's shard
            return np.zeros(0, dtype=np.uint8)  # builder cannot delete an inner chunk)
        with self.sources.lock:
            blocks, bases = list(self.sources.blocks), list(self.sources.bases)
        runs = _runs.runs_of(ids, bases)
        spans = [(k, pair) for k, g in _runs.by_block(runs) for pair in _runs.spans(runs, g, k)]
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
        out, itemsize = values.view(np.uint8), values.dtype.itemsize
        for k, (cells, positions) in spans:
            blocks[k].copy(cells, out, _runs.places(offsets, positions, itemsize))
        return self.codec.encode(Cells(values, offsets, shapes), self.dtype, "chunk")

    def _is_fill(self, k: int, cells: slice | _Ints) -> bool:
        if not k:
            return True
        mask = self.fills.get(k)
        if mask is None:
            mask = self.fills.setdefault(k, self.fill.matches(self.sources.blocks[k].cells()))
        return bool(mask[cells].all())
