"""Cell objects (what ``a[sel] = cells`` and the codecs' object path hand over) as columns:
every cell made an array, every value converted at once by the one rule (pure numpy)."""

from __future__ import annotations

from collections.abc import Callable
from itertools import chain
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype._columns import FillCell, check_fixed
from zarr_ndarray_dtype._segments import offsets_of
from zarr_ndarray_dtype.blocks import Cells, needs_shapes
from zarr_ndarray_dtype.cells import bool_bytes_as_01, cell_array, convert, mismatch, unbox
from zarr_ndarray_dtype.errors import CellError
from zarr_ndarray_dtype.pattern import ShapePattern

if TYPE_CHECKING:
    from zarr_ndarray_dtype.dtype import NDArray

__all__ = ["gather_cells"]

_ndim = attrgetter("ndim")
_dtype = attrgetter("dtype")
_shape = attrgetter("shape")


def gather_cells(
    cells: list[Any],
    dtype: NDArray,
    fill: FillCell | None = None,
    name: Callable[[int], str] = "cell {}".format,
) -> Cells:
    """Cell objects (in order) as :class:`Cells`; ``None`` stands for ``fill`` (else empty).

    Every cell an ndarray of exactly the element dtype is one ``np.concatenate``; otherwise the
    cells are made arrays one by one (lists, 0-d wrappers) but converted to the element dtype
    at once, one concatenation per source dtype, by the one conversion rule. ``name(i)`` names
    cell ``i`` in errors (a shape that does not match, a value the conversion would change).
    The cells are never modified.
    """
    found = _exact(cells, dtype)
    if found is None:
        return _converted(cells, dtype, fill, name)
    values, sizes, shapes = found
    if shapes is not None:
        check_fixed(shapes, dtype.pattern, name)
    if values.dtype.kind == "b":
        values = bool_bytes_as_01(values)
    return Cells(values, offsets_of(sizes), shapes if needs_shapes(dtype.pattern) else None)


def _exact(
    cells: list[Any], dtype: NDArray
) -> tuple[np.ndarray, npt.NDArray[np.int64], npt.NDArray[np.int64] | None] | None:
    """``(values, sizes, shapes)`` when every cell is an array of exactly the element dtype and
    the pattern's rank (shapes None for ``[null, d1..dk]``, whose concatenation checks them)."""
    item, pattern = dtype.item_dtype, dtype.pattern
    count, ndim = len(cells), pattern.ndim
    if not count:
        return np.empty(0, dtype=item), np.zeros(0, np.int64), np.zeros((0, ndim), np.int64)
    if pattern.is_leading_variable:
        try:
            block = np.concatenate(cells, axis=0, dtype=item, casting="no")
        except (ValueError, TypeError):
            return None
        block = np.asarray(block)  # a fill cell (ndarray subclass) must not make values one
        rows = np.fromiter(map(len, cells), dtype=np.int64, count=count)
        if block.shape[1:] != pattern.dims[1:] or int(rows.sum()) != block.shape[0]:
            return None  # other trailing extents, or objects whose len() lies
        return block.reshape(-1), rows * pattern.fixed_items, None
    try:
        ranks = np.fromiter(map(_ndim, cells), dtype=np.int64, count=count)
        if int(np.min(ranks)) != ndim or int(np.max(ranks)) != ndim:
            return None
        values = np.concatenate(cells, axis=None, dtype=item, casting="no")
    except (AttributeError, ValueError, TypeError):
        return None
    shapes = _shape_table(cells, ndim)
    sizes = np.prod(shapes, axis=1) if ndim else np.ones(count, np.int64)
    values = np.asarray(values)
    if int(sizes.sum()) != values.size:  # objects whose shape lies
        return None
    return values, sizes, shapes


def _shape_table(arrays: list[Any], ndim: int) -> npt.NDArray[np.int64]:
    flat = np.fromiter(chain.from_iterable(map(_shape, arrays)), np.int64, len(arrays) * ndim)
    return flat.reshape(len(arrays), ndim)


