"""Cells in columnar form, and its rules: the check of input columns, the fill cell, gathering
cell objects (pure numpy and the data type's rules; no zarr).

:class:`Cells` is how both codecs and the columnar engine hold many cells: ``values`` flat in
the element dtype, cell ``i`` being ``values[offsets[i]:offsets[i + 1]]`` (item offsets), with
``shapes`` the ``(count, ndim)`` table of full shapes when the pattern has two or more variable
dimensions (with at most one, every shape follows from the item count: ``shapes`` is None).
"""

from __future__ import annotations

from itertools import chain
from operator import attrgetter
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype.cells import bool_bytes_as_01, convert, describe, unbox
from zarr_ndarray_dtype.dtype import NDArray
from zarr_ndarray_dtype.errors import CellError
from zarr_ndarray_dtype.pattern import ShapePattern
from zarr_ndarray_dtype.segments import offsets_of

__all__ = ["Cells", "FillCell", "cell_shapes", "check_columns", "gather_cells", "needs_shapes"]

#: The largest extent a stored shape may have (both codecs store extents as u32le).
EXTENT_MAX = 0xFFFF_FFFF

_ndim = attrgetter("ndim")
_shape = attrgetter("shape")


class Cells(NamedTuple):
    """``count`` cells: flat ``values``, item ``offsets`` (count + 1, from 0), ``shapes``."""

    values: np.ndarray
    offsets: npt.NDArray[np.int64]
    shapes: npt.NDArray[np.int64] | None

    @property
    def sizes(self) -> npt.NDArray[np.int64]:
        """The item count of every cell."""
        return np.diff(self.offsets)


def needs_shapes(pattern: ShapePattern) -> bool:
    """Whether cells of ``pattern`` need a shape table (two or more variable dimensions)."""
    return len(pattern.variable_axes) >= 2


def cell_shapes(cells: Cells, pattern: ShapePattern) -> npt.NDArray[np.int64]:
    """The ``(count, ndim)`` full shapes of ``cells``: their table, or derived from the sizes."""
    if cells.shapes is not None:
        return cells.shapes
    return pattern.shapes_for_items(cells.sizes)


# ------------------------------------------------------------------------------------ checks


def check_columns(
    values: Any,
    offsets: Any,
    dtype: NDArray,
    cells: int | None = None,
    *,
    shapes: Any = None,
    rows: tuple[int, ...] | None = None,
) -> Cells:
    """Check input columns against ``dtype`` and return them as :class:`Cells`.

    Two forms: ``rows`` (the fixed trailing extents of a ``[null, d1..dk]`` pattern) for
    ``values`` of shape ``(total, *rows)`` and offsets counting rows; otherwise flat ``values``,
    item offsets and a ``(count, ndim)`` integer table ``shapes`` (fixed extents as given,
    variable ones 0 .. 2**32 - 1). ``offsets`` are integers, one more than the cells, from 0 to
    ``len(values)``, each step the cell's size; ``values`` convert to the element dtype without
    changing any value (bools stored 0/1). Raises ValueError / TypeError naming the rule.
    """
    pattern = dtype.pattern
    unit = "rows" if rows is not None else "items"
    off = _integers(offsets, "offsets")
    if off.ndim != 1 or off.size == 0:
        raise ValueError(f"offsets must be a 1-D array of cells + 1 entries, got shape {off.shape}")
    count = off.size - 1
    if cells is not None and count != cells:
        raise ValueError(
            f"the columns hold {count} cells but the selection holds {cells}: offsets must have "
            f"{cells + 1} entries for {cells} cells (cell i is values[offsets[i]:offsets[i + 1]]),"
            f" got {off.size}"
        )
    off = off.astype(np.int64, copy=False)
    if int(off[0]) != 0:
        raise ValueError(f"offsets must start at 0, got {int(off[0])}")
    steps = np.diff(off)
    if steps.size and int(steps.min()) < 0:
        bad = int(np.argmax(steps < 0))
        raise ValueError(
            f"offsets must never decrease, but offsets[{bad + 1}] = {int(off[bad + 1])} < "
            f"offsets[{bad}] = {int(off[bad])}"
        )
    arr = _values(values, dtype, rows)
    if int(off[-1]) != arr.shape[0]:
        raise ValueError(
            f"offsets end at {int(off[-1])}, but values has {arr.shape[0]} {unit}: the last "
            "offset must equal len(values)"
        )
    table = None if shapes is None else _check_shapes(shapes, pattern, steps, arr.shape[0])
    block = convert(arr.reshape(-1), dtype.item_dtype, f"values {describe(arr)}")
    if block.dtype.kind == "b":
        block = bool_bytes_as_01(block)
    if rows is not None:
        return Cells(block, off * pattern.fixed_items, None)
    return Cells(block, off, table if needs_shapes(pattern) else None)


