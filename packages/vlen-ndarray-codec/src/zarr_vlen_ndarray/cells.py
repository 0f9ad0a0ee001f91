"""Gathering a chunk's cells into one contiguous block (pure numpy; no zarr, no framing).

The common case, every cell already an ndarray of the element dtype and of a matching shape, is
one ``np.concatenate`` over the whole list plus one pass for the leading extents. Anything else
(``None``, lists, other dtypes, big-endian arrays, 0-d wrappers that zarr puts around scalar
writes, fill cells) is converted cell by cell with the data type's lossless ``coerce_cell``;
only the cells that need it pay for it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype import NDArray
from zarr_ndarray_dtype.cells import bool_bytes_as_01

__all__ = ["gather_cells", "trailing_dims"]


def trailing_dims(dtype: NDArray) -> tuple[int, ...]:
    """The fixed extents ``(d1, ..., dk)`` of a ``[null, d1, ..., dk]`` pattern."""
    dims = tuple(d for d in dtype.shape[1:] if d is not None)
    if len(dims) != len(dtype.shape) - 1 or dtype.shape[0] is not None:
        raise ValueError(
            f"{dtype!r} does not have a pattern [null, d1, ..., dk] (got {list(dtype.shape)})"
        )
    return dims


def gather_cells(cells: list[Any], dtype: NDArray) -> tuple[np.ndarray, npt.NDArray[np.int64]]:
    """Concatenate ``cells`` (in order) into one C-contiguous block.

    Returns ``(block, rows)``: ``block`` of shape ``(total, d1, ..., dk)`` and the element dtype
    (little-endian), ``rows[i]`` the leading extent of cell ``i``. The input cells are never
    modified. Raises the data type's ``CellError`` / ``CellTypeError`` for a cell that does not
    fit the pattern or cannot be converted losslessly.
    """
    item = dtype.item_dtype
    fixed = trailing_dims(dtype)
    if not cells:
        return np.empty((0, *fixed), dtype=item), np.zeros(0, dtype=np.int64)
    block = _concatenate_exact(cells, item, fixed)
    if block is None:
        cells = [_conform(c, dtype, item, fixed) for c in cells]
        block = _concatenate_exact(cells, item, fixed)
        if block is None:  # every cell was just conformed: cannot happen
            raise AssertionError("conformed cells did not concatenate")
    rows = np.fromiter(map(len, cells), dtype=np.int64, count=len(cells))
    if int(rows.sum()) != block.shape[0]:
        # Only objects whose len() disagrees with their array form get here; convert them all.
        cells = [dtype.coerce_cell(c) for c in cells]
        block = np.concatenate(cells, axis=0)
        rows = np.fromiter(map(len, cells), dtype=np.int64, count=len(cells))
    if item.kind == "b":
        block = bool_bytes_as_01(block)
    return block, rows


def _concatenate_exact(
    cells: list[Any], item: np.dtype[Any], fixed: tuple[int, ...]
) -> np.ndarray | None:
    """The cells concatenated if they are all arrays of exactly ``item`` and shape (n, *fixed)."""
    try:
        block = np.concatenate(cells, axis=0, dtype=item, casting="no")
    except (ValueError, TypeError):
        return None
    block = np.asarray(block)  # a fill cell (ndarray subclass) must not make the block one
    if block.shape[1:] != fixed or block.ndim != len(fixed) + 1:
        return None
    return block


def _conform(cell: Any, dtype: NDArray, item: np.dtype[Any], fixed: tuple[int, ...]) -> Any:
    """``cell`` itself if it is already an exact array of the pattern, else its coerced form."""
    if (
        isinstance(cell, np.ndarray)
        and cell.dtype == item
        and cell.ndim == len(fixed) + 1
        and cell.shape[1:] == fixed
    ):
        return cell
    return dtype.coerce_cell(cell)
