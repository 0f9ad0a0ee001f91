"""Cells in columnar form, and its rules: the check of input columns, the fill cell, gathering
cell objects (pure numpy and the data type's rules; no zarr).

:class:`Cells` is how both codecs and the columnar engine hold many cells: ``values`` flat in
the element dtype, cell ``i`` being ``values[offsets[i]:offsets[i + 1]]`` (item offsets), with
``shapes`` the ``(count, ndim)`` table of full shapes when the pattern has two or more variable
dimensions (with at most one, every shape follows from the item count: ``shapes`` is None).
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype._segments import offsets_of
from zarr_ndarray_dtype.blocks import Cells, needs_shapes
from zarr_ndarray_dtype.cells import bool_bytes_as_01, convert, mismatch, unbox
from zarr_ndarray_dtype.errors import CellError
from zarr_ndarray_dtype.pattern import ShapePattern

if TYPE_CHECKING:
    from zarr_ndarray_dtype.dtype import NDArray

__all__ = [
    "EXTENT_MAX", "FillBlock", "FillCell", "check_columns", "check_fixed", "check_out",
]  # fmt: skip

#: The largest extent a stored shape may have (both codecs store extents as u32le).
EXTENT_MAX = 0xFFFF_FFFF

_ndim = attrgetter("ndim")
_dtype = attrgetter("dtype")
_shape = attrgetter("shape")


# ------------------------------------------------------------------------------------ checks


def check_columns(
    values: Any, offsets: Any, dtype: NDArray, cells: int | None = None, *, shapes: Any = None
) -> Cells:
    """Check input columns against ``dtype`` and return them as :class:`Cells`.

    The rule of :class:`~zarr_ndarray_dtype.columnar.Columnar`: ``offsets`` (integers, one
    more than the cells, from 0 to ``len(values)``, never decreasing) index the first axis of
    ``values``, which is flat or, for ``[null, d1..dk]``, of shape ``(rows, d1, ..., dk)``.
    ``shapes``, a ``(count, ndim)`` integer table (fixed extents as given, variable ones 0 ..
    2**32 - 1), is needed only with two or more variable dimensions; given, it must agree with
    the offsets. ``values`` convert to the element dtype without changing any value (bools
    stored 0/1). Raises ValueError / TypeError naming the rule.
    """
    pattern = dtype.pattern
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
    arr = _values(values, dtype)
    if int(off[-1]) != arr.shape[0]:
        raise ValueError(
            f"offsets end at {int(off[-1])}, but values has {arr.shape[0]} "
            f"{'items' if arr.ndim == 1 else 'rows'}: the last offset must equal len(values)"
        )
    unit = pattern.fixed_items if arr.ndim > 1 else 1  # items in one row of values
    items = steps * unit if unit != 1 else steps
    if shapes is not None:
        table = _check_shapes(shapes, pattern, items, arr.size)
    else:
        table = None
        _check_items(items, pattern)

    def owner(at: int) -> str:  # the value at item ``at`` of the flat values, for errors
        row = at // unit
        cell = int(np.searchsorted(off, row, side="right")) - 1
        return f"values[{row}] (dtype {arr.dtype}), in cell {cell},"

    block = convert(arr.reshape(-1), dtype.item_dtype, owner)
    if block.dtype.kind == "b":
        block = bool_bytes_as_01(block)
    return Cells(block, off * unit if unit != 1 else off, table if needs_shapes(pattern) else None)


def _integers(data: Any, name: str) -> np.ndarray:
    arr = np.asarray(data)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an integer array, got dtype {arr.dtype}")
    if arr.dtype.kind == "u" and arr.size and int(np.max(arr)) > np.iinfo(np.int64).max:
        raise ValueError(f"{name} hold {int(np.max(arr))}, beyond the int64 range")
    return arr


def _values(values: Any, dtype: NDArray) -> np.ndarray:
    """``values`` as an ndarray of one of the two layouts (flat, or rows of [null, d1..dk])."""
    arr = np.asarray(values)
    if arr.dtype == object:
        raise TypeError(
            "values must be a numeric (or bool) array, not an object array; for a list of "
            "cells write array[...] = cells instead"
        )
    pattern = dtype.pattern
    rows = pattern.dims[1:] if pattern.is_leading_variable else ()
    if arr.ndim == 1 or (arr.ndim > 1 and arr.shape[1:] == rows):
        return arr
    if rows:
        raise ValueError(
            f"values of shape {arr.shape} do not fit the pattern {list(pattern.dims)}: pass "
            f"rows of shape (total_rows, {', '.join(map(str, rows))}) with offsets counting "
            "rows, or flat values with offsets counting items"
        )
    raise ValueError(
        f"values must be flat (1-D) for the pattern {list(pattern.dims)}, got shape "
        f"{arr.shape}: pass values.reshape(-1) with offsets counting items, and shapes="
    )


def _check_items(items: npt.NDArray[np.int64], pattern: ShapePattern) -> None:
    """Without a shape table, every cell's item count must give its shape."""
    if needs_shapes(pattern):
        raise ValueError(
            f"shapes= is needed for the pattern {list(pattern.dims)}: with "
            f"{len(pattern.variable_axes)} variable dimensions a cell's shape does not follow "
            f"from its item count; pass shapes=, the (cells, {pattern.ndim}) table of every "
            "cell's shape (e.g. col.shapes of a read_columnar)"
        )
    fixed = pattern.fixed_items
    wrong = items != fixed if pattern.is_fixed else items % fixed != 0
    if items.size and wrong.any():
        bad = int(np.argmax(wrong))
        rule = (
            f"exactly {fixed} items (the shape {pattern.dims})"
            if pattern.is_fixed
            else f"a whole number of {fixed}-item parts"
        )
        raise ValueError(
            f"cell {bad} has {int(items[bad])} items, but a cell of the pattern "
            f"{list(pattern.dims)} holds {rule}: fix the offsets"
        )


