"""Columnar cells to and from awkward-array (the ``awkward`` extra, imported only when used):
fixed cell axes are ``RegularArray``, variable ones ``ListOffsetArray``, over the values."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NoReturn

import numpy as np

from zarr_ndarray_dtype import Columnar, NDArrayDType
from zarr_ndarray_dtype.blocks import offsets_of
from zarr_ndarray_dtype.errors import CellError, NDArrayDTypeError

__all__ = ["from_awkward", "to_awkward"]

_REFUSED = {  # what no cell is made of, by the layout property that says so
    "is_option": "missing values (an option type): fill or drop them first (ak.fill_none)",
    "is_record": "records: convert one field at a time",
    "is_union": "a union (cells of different ranks or dtypes)",
    "is_unknown": "no item type (type unknown): give the items a dtype (ak.values_astype)",
}


def to_awkward(col: Columnar | Mapping[str, Columnar]) -> Any:
    """``col`` as an ``ak.Array`` of type ``shape... * <cell type>`` (``N * var * 2 * float32``
    for ``[null, 2]``) over its values (and ``[null, ...]`` offsets); a mapping of row-aligned
    columns as one record of their rows (``N * var * {a: 2 * float32, b: uint64}``)."""
    import awkward as ak  # the awkward extra

    if isinstance(col, Mapping):
        depth = len(next(iter(col.values())).shape) + 1  # the grid's axes, then the rows
        return ak.zip({name: to_awkward(c) for name, c in col.items()}, depth_limit=depth)
    dims, shapes = col.data_type.shape, col.shapes
    lists = np.cumprod(np.column_stack([np.ones(len(shapes), np.int64), shapes[:, :-1]]), axis=1)
    layout: Any = ak.contents.NumpyArray(col.values.reshape(-1))
    for axis in reversed(range(len(dims))):  # a cell's axes, innermost first
        if dims[axis] is not None:
            layout = ak.contents.RegularArray(layout, dims[axis], int(lists[:, axis].sum()))
            continue
        rows = axis == 0 and None not in dims[1:]  # [null, d1..dk]: col.offsets count rows
        offsets = col.offsets if rows else offsets_of(np.repeat(shapes[:, axis], lists[:, axis]))
        layout = ak.contents.ListOffsetArray(ak.index.Index64(offsets), layout)
    for axis in reversed(range(1, len(col.shape))):  # the selection's axes
        layout = ak.contents.RegularArray(layout, col.shape[axis], math.prod(col.shape[:axis]))
    return ak.Array(layout)


def from_awkward(array: Any, ndim: int = 1) -> Any:
    """An awkward array of cells as :class:`Columnar` (items and ``[null, ...]`` row offsets
    shared where packed): its first ``ndim`` (regular) dimensions index the cells, the others
    are each cell's. A missing cell is the empty cell; a record of rows gives a ``dict`` of
    row-aligned columns; what no pattern holds is a :class:`CellError` naming the type."""
    import awkward as ak  # the awkward extra

    if not isinstance(ndim, int) or ndim < 1:
        raise ValueError(f"from_awkward: ndim={ndim!r} must be an int >= 1 (the cells' axes)")
    cell = (array := ak.Array(array)).type.content
    for _ in range(ndim - 1):  # down to the cells' type
        cell = getattr(cell, "content", cell)
    if isinstance(cell, ak.types.ListType) and isinstance(cell.content, ak.types.RecordType):
        return {field: from_awkward(array[field], ndim) for field in ak.fields(array)}
    missing = isinstance(cell, ak.types.OptionType)  # a missing cell is the empty one
    layout = ak.to_packed(ak.fill_none(array, [], axis=ndim - 1) if missing else array)
    layout, levels = layout.layout, []
    while not isinstance(layout, ak.contents.NumpyArray):
        if layout.parameter("__array__") in ("string", "bytestring", "char", "byte"):
            _refuse(array, "strings or bytes")
        if not isinstance(layout, ak.contents.RegularArray | ak.contents.ListOffsetArray):
            why = next((w for flag, w in _REFUSED.items() if getattr(layout, flag)), None)
            _refuse(array, why or f"a {type(layout).__name__} layout")
        levels.append(layout)
        layout = layout.content
    if var := [i for i, lv in enumerate(levels[: ndim - 1], 1) if not hasattr(lv, "size")]:
        _refuse(array, f"a var dimension {var[0]}: the first {ndim} must be regular")
    if len(levels) < ndim:
        _refuse(array, "no axis below the cells: cells must be arrays (pass a smaller ndim=)")
    shape = (len(array), *(level.size for level in levels[: ndim - 1]))
    dims = [getattr(level, "size", None) for level in levels[ndim - 1 :]]  # None: var
    table = np.zeros((levels[ndim - 1].length, len(dims)), dtype=np.int64)  # the cells' shapes
    lists = np.ones(len(table), dtype=np.int64)  # how many lists each cell has at this depth
    for axis, (level, size) in enumerate(zip(levels[ndim - 1 :], dims, strict=True)):
        if size is not None:
            table[:, axis] = size
        else:  # every list of a cell at this depth has the cell's extent: it is rectangular
            lengths, owner = np.diff(level.offsets.data), np.repeat(np.arange(len(table)), lists)
            table[owner, axis] = lengths
            if (wrong := np.flatnonzero(table[owner, axis] != lengths)).size:
                why = f"rows of different lengths along its axis {axis}"
                _refuse(array, f"cell {owner[wrong[0]]} with {why}: a cell must be rectangular")
        lists = lists * table[:, axis]
    items = np.asarray(layout.data).reshape(-1)
    try:
        data_type = NDArrayDType(dtype=items.dtype.name, shape=tuple(dims))
    except NDArrayDTypeError as exc:
        _refuse(array, f"items of dtype {items.dtype} in cells {tuple(dims)}, no data type: {exc}")
    if dims[0] is None and None not in dims[1:]:  # rows of values: offsets of the first list
        rows = np.asarray(levels[ndim - 1].offsets.data, dtype=np.int64)
        return Columnar(data_type, items.reshape(-1, *dims[1:]), rows, None, shape)
    return Columnar(data_type, items, offsets_of(table.prod(axis=1)), table, shape)


def _refuse(array: Any, what: str) -> NoReturn:
    raise CellError(
        f"from_awkward: the awkward type {array.type} has {what}; cells of the 'ndarray' data "
        "type are rectangular arrays of one numeric dtype, each dimension var or of a fixed extent"
    )
