"""Columnar cells to and from awkward-array (the ``awkward`` extra; imported only here).

A cell axis of a fixed extent is a ``RegularArray``, a variable one a ``ListOffsetArray``, the
items a ``NumpyArray`` over :attr:`Columnar.values` itself; the selection's axes are the outer
dimensions. ``[null, d1..dk]`` cells thus convert without a copy either way
(``var * d1 * ... * T``, the layout ``ak.from_arrow`` gives a ``list<fixed_size_list>``); other
patterns need one offsets array per variable axis after the first, built from the shapes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype.blocks import offsets_of
from zarr_ndarray_dtype.columnar import Columnar
from zarr_ndarray_dtype.dtype import NDArrayDType as NDArray
from zarr_ndarray_dtype.errors import CellError
from zarr_ndarray_dtype.pattern import ELEMENT_DTYPES

__all__ = ["from_awkward", "to_awkward"]


def _ak() -> Any:
    try:
        import awkward
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "converting to and from awkward arrays needs awkward: "
            "pip install 'zarr-ndarray-dtype[awkward]'"
        ) from exc
    return awkward


def to_awkward(col: Columnar) -> Any:
    """``col`` as an ``ak.Array`` of type ``shape[0] * ... * <cell type>``, where the cell type
    follows the pattern: ``var`` for a variable axis, its extent for a fixed one (``N * var *
    2 * float32`` for ``[null, 2]``, ``N * 2 * var * int16`` for ``[2, null]``). The items are
    ``col.values`` itself; a selection of one cell (shape ``()``) gives an array of length 1.
    """
    ak = _ak()
    contents, index = ak.contents, ak.index
    dims = col.data_type.shape
    layout: Any = contents.NumpyArray(col.values.reshape(-1))
    if col.data_type.pattern.is_leading_variable:  # rows of values: no table needed
        for extent in reversed(col.values.shape[1:]):
            layout = contents.RegularArray(layout, extent)
        layout = contents.ListOffsetArray(index.Index64(col.offsets), layout)
    else:
        shapes = col.shapes
        count = shapes.shape[0]
        # lists[k]: how many lists each cell has at depth k (its extents before axis k, multiplied)
        lists = [np.ones(count, dtype=np.int64)]
        for axis in range(len(dims) - 1):
            lists.append(lists[-1] * shapes[:, axis])
        for axis in reversed(range(len(dims))):
            extent = dims[axis]
            if extent is not None:
                layout = contents.RegularArray(layout, extent, zeros_length=int(lists[axis].sum()))
            else:  # a copy: every list's length at this depth, then their offsets
                lengths = np.repeat(shapes[:, axis], lists[axis])
                layout = contents.ListOffsetArray(index.Index64(offsets_of(lengths)), layout)
    for axis in reversed(range(1, len(col.shape))):  # the selection's axes, innermost first
        layout = contents.RegularArray(layout, col.shape[axis], math.prod(col.shape[:axis]))
    return ak.Array(layout)


def from_awkward(array: Any, ndim: int = 1) -> Columnar:
    """An awkward array of cells as :class:`Columnar`: its first ``ndim`` dimensions (each of
    one length: regular) index the cells, the others are each cell's, ``var`` or regular.

    The pattern follows the type (``var * 2 * float32`` gives ``[null, 2]``); ``[null, d1..dk]``
    cells share the items and the offsets with ``array``. Refused, with
    :class:`~zarr_ndarray_dtype.errors.CellError` naming the type: option types (missing
    values), records, unions (mixed ranks or dtypes), strings, item types outside the 14
    element dtypes, and cells that are not rectangular (rows of different lengths in one cell).
    Awkward has no extent for a variable axis below one of extent 0: such cells read with 0.
    """
    ak = _ak()
    layout = ak.to_layout(array)
    if not isinstance(ndim, int) or ndim < 1:
        raise ValueError(f"from_awkward: ndim={ndim!r} must be an int >= 1 (the cells' axes)")
    shape, layout = _grid(ak, layout, ndim, array)
    count = math.prod(shape)
    dims: list[int | None] = []
    shapes: list[npt.NDArray[np.int64]] = []
    lists = np.ones(count, dtype=np.int64)  # the lists each cell has at the current depth
    row_offsets: npt.NDArray[np.int64] | None = None
    while not isinstance(layout, ak.contents.NumpyArray) or layout.data.ndim > 1:
        layout = _plain(ak, layout, array)
        if isinstance(layout, ak.contents.RegularArray):
            if not layout.size:
                _refuse(array, "an axis of fixed extent 0, which no ndarray pattern has")
            dims.append(layout.size)
            shapes.append(np.full(count, layout.size, dtype=np.int64))
            lists = lists * layout.size
            layout = layout.content[: layout.length * layout.size]
            continue
        offsets = np.asarray(layout.offsets.data, dtype=np.int64)
        first = int(offsets[0])
        lengths = np.diff(offsets)
        extent = _extents(lengths, lists, array, len(dims))
        if not dims:
            row_offsets = offsets - first if first else offsets
        dims.append(None)
        shapes.append(extent)
        lists = lists * extent
        layout = layout.content[first : int(offsets[-1])]
    items = np.asarray(layout.data)
    if items.dtype.name not in ELEMENT_DTYPES:
        _refuse(array, f"items of dtype {items.dtype}, none of the element dtypes")
    if not dims:
        _refuse(array, "no axis below the cells: cells must be arrays (pass a smaller ndim=)")
    data_type = NDArray(dtype=items.dtype.name, shape=tuple(dims))
    table = np.stack(shapes, axis=1) if shapes else np.zeros((count, 0), np.int64)
    if data_type.pattern.is_leading_variable and row_offsets is not None:
        rows = items[: int(row_offsets[-1]) * data_type.pattern.fixed_items]
        values = rows.reshape(-1, *data_type.shape[1:])
        return Columnar(data_type, values, row_offsets, None, shape)
    sizes = np.prod(table, axis=1, dtype=np.int64)
    offsets = offsets_of(sizes)
    return Columnar(data_type, items[: int(offsets[-1])], offsets, table, shape)


def _grid(ak: Any, layout: Any, ndim: int, array: Any) -> tuple[tuple[int, ...], Any]:
    """The cells' own shape (the first ``ndim`` dimensions, which must be regular) and the
    layout of the cells, one after the other."""
    shape = [layout.length]
    for axis in range(1, ndim):
        layout = _plain(ak, layout, array)
        if not isinstance(layout, ak.contents.RegularArray):
            if isinstance(layout, ak.contents.ListOffsetArray):
                _refuse(array, f"a var dimension {axis}: the first {ndim} must be regular")
            _refuse(array, f"fewer than {ndim + 1} dimensions")
        shape.append(layout.size)
        layout = layout.content[: layout.length * layout.size]
    return tuple(shape), layout


def _plain(ak: Any, layout: Any, array: Any) -> Any:
    """A list layout as a RegularArray or a ListOffsetArray (what the cells can be made of)."""
    contents = ak.contents
    if isinstance(layout, contents.NumpyArray) and layout.data.ndim > 1:
        return layout.to_RegularArray()
    if isinstance(layout, contents.ListArray):
        return layout.to_ListOffsetArray64(False)
    if isinstance(layout, contents.IndexedArray) and not layout.is_option:
        return _plain(ak, layout.project(), array)
    if layout.parameter("__array__") in ("string", "bytestring", "char", "byte"):
        _refuse(array, "strings or bytes")
    if isinstance(layout, contents.RegularArray | contents.ListOffsetArray):
        return layout
    if layout.is_option:
        _refuse(array, "missing values (an option type): fill or drop them first (ak.fill_none)")
    if layout.is_record:
        _refuse(array, "records: convert one field at a time")
    if layout.is_union:
        _refuse(array, "a union (cells of different ranks or dtypes)")
    if isinstance(layout, contents.EmptyArray):
        _refuse(array, "no item type (type unknown): give the items a dtype (ak.values_astype)")
    if isinstance(layout, contents.NumpyArray):
        _refuse(array, "fewer dimensions than the cells' axes plus at least one of each cell")
    _refuse(array, f"a {type(layout).__name__} layout")
    raise AssertionError  # pragma: no cover - _refuse raises


def _extents(
    lengths: npt.NDArray[np.int64], lists: npt.NDArray[np.int64], array: Any, axis: int
) -> npt.NDArray[np.int64]:
    """Each cell's extent along a variable axis: the length of its lists there, which must all
    be the same (a cell is rectangular); 0 for a cell with no list at this depth."""
    starts = offsets_of(lists)[:-1]
    has = lists > 0
    extent = np.zeros(lists.size, dtype=np.int64)
    extent[has] = lengths[starts[has]]
    wrong = np.repeat(extent, lists) != lengths
    if wrong.any():
        cell = int(np.searchsorted(starts, int(np.argmax(wrong)), side="right")) - 1
        _refuse(
            array,
            f"cell {cell} with rows of different lengths along its axis {axis}: a cell must be "
            "rectangular (an ndarray)",
        )
    return extent


def _refuse(array: Any, what: str) -> None:
    kind = getattr(array, "type", None) or type(array).__name__
    raise CellError(
        f"from_awkward: the awkward type {kind} has {what}; cells of the 'ndarray' data type "
        "are rectangular arrays of one numeric dtype, each dimension var or of a fixed extent"
    )