def _check_shapes(
    shapes: Any, pattern: ShapePattern, items: npt.NDArray[np.int64], total: int
) -> npt.NDArray[np.int64]:
    """The shape table, checked: one row per cell, each the cell's item count."""
    count = items.size
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
    check_fixed(tab, pattern, "the cell of shapes[{}]".format)
    # Item counts in float: a product of huge extents must not wrap around.
    held = np.prod(tab.astype(np.float64), axis=1)
    wrong = held != items
    if count and wrong.any():
        bad = int(np.argmax(wrong))
        described = f"{held[bad]:.0f} items" if held[bad] <= total else f"over {total} items"
        raise ValueError(
            f"cell {bad} has shape {tuple(tab[bad].tolist())}, i.e. {described}, but offsets "
            f"give it {int(items[bad])} items (offsets[{bad + 1}] - offsets[{bad}])"
        )
    return tab


def check_fixed(
    shapes: npt.NDArray[np.int64], pattern: ShapePattern, name: Callable[[int], str]
) -> None:
    """Every cell's fixed extents equal the pattern's (one vectorized comparison)."""
    fixed = [(axis, d) for axis, d in enumerate(pattern.dims) if d is not None]
    if not fixed or not shapes.size:
        return
    want = np.array([d for _, d in fixed], dtype=np.int64)
    wrong = (shapes[:, [axis for axis, _ in fixed]] != want).any(axis=1)
    if wrong.any():
        bad = int(np.argmax(wrong))
        raise CellError(mismatch(name(bad), tuple(shapes[bad].tolist()), pattern))


def check_out(out: Any, dtype: NDArray, count: int) -> tuple[np.ndarray, npt.NDArray[np.int64]]:
    """The buffers a read fills (``read_columnar(..., out=(values, offsets))``, numpy's ``out=``
    convention): ``values`` of the element dtype, viewed flat, with room for the items;
    ``offsets`` int64 of ``count + 1`` entries; both C-contiguous, writeable, apart."""
    try:
        values, offsets = out
    except (TypeError, ValueError):
        raise TypeError(
            f"out must be a pair (values, offsets) of numpy arrays, got {type(out).__name__}: "
            "pass the arrays of an earlier read, or new ones from np.empty"
        ) from None
    checked = []
    for name, buffer, want in (
        ("values", values, dtype.item_dtype),
        ("offsets", offsets, np.dtype(np.int64)),
    ):
        if not isinstance(buffer, np.ndarray):
            raise TypeError(
                f"out's {name} must be a numpy array, got {type(buffer).__name__}: allocate it "
                f"with np.empty(..., dtype={want.str!r})"
            )
        if buffer.dtype != want:
            raise TypeError(
                f"out's {name} has dtype {buffer.dtype}, but this read fills {want}: allocate it "
                f"with dtype={want.str!r}"
            )
        if not buffer.flags.c_contiguous:
            raise ValueError(
                f"out's {name} is not C-contiguous (a strided view?); the read writes it as one "
                "block: pass a contiguous array (np.empty, or np.ascontiguousarray of it)"
            )
        if not buffer.flags.writeable:
            raise ValueError(
                f"out's {name} is read-only; the read writes it in place: pass a writeable array "
                "(one you allocated, or a copy)"
            )
        # a subclass (np.memmap, ...) as a plain array of the same memory
        checked.append(buffer if type(buffer) is np.ndarray else buffer.view(np.ndarray))
    values, offsets = checked
    if offsets.shape != (count + 1,):
        raise ValueError(
            f"out's offsets has shape {offsets.shape}, but the {count} cells of this selection "
            f"need shape ({count + 1},)"
        )
    if np.shares_memory(values, offsets):
        raise ValueError("out's values and offsets overlap: they must be separate arrays")
    return values.reshape(-1), offsets


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


class FillBlock:
    """The fill cell as a block of one cell (cell 0), copied to every place asked."""

    def __init__(self, fill: FillCell, with_shapes: bool) -> None:
        self.fill = fill
        self.sizes = np.array([fill.size], dtype=np.int64)
        self.shapes = np.array([fill.shape], dtype=np.int64) if with_shapes else None

    def copy(
        self, cells: npt.NDArray[np.intp] | slice, out: npt.NDArray[np.uint8], dst: Any
    ) -> None:
        assert not isinstance(cells, slice), "the fill block has one cell: copy it by index"
        items = self.fill.items
        if not items.size or not cells.size:
            return
        raw = items.view(np.uint8)
        at = dst[:, None] + np.arange(raw.size)
        out[at] = raw

    def cells(self) -> Cells:
        return self.fill.cells(1, self.shapes is not None)
