"""Object writes and reads of ``ndarray`` arrays: ``a[sel] = cells`` all or nothing, fill cells
that are plain arrays (what :mod:`zarr_ndarray_dtype._hooks` runs in zarr's selection methods).

zarr converts the cells of an object write chunk by chunk as it stores them, so a cell that
does not fit stops the write half done, and every chunk it touches is re-encoded one Python
object per cell. Here the write's cells are converted first, all at once, and a bad one is named
by its index in the array; a box of cells (ints and step-1 slices) is then written by the
columnar engine, any other selection by zarr with cells already of the element dtype. zarr
materializes unwritten cells as the fill value's own object, which compares as one whole cell
(zarr's empty-chunk elision needs that); reads hand out a plain read-only copy instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from zarr_ndarray_dtype import _compat
from zarr_ndarray_dtype._cell_ids import data_type_and_codec, serializer_of
from zarr_ndarray_dtype._columns import FillCell
from zarr_ndarray_dtype._columns import cut as cut_cells
from zarr_ndarray_dtype._columns import gather as gather_cells
from zarr_ndarray_dtype._write import write_cells
from zarr_ndarray_dtype.cells import _FillCell as VlenScalar
from zarr_ndarray_dtype.cells import frozen_cell
from zarr_ndarray_dtype.dtype import NDArrayDType as NDArray
from zarr_ndarray_dtype.errors import CellError

__all__ = ["plain_fill", "write"]

#: Threads that run the columnar engine's writes off zarr's event loop (the engine drives
#: zarr's own synchronous API); their own pool, so they never wait for zarr's executor.
_WRITERS = 32
_pool: ThreadPoolExecutor | None = None


async def write(
    array: Any,
    indexer: Any,
    value: Any,
    zarr_write: Callable[[Any], Awaitable[None]],
) -> None:
    """Write ``value`` into the cells ``indexer`` selects of the ``ndarray`` AsyncArray
    ``array``; ``zarr_write(value)`` is zarr's own write of that selection."""
    dtype: NDArray = array.metadata.data_type
    shape = tuple(int(n) for n in indexer.shape)
    cells = _distribute(value, shape)
    serializer = serializer_of(array.metadata)
    fill = FillCell(dtype, array.metadata.fill_value)  # a missing cell (None) is the fill
    checked = gather_cells(list(cells.reshape(-1)), dtype, fill, _namer(array, indexer))
    box = _compat.basic_box(indexer)
    engine = getattr(serializer, "block_codec", None) is not None
    if box is not None and engine and _compat.on_zarr_loop():
        data_type_and_codec(array, "write")  # the engine serves this array
        await asyncio.get_running_loop().run_in_executor(
            _writers(), write_cells, array, checked, box, "write"
        )
        return
    exact = cut_cells(checked.values, checked.offsets, checked.shapes, dtype.pattern)
    await zarr_write(exact.reshape(shape))


def _writers() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(_WRITERS, thread_name_prefix="zarr-ndarray-write")
    return _pool


def _distribute(value: Any, shape: tuple[int, ...]) -> np.ndarray:
    """The cell every selected position receives: an object array of the selection's shape.

    One cell for a selection of one (whatever it is); an object array broadcast as numpy does;
    a list (or tuple) holding one entry per position along the selection's axes.
    """
    cells = np.empty(shape, dtype=object)
    if not shape:
        cells[()] = value
    elif isinstance(value, np.ndarray) and value.dtype == object:
        try:
            cells[...] = value
        except ValueError as exc:
            raise CellError(
                f"an object array of shape {value.shape} does not fit a selection of shape "
                f"{shape}: pass one cell per selected position ({exc})"
            ) from None
    elif isinstance(value, list | tuple):
        _nested(cells, value)
    elif isinstance(value, np.ndarray) and value.ndim:
        raise CellError(
            f"a {value.dtype} array of shape {value.shape} is no set of cells for a selection of "
            f"shape {shape}: pass an object array of shape {shape} holding one cell each (or "
            "write columns with write_columnar)"
        )
    else:
        cells.fill(value)  # one object for every position (None: the empty or fill cell)
    return cells


def _nested(cells: np.ndarray, value: list[Any] | tuple[Any, ...]) -> None:
    """Fill ``cells`` from nested sequences, one level per axis of ``cells``."""
    if len(value) != cells.shape[0]:
        raise CellError(
            f"a sequence of {len(value)} cells does not fit a selection of {cells.shape[0]} "
            "along its axis: pass one cell per selected position"
        )
    for i, item in enumerate(value):
        if cells.ndim == 1:
            cells[i] = item
        elif isinstance(item, list | tuple):
            _nested(cells[i], item)
        else:
            raise CellError(
                f"a sequence of cells nests {cells.ndim} levels deep for a selection of shape "
                f"{cells.shape}, but its entry {i} is a {type(item).__name__}"
            )


def _namer(array: Any, indexer: Any) -> Callable[[int], str]:
    """Names the ``i``-th cell of a write (C order of the selection) by its array index."""

    def name(i: int) -> str:
        index = _compat.selected_index(indexer, array.metadata, i)
        return f"cell {index}" if index is not None else f"cell {i} of the selection"

    return name


def plain_fill(result: Any) -> Any:
    """``result`` of a read with every fill cell a plain read-only ndarray (zarr puts the fill
    value's own object, a :class:`VlenScalar`, at every unwritten cell)."""
    if not isinstance(result, np.ndarray) or result.dtype != object:
        return _plain(result) if type(result) is VlenScalar else result
    if not result.ndim:
        inner = result[()]
        swapped = plain_fill(inner)
        if swapped is inner:
            return result
        out = np.empty((), dtype=object)
        out[()] = swapped
        return out
    flat = result.reshape(-1)
    hits = [i for i, cell in enumerate(flat.tolist()) if type(cell) is VlenScalar]
    if hits:
        holder = np.empty(1, dtype=object)
        holder[0] = _plain(flat[hits[0]])
        if not np.shares_memory(flat, result):
            flat = result.copy().reshape(-1)
            result = flat.reshape(result.shape)
        flat[hits] = holder
    return result


def _plain(cell: VlenScalar) -> np.ndarray:
    """A plain read-only ndarray holding the fill cell (its bytes never writable)."""
    return np.asarray(frozen_cell(cell.tobytes(), cell.dtype, cell.shape)).view(np.ndarray)