def _integers(data: Any, name: str) -> np.ndarray:
    arr = np.asarray(data)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an integer array, got dtype {arr.dtype}")
    if arr.dtype.kind == "u" and arr.size and int(np.max(arr)) > np.iinfo(np.int64).max:
        raise ValueError(f"{name} hold {int(np.max(arr))}, beyond the int64 range")
    return arr


def _values(values: Any, dtype: NDArray, rows: tuple[int, ...] | None) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype == object:
        raise TypeError(
            "values must be a numeric (or bool) array, not an object array; for a list of "
            "cells write array[...] = cells instead"
        )
    trailing = rows or ()
    if arr.size == 0 and arr.ndim == 1:
        arr = np.empty((0, *trailing), dtype=dtype.item_dtype)
    if arr.ndim != len(trailing) + 1 or arr.shape[1:] != trailing:
        pattern = list(dtype.shape)
        raise ValueError(
            f"values must have shape (total, {', '.join(map(str, trailing))}) for the pattern "
            f"{pattern}, got {arr.shape}"
            if trailing
            else f"values must be flat (1-D) for the pattern {pattern}, got shape {arr.shape}"
        )
    return arr


def _check_shapes(
    shapes: Any, pattern: ShapePattern, steps: npt.NDArray[np.int64], total: int
) -> npt.NDArray[np.int64]:
    count = steps.size
    tab = _integers(shapes, "shapes")
    if tab.ndim != 2 or tab.shape[1] != pattern.ndim:
        raise ValueError(
            f"shapes must be a (cells, {pattern.ndim}) table (one full shape per cell for the "
            f"pattern {pattern.to_json()}), got shape {tab.shape}"
        )
    if tab.shape[0] != count:
        raise ValueError(f"shapes describes {tab.shape[0]} cells, but offsets {count}")
    if count and (int(np.min(tab)) < 0 or int(np.max(tab)) > EXTENT_MAX):
        bad = int(np.argmax(((tab < 0) | (tab > EXTENT_MAX)).any(axis=1)))
        raise ValueError(
            f"shapes[{bad}] = {tab[bad].tolist()}: extents must be 0 .. {EXTENT_MAX} (they are "
            "stored as u32le)"
        )
    tab = tab.astype(np.int64, copy=False)
    fixed = [(a, d) for a, d in enumerate(pattern.dims) if d is not None]
    if count and fixed:
        want = np.array([d for _, d in fixed], dtype=np.int64)
        wrong = (tab[:, [a for a, _ in fixed]] != want).any(axis=1)
        if wrong.any():
            bad = int(np.argmax(wrong))
            raise CellError(
                f"shapes[{bad}] = {tab[bad].tolist()} does not match pattern {pattern}: the "
                "fixed extents must be as given"
            )
    # Item counts in float first: a product of huge extents must not wrap around.
    items = np.prod(tab.astype(np.float64), axis=1)
    wrong = items != steps
    if count and wrong.any():
        bad = int(np.argmax(wrong))
        held = items[bad]
        described = f"{held:.0f} items" if held <= total else f"more than the {total} values"
        raise ValueError(
            f"cell {bad} has shape {tuple(tab[bad].tolist())}, i.e. {described}, but offsets "
            f"give it {int(steps[bad])} (offsets[{bad + 1}] - offsets[{bad}])"
        )
    return tab


# ------------------------------------------------------------------------------- fill cell


