"""Many cells at once (pure numpy): the checks of input columns and ``out`` buffers, cell
objects gathered into columns (one concatenation and conversion per source dtype) and columns
cut into read-only cell objects (one strided window per distinct shape)."""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import chain, pairwise
from operator import attrgetter, getitem
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype.blocks import FlatCells, offsets_of
from zarr_ndarray_dtype.cells import bool_bytes_as_01, cell_array, convert, mismatch, numbers, unbox
from zarr_ndarray_dtype.errors import CellError
from zarr_ndarray_dtype.pattern import U32_MAX, ShapePattern

if TYPE_CHECKING:
    from zarr_ndarray_dtype.dtype import FillCell, NDArrayDType

__all__: list[str] = []
Ints = npt.NDArray[np.int64]
Namer = Callable[[int], str]  # names cell i in messages

_ndim = attrgetter("ndim")
_dtype = attrgetter("dtype")
_shape = attrgetter("shape")


# ------------------------------------------------------------------------------------ checks


def check_columns(
    values: Any, offsets: Any, dtype: NDArrayDType, cells: int | None = None, *, shapes: Any = None
) -> FlatCells:
    """Input columns checked against ``dtype`` (the rule of ``Columnar``): ``offsets`` index the
    first axis of ``values`` (flat, or ``(rows, d1, ..., dk)`` for ``[null, d1..dk]``), the
    ``shapes`` table agrees with them, and the values convert without changing any value."""
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
    if int(off[0]) != 0:
        raise ValueError(f"offsets must start at 0, got {int(off[0])}")
    steps = np.diff(off)
    if steps.size and int(steps.min()) < 0:
        bad = int(np.argmax(steps < 0)) + 1
        raise ValueError(f"offsets must never decrease, but offsets[{bad}] < offsets[{bad - 1}]")
    arr = _values(values, dtype)
    if int(off[-1]) != arr.shape[0]:
        raise ValueError(
            f"offsets end at {int(off[-1])}, but values has {arr.shape[0]} "
            f"{'items' if arr.ndim == 1 else 'rows'}: the last offset must equal len(values)"
        )
    unit = pattern.fixed_items if arr.ndim > 1 else 1  # items in one row of values
    items = steps * unit
    table = None if shapes is None else _check_shapes(shapes, pattern, items, arr.size)
    if table is None:
        _check_items(items, pattern)

    def owner(at: int) -> str:  # the value at item ``at`` of the flat values, for errors
        cell = int(np.searchsorted(off, at // unit, side="right")) - 1
        return f"values[{at // unit}] (dtype {arr.dtype}), in cell {cell},"

    return _flat(convert(arr.reshape(-1), dtype.item_dtype, owner), off * unit, table, pattern)


def _integers(data: Any, name: str) -> Ints:
    arr = np.asarray(data)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an integer array, got dtype {arr.dtype}")
    if arr.dtype.kind == "u" and arr.size and int(np.max(arr)) > np.iinfo(np.int64).max:
        raise ValueError(f"{name} hold {int(np.max(arr))}, beyond the int64 range")
    return arr.astype(np.int64, copy=False)


def _values(values: Any, dtype: NDArrayDType) -> np.ndarray:
    """``values`` as an ndarray of one of the two layouts (flat, or rows of [null, d1..dk])."""
    plain = isinstance(values, np.ndarray) and values.dtype != object
    arr = values if plain else numbers(values, "values", dtype.item_dtype)
    pattern = dtype.pattern
    rows = pattern.dims[1:] if pattern.is_leading_variable else ()
    if arr.ndim == 1 or (arr.ndim > 1 and arr.shape[1:] == rows):
        return arr
    if rows:
        raise ValueError(
            f"values of shape {arr.shape} do not fit the pattern {pattern}: pass rows of shape "
            f"(total_rows, {', '.join(map(str, rows))}) with offsets counting rows, or flat "
            "values with offsets counting items"
        )
    raise ValueError(
        f"values must be flat (1-D) for the pattern {pattern}, got shape {arr.shape}: pass "
        "values.reshape(-1) with offsets counting items, and shapes="
    )


def _check_items(items: Ints, pattern: ShapePattern) -> None:
    """Without a shape table, every cell's item count must give its shape."""
    if pattern.needs_shapes:
        raise ValueError(
            f"shapes= is needed for the pattern {pattern}: with {pattern.dims.count(None)} "
            "variable dimensions a cell's shape does not follow from its item count; pass "
            f"shapes=, the (cells, {pattern.ndim}) table of every cell's shape (e.g. col.shapes "
            "of a read_columnar)"
        )
    fixed = pattern.fixed_items
    wrong = items != fixed if pattern.is_fixed else items % fixed != 0
    if items.size and wrong.any():
        bad = int(np.argmax(wrong))
        rule = "exactly" if pattern.is_fixed else "a whole number of"
        raise ValueError(
            f"cell {bad} has {int(items[bad])} items, but a cell of the pattern {pattern} holds "
            f"{rule} {fixed}-item parts: fix the offsets"
        )


def _check_shapes(shapes: Any, pattern: ShapePattern, items: Ints, total: int) -> Ints:
    """The shape table, checked: one row per cell, each the cell's item count."""
    count = items.size
    tab = _integers(shapes, "shapes")
    if tab.ndim != 2 or tab.shape[1] != pattern.ndim:
        raise ValueError(
            f"shapes must be a (cells, {pattern.ndim}) table (one full shape per cell for the "
            f"pattern {pattern}), got shape {tab.shape}"
        )
    if tab.shape[0] != count:
        raise ValueError(f"shapes describes {tab.shape[0]} cells, but offsets {count}")
    outside = (tab < 0) | (tab > U32_MAX)
    if count and outside.any():
        bad = int(np.argmax(outside.any(axis=1)))
        raise ValueError(
            f"shapes[{bad}] = {tab[bad].tolist()}: extents must be 0 .. {U32_MAX} (they are "
            "stored as u32le)"
        )
    check_fixed(tab, pattern, "the cell of shapes[{}]".format)
    held = np.prod(tab.astype(np.float64), axis=1)  # in float: huge products must not wrap
    wrong = held != items
    if count and wrong.any():
        bad = int(np.argmax(wrong))
        described = f"{held[bad]:.0f} items" if held[bad] <= total else f"over {total} items"
        raise ValueError(
            f"cell {bad} has shape {tuple(tab[bad].tolist())}, i.e. {described}, but offsets "
            f"give it {int(items[bad])} items (offsets[{bad + 1}] - offsets[{bad}])"
        )
    return tab


def check_fixed(shapes: Ints, pattern: ShapePattern, name: Namer) -> None:
    """Every cell's fixed extents equal the pattern's (one vectorized comparison)."""
    axes = [axis for axis, d in enumerate(pattern.dims) if d is not None]
    if not axes or not shapes.size:
        return
    wrong = (shapes[:, axes] != [pattern.dims[axis] for axis in axes]).any(axis=1)
    if wrong.any():
        bad = int(np.argmax(wrong))
        raise CellError(mismatch(name(bad), tuple(shapes[bad].tolist()), pattern))


def check_out(out: Any, dtype: NDArrayDType, count: int) -> tuple[np.ndarray, Ints]:
    """The buffers a read fills (``out=(values, offsets)``, numpy's ``out=`` convention):
    ``values`` of the element dtype, viewed flat; ``offsets`` int64 of ``count + 1`` entries;
    both C-contiguous, writeable and apart."""
    try:
        values, offsets = out
    except (TypeError, ValueError):
        raise TypeError(
            f"out must be a pair (values, offsets) of numpy arrays, got {type(out).__name__}: "
            "pass the arrays of an earlier read, or new ones from np.empty"
        ) from None
    checked = []
    for name, buffer, want in (("values", values, dtype.item_dtype), ("offsets", offsets, None)):
        want = np.dtype(np.int64) if want is None else want
        if not isinstance(buffer, np.ndarray) or buffer.dtype != want:
            got = f"is no numpy array, got {type(buffer).__name__}"
            got = f"has dtype {buffer.dtype}" if isinstance(buffer, np.ndarray) else got
            raise TypeError(
                f"out's {name} {got}: allocate it with np.empty(..., dtype={want.str!r})"
            )
        if not (buffer.flags.c_contiguous and buffer.flags.writeable):
            problem = "is not C-contiguous" if buffer.flags.writeable else "is read-only"
            raise ValueError(f"out's {name} {problem}: the read writes it in place, as one block")
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


# ------------------------------------------------------------------------ objects -> columns


def gather(
    cells: list[Any],
    dtype: NDArrayDType,
    fill: FillCell | None = None,
    name: Namer = "cell {}".format,
) -> FlatCells:
    """Cell objects (never modified) as :class:`FlatCells`, ``None`` standing for ``fill``:
    exact ndarrays as one ``np.concatenate``, others made arrays and converted at once, one
    concatenation per source dtype; ``name(i)`` names cell ``i`` in errors."""
    pattern, item = dtype.pattern, dtype.item_dtype
    values = _exact(cells, pattern, item)
    if values is not None:
        sizes, shapes = _sizes(cells, pattern, name)
        if int(sizes.sum()) == values.size:  # else objects whose len() or shape lies
            return _flat(values, offsets_of(sizes), shapes, pattern)
    return _converted(cells, dtype, fill, name)


def _exact(cells: list[Any], pattern: ShapePattern, item: np.dtype[Any]) -> np.ndarray | None:
    """The values (a plain array, even from fill cells) of ``cells`` when all are ndarrays of
    exactly the element dtype and the pattern's rank (one concatenation, which checks the
    trailing extents of [null, d1..dk])."""
    try:
        if pattern.is_leading_variable:
            block = np.concatenate(cells, axis=0, dtype=item, casting="no")
            return np.asarray(block).reshape(-1) if block.shape[1:] == pattern.dims[1:] else None
        ranks = np.fromiter(map(_ndim, cells), dtype=np.int64, count=len(cells))
        if int(np.min(ranks)) != pattern.ndim or int(np.max(ranks)) != pattern.ndim:
            return None
        return np.asarray(np.concatenate(cells, axis=None, dtype=item, casting="no"))
    except (AttributeError, ValueError, TypeError):
        return None


def _sizes(arrays: list[Any], pattern: ShapePattern, name: Namer) -> tuple[Ints, Ints | None]:
    """The item counts of arrays of the pattern's rank, and their shape table, checked (none
    for [null, d1..dk], whose concatenation checks the trailing extents)."""
    if pattern.is_leading_variable:
        return np.fromiter(map(len, arrays), np.int64, len(arrays)) * pattern.fixed_items, None
    shapes = _shapes(arrays, pattern, name)
    return np.prod(shapes, axis=1), shapes


def _shapes(arrays: list[Any], pattern: ShapePattern, name: Namer) -> Ints:
    count, ndim = len(arrays), pattern.ndim
    shapes = np.fromiter(chain.from_iterable(map(_shape, arrays)), np.int64, count * ndim)
    check_fixed(shapes.reshape(count, ndim), pattern, name)
    return shapes.reshape(count, ndim)


def _converted(
    cells: list[Any], dtype: NDArrayDType, fill: FillCell | None, name: Namer
) -> FlatCells:
    """The cells, any of them not exact: arrays first, then shapes, then values, all checked."""
    pattern, item = dtype.pattern, dtype.item_dtype
    arrays = list(cells)
    for i, cell in enumerate(cells):
        if type(cell) is not np.ndarray or cell.ndim != pattern.ndim or cell.dtype.hasobject:
            if fill is not None and unbox(cell) is None:
                arrays[i] = fill.items.reshape(fill.shape)
            else:
                arrays[i] = cell_array(cell, pattern, item, name(i))
    wrong = np.fromiter(map(_ndim, arrays), dtype=np.int64, count=len(arrays)) != pattern.ndim
    if wrong.any():
        bad = int(np.argmax(wrong))
        raise CellError(mismatch(name(bad), arrays[bad].shape, pattern))
    sizes, shapes = _sizes(arrays, pattern, name)
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
            return _flat(converted, offsets, shapes, pattern)
    with np.errstate(all="ignore"):  # every value was checked: this cast changes none
        values = _joined(arrays, pattern, name, item)
    return _flat(values, offsets, shapes, pattern)


def _joined(
    arrays: list[np.ndarray], pattern: ShapePattern, name: Namer, dtype: Any = None
) -> np.ndarray:
    """The arrays' items back to back (cast to ``dtype``); for ``[null, d1..dk]`` one
    concatenation along rows, whose trailing extents must be the pattern's."""
    if not arrays:  # no cells
        return np.empty(0, dtype)
    if not pattern.is_leading_variable:
        return np.concatenate(arrays, axis=None, dtype=dtype, casting="unsafe")
    try:
        block = np.concatenate(arrays, axis=0, dtype=dtype, casting="unsafe")
    except ValueError:
        _shapes(arrays, pattern, name)  # names the odd cell
        raise
    if block.shape[1:] != pattern.dims[1:]:  # every cell alike, all wrong
        _shapes(arrays, pattern, name)
    return block.reshape(-1)


def _flat(
    values: np.ndarray, offsets: Ints, shapes: Ints | None, pattern: ShapePattern
) -> FlatCells:
    """Checked columns as :class:`FlatCells`: bools stored 0/1, a shape table only if needed."""
    values = bool_bytes_as_01(values) if values.dtype.kind == "b" else values
    return FlatCells(values, offsets, shapes if pattern.needs_shapes else None)


# ------------------------------------------------------------------------ columns -> objects

# operator.getitem, typed for what it does here (its stub's overloads confuse ``map``).
_pick = cast("Callable[[np.ndarray, int], np.ndarray]", getitem)
# Windows pay from this many cells on, when a distinct shape serves at least _PER_WINDOW cells.
_WINDOWS_FROM = 1_000
_PER_WINDOW = 8


def cut(
    values: np.ndarray, offsets: Ints, shapes: Ints | None, pattern: ShapePattern
) -> np.ndarray:
    """1-D object array of read-only views: cell ``i`` is ``values[offsets[i]:offsets[i + 1]]``
    (flat values, item offsets) in its shape (``shapes[i]``, or the one its size gives), taken
    as ``window[offset]`` of a strided window per distinct shape where windows pay."""
    values.flags.writeable = False  # the caller's array, and so every view of it
    values = values.reshape(-1)
    values.flags.writeable = False  # a copy, when the values were not contiguous
    count = offsets.size - 1
    cells = _windowed(values, offsets, shapes, pattern) if count >= _WINDOWS_FROM else None
    if cells is not None:
        return cells
    table = (pattern.shapes_for_items(np.diff(offsets)) if shapes is None else shapes).tolist()
    bounds = offsets.tolist()
    pieces = (values[a:b].reshape(s) for (a, b), s in zip(pairwise(bounds), table, strict=True))
    return np.fromiter(pieces, dtype=object, count=count)


def _windowed(
    values: np.ndarray, offsets: Ints, shapes: Ints | None, pattern: ShapePattern
) -> np.ndarray | None:
    """The cells taken from one window per distinct shape; None when windows do not pay or
    numpy cannot make one (its size would pass numpy's limit)."""
    # Without a shape table (at most one variable dimension) the sizes tell the shapes apart.
    kinds = _distinct(np.diff(offsets)[:, None] if shapes is None else shapes)
    count = offsets.size - 1
    if kinds is None or count < _PER_WINDOW * len(kinds[1]):
        return None
    slots, rows, ids = kinds
    if shapes is None:
        rows = pattern.shapes_for_items(rows[:, 0])
    windows = np.empty(int(np.max(ids)) + 1, dtype=object)  # slots of absent shapes stay None
    try:
        for slot, shape in zip(slots.tolist(), rows.tolist(), strict=True):
            windows[slot] = _window(values, shape)
    except ValueError:
        return None
    picked = map(_pick, windows[ids].tolist(), offsets[:-1].tolist())
    return np.fromiter(picked, dtype=object, count=count)


def _distinct(shapes: Ints) -> tuple[Ints, Ints, Ints] | None:
    """``(slots, rows, ids)``: ``rows`` the distinct rows of ``shapes``; row ``i`` of
    ``shapes`` is ``rows[k]`` where ``slots[k] == ids[i]``. None when the rows do not pack
    into one int64 key (huge extents)."""
    columns = list(shapes.T)  # one column at a time: numpy reduces a column fastest
    low = [int(column.min()) for column in columns]
    radix = [int(column.max()) + 1 - lo for column, lo in zip(columns, low, strict=True)]
    if math.prod(radix) >= 2**62:
        return None
    key = np.zeros(shapes.shape[0], dtype=np.int64)
    for column, lo, r in zip(columns, low, radix, strict=True):
        key *= r
        key += column
        key -= lo
    if math.prod(radix) <= 4 * key.size:  # dense keys are the slots themselves: no sort
        keys = slots = np.flatnonzero(np.bincount(key))
        ids = key
    else:
        keys, ids = np.unique(key, return_inverse=True)
        slots, ids = np.arange(keys.size), ids.reshape(-1)
    rows = np.empty((keys.size, len(columns)), dtype=np.int64)
    for c in range(len(columns) - 1, -1, -1):
        keys, rows[:, c] = np.divmod(keys, radix[c])
        rows[:, c] += low[c]
    return slots, rows, ids


def _window(values: np.ndarray, shape: list[int]) -> np.ndarray:
    """A read-only view whose ``window[k]`` is the C-order cell of ``shape`` at item ``k``."""
    strides = [values.itemsize * math.prod(shape[axis + 1 :]) for axis in range(len(shape))]
    rows = values.size - math.prod(shape) + 1
    return np.ndarray((rows, *shape), values.dtype, values, 0, (values.itemsize, *strides))


def readonly_cells(block: np.ndarray, offsets: Ints) -> np.ndarray:
    """Object array of read-only views ``block[offsets[i]:offsets[i + 1]]`` of the rows of
    ``block``, shaped ``(total, d1, ..., dk)`` (deprecated: use ``Columnar.cells()``)."""
    shapes = np.empty((offsets.size - 1, block.ndim), dtype=np.int64)
    shapes[:, 0] = np.diff(offsets)
    shapes[:, 1:] = block.shape[1:]
    pattern = ShapePattern((None,) * block.ndim)  # unused: the shapes are given
    return cut(block, offsets * math.prod(block.shape[1:]), shapes, pattern)