def _converted(
    cells: list[Any], dtype: NDArray, fill: FillCell | None, name: Callable[[int], str]
) -> Cells:
    """The cells, any of them not exact: arrays first, then shapes, then values, all checked."""
    pattern, item = dtype.pattern, dtype.item_dtype
    ndim = pattern.ndim
    arrays = list(cells)
    for i, cell in enumerate(cells):
        if type(cell) is not np.ndarray or cell.ndim != ndim or cell.dtype.hasobject:
            arrays[i] = _array(cell, i, dtype, fill, name)
    ranks = np.fromiter(map(_ndim, arrays), dtype=np.int64, count=len(arrays))
    wrong = ranks != ndim
    if wrong.any():
        bad = int(np.argmax(wrong))
        raise CellError(mismatch(name(bad), arrays[bad].shape, pattern))
    shapes = None
    if pattern.is_leading_variable:  # the concatenation checks the trailing extents
        sizes = np.fromiter(map(len, arrays), np.int64, len(arrays)) * pattern.fixed_items
    else:
        shapes = _shape_table(arrays, ndim)
        check_fixed(shapes, pattern, name)
        sizes = np.prod(shapes, axis=1) if ndim else np.ones(len(arrays), np.int64)
    offsets = offsets_of(sizes)
    sources = list(map(_dtype, arrays))
    kinds = set(sources)
    for source in kinds - {item}:  # every value checked, one source dtype at a time
        members = [i for i, d in enumerate(sources) if d == source] if len(kinds) > 1 else None
        part = arrays if members is None else [arrays[i] for i in members]
        starts = offsets if members is None else offsets_of(sizes[members])

        def owner(at: int, members: list[int] | None = members, starts: Any = starts) -> str:
            k = int(np.searchsorted(starts, at, side="right")) - 1
            i = k if members is None else members[k]
            return f"{name(i)} of shape {arrays[i].shape} and dtype {arrays[i].dtype}"

        converted = convert(_joined(part, pattern, name), item, owner)
        if members is None:
            return _cells(converted, offsets, shapes, pattern)
    with np.errstate(all="ignore"):  # every value was checked: this cast changes none
        values = _joined(arrays, pattern, name, item)
    return _cells(values, offsets, shapes, pattern)


def _joined(
    arrays: list[np.ndarray],
    pattern: ShapePattern,
    name: Callable[[int], str],
    dtype: np.dtype[Any] | None = None,
) -> np.ndarray:
    """The arrays' items back to back (cast to ``dtype``); for ``[null, d1..dk]`` one
    concatenation along rows, whose trailing extents must be the pattern's."""
    if not pattern.is_leading_variable:
        return np.concatenate(arrays, axis=None, dtype=dtype, casting="unsafe")
    try:
        block = np.concatenate(arrays, axis=0, dtype=dtype, casting="unsafe")
    except ValueError:
        check_fixed(_shape_table(arrays, pattern.ndim), pattern, name)  # names the odd cell
        raise
    if block.shape[1:] != pattern.dims[1:]:  # every cell alike, all wrong
        check_fixed(_shape_table(arrays, pattern.ndim), pattern, name)
    return block.reshape(-1)


def _cells(
    values: np.ndarray,
    offsets: npt.NDArray[np.int64],
    shapes: npt.NDArray[np.int64] | None,
    pattern: ShapePattern,
) -> Cells:
    if values.dtype.kind == "b":
        values = bool_bytes_as_01(values)
    return Cells(values, offsets, shapes if needs_shapes(pattern) else None)


def _array(
    cell: Any, i: int, dtype: NDArray, fill: FillCell | None, name: Callable[[int], str]
) -> np.ndarray:
    """One cell that is not a plain ndarray of the pattern's rank, as an array of its own
    dtype (``None``: the fill cell, or the empty one)."""
    if fill is not None and unbox(cell) is None:
        return fill.items.reshape(fill.shape)
    return cell_array(cell, dtype.pattern, dtype.item_dtype, name(i))