class FillCell:
    """The fill cell of an array: its items and shape, and which cells equal it.

    Equality is that of SPEC 1.5 (which elements equal the fill, so zarr may elide a chunk of
    them): the same shape and the same bytes, as the fill value's own ``VlenScalar.__eq__``.
    """

    def __init__(self, dtype: NDArray, fill_value: Any) -> None:
        cell = unbox(fill_value)
        cell = dtype.coerce_cell(None if cell is None else np.asarray(cell))
        self.shape: tuple[int, ...] = tuple(int(n) for n in cell.shape)
        self.items = np.ascontiguousarray(cell, dtype=dtype.item_dtype).reshape(-1)
        self.size = int(self.items.size)

    def cells(self, count: int, with_shapes: bool) -> Cells:
        """``count`` fill cells."""
        shapes = np.tile(np.array(self.shape, np.int64), (count, 1)) if with_shapes else None
        sizes = np.full(count, self.size, dtype=np.int64)
        return Cells(np.tile(self.items, count), offsets_of(sizes), shapes)

    def matches(self, cells: Cells) -> npt.NDArray[np.bool_]:
        """Which of ``cells`` equal the fill cell (the same shape, the same bytes)."""
        sizes = cells.sizes
        same = sizes == self.size
        if cells.shapes is not None:
            same &= (cells.shapes == np.array(self.shape, np.int64)).all(axis=1)
        if not self.size or not same.any():
            return same
        at = np.flatnonzero(same)
        # Items compared as unsigned words of their bytes (two words per complex128 item).
        word = np.dtype(f"u{min(self.items.itemsize, 8)}")
        per = self.items.itemsize // word.itemsize
        fill = self.items.view(word)
        words = np.ascontiguousarray(cells.values).reshape(-1).view(word)
        block = words[(cells.offsets[at] * per)[:, None] + np.arange(fill.size)]
        same[at] = (block == fill).all(axis=1)
        return same


# --------------------------------------------------------------------------- cell objects


def gather_cells(cells: list[Any], dtype: NDArray, fill: FillCell | None = None) -> Cells:
    """Cell objects (in order) as :class:`Cells`; ``None`` stands for ``fill`` (else empty).

    The common case, every cell an ndarray of exactly the element dtype and rank, is one
    ``np.concatenate`` plus one pass over the shapes; other cells (lists, other dtypes, 0-d
    wrappers zarr puts around scalar writes) are converted one by one with the data type's
    lossless ``coerce_cell``. The cells are never modified.
    """
    found = _exact(cells, dtype)
    if found is None:
        cells = [_conform(c, dtype, fill) for c in cells]
        found = _exact(cells, dtype)
        if found is None:  # every cell was just conformed: cannot happen
            raise AssertionError("conformed cells did not concatenate")
    values, sizes, shapes = found
    if shapes is not None:
        _check_fixed(cells, shapes, dtype)
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
    flat = np.fromiter(chain.from_iterable(map(_shape, cells)), np.int64, count=count * ndim)
    shapes = flat.reshape(count, ndim)
    sizes = np.prod(shapes, axis=1) if ndim else np.ones(count, np.int64)
    values = np.asarray(values)
    if int(sizes.sum()) != values.size:  # objects whose shape lies
        return None
    return values, sizes, shapes


def _conform(cell: Any, dtype: NDArray, fill: FillCell | None) -> Any:
    """``cell`` itself if it is already an exact array of the pattern, else its coerced form."""
    if (
        type(cell) is np.ndarray
        and cell.dtype == dtype.item_dtype
        and dtype.pattern.matches(cell.shape)
    ):
        return cell
    if unbox(cell) is None and fill is not None:
        return fill.items.reshape(fill.shape)
    return dtype.coerce_cell(cell)


def _check_fixed(cells: list[Any], shapes: npt.NDArray[np.int64], dtype: NDArray) -> None:
    """Every cell's fixed extents equal the pattern's (one vectorized comparison)."""
    fixed = [(axis, d) for axis, d in enumerate(dtype.pattern.dims) if d is not None]
    if not fixed or not shapes.size:
        return
    want = np.array([d for _, d in fixed], dtype=np.int64)
    wrong = (shapes[:, [axis for axis, _ in fixed]] != want).any(axis=1)
    if wrong.any():
        bad = int(np.argmax(wrong))
        dtype.coerce_cell(cells[bad])  # raises the data type's error naming the pattern
        raise CellError(
            f"cell {bad} of shape {tuple(shapes[bad].tolist())} does not match pattern "
            f"{dtype.pattern}; reshape the cell."
        )
