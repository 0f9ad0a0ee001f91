"""Columnar cells to and from awkward-array (the ``awkward`` extra, imported only when used):
fixed cell axes are ``RegularArray``, variable ones ``ListOffsetArray``, over the values; the
columns of row-aligned arrays one ``RecordArray`` of their rows."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NoReturn

import numpy as np

from zarr_ndarray_dtype import Columnar, NDArrayDType
from zarr_ndarray_dtype.errors import CellError, ElementDTypeError

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


def _offsets(sizes: np.ndarray) -> np.ndarray:
    return np.concatenate(([0], np.cumsum(sizes, dtype=np.int64)))


def to_awkward(col: Columnar | Mapping[str, Columnar]) -> Any:
    """``col`` as an ``ak.Array`` of type ``shape... * <cell type>``: ``N * var * 2 * float32``
    for ``[null, 2]``, ``N * 2 * var * int16`` for ``[2, null]``. The items are ``col.values``
    (and ``[null, ...]`` rows share ``col.offsets``); a one-cell selection gives length 1.

    A mapping of row-aligned columns (:func:`~zarr_ndarray_dtype.read_aligned`'s) is one record
    of their rows, e.g. ``N * var * {centroids: 2 * float32, times: uint64}``, over their
    shared offsets."""
    ak = _ak()
    contents = ak.contents
    if isinstance(col, Mapping):
        first = next(iter(col.values()))
        fields = [_cells(ak, c, rows=True) for c in col.values()]
        rows = contents.RecordArray(fields, list(col), length=int(first.offsets[-1]))
        layout = contents.ListOffsetArray(ak.index.Index64(first.offsets), rows)
        return ak.Array(_grid(ak, layout, first.shape))
    return ak.Array(_grid(ak, _cells(ak, col), col.shape))


def _cells(ak: Any, col: Columnar, rows: bool = False) -> Any:
    """The layout of ``col``'s cells (of their rows only, with ``rows``: aligned columns)."""
    contents, dims = ak.contents, col.data_type.shape
    leading = dims[0] is None and None not in dims[1:]
    shapes = col.shapes
    lists = np.cumprod(np.column_stack([np.ones(len(shapes), np.int64), shapes[:, :-1]]), axis=1)
    layout: Any = contents.NumpyArray(col.values.reshape(-1))
    for axis in reversed(range(1 if rows else 0, len(dims))):  # a cell's axes, innermost first
        if dims[axis] is not None:
            layout = contents.RegularArray(layout, dims[axis], int(lists[:, axis].sum()))
            continue
        lengths = np.repeat(shapes[:, axis], lists[:, axis])
        offsets = col.offsets if axis == 0 and leading else _offsets(lengths)
        layout = contents.ListOffsetArray(ak.index.Index64(offsets), layout)
    return layout


def _grid(ak: Any, layout: Any, shape: tuple[int, ...]) -> Any:
    """``layout`` (one entry per cell) laid out on the selection's axes."""
    for axis in reversed(range(1, len(shape))):
        layout = ak.contents.RegularArray(layout, shape[axis], math.prod(shape[:axis]))
    return layout


def from_awkward(array: Any, ndim: int = 1) -> Any:
    """An awkward array of cells as :class:`Columnar`: its first ``ndim`` (regular) dimensions
    index the cells, the others are each cell's, ``var`` or regular (``var * 2 * float32``
    gives ``[null, 2]``). The items, and ``[null, ...]`` row offsets, are shared where packed.
    A missing cell (an option type's None) is the empty cell, as ``None`` is in object writes
    of the arrays' default fill. A record of rows (``var * {a: 2 * float32, b: uint64}``) gives
    a ``dict`` of row-aligned columns by field, for :func:`~zarr_ndarray_dtype.write_aligned`.

    Refused with :class:`~zarr_ndarray_dtype.errors.CellError` naming the type: records other
    than of rows, unions, strings, items outside the element dtypes, and cells that are not
    rectangular. A variable axis below one of extent 0 reads with extent 0 (awkward has none).
    """
    ak = _ak()
    if not isinstance(ndim, int) or ndim < 1:
        raise ValueError(f"from_awkward: ndim={ndim!r} must be an int >= 1 (the cells' axes)")
    layout = cells = ak.to_layout(array)
    for _ in range(ndim - 1):  # down to the cells
        cells = getattr(cells, "content", cells)
    if cells.is_option:  # a missing cell is the empty one
        layout = ak.to_layout(ak.fill_none(array, [], axis=ndim - 1))
    layout = ak.to_packed(layout, highlevel=False)
    rows = _rows(ak, layout, ndim)
    if rows is None:
        return _columnar(ak, layout, ndim, array)
    grid, offsets, record = rows
    cols = {}
    for field in record.fields:
        col = _columnar(ak, ak.contents.ListOffsetArray(offsets, record.content(field)), 1, array)
        col.shape = grid
        cols[field] = col
    return cols


def _rows(ak: Any, layout: Any, ndim: int) -> tuple[tuple[int, ...], Any, Any] | None:
    """``(grid shape, row offsets, record)`` of a record of rows, or None."""
    shape = [layout.length]
    for _ in range(ndim - 1):
        if not isinstance(layout, ak.contents.RegularArray):
            return None
        shape.append(layout.size)
        layout = layout.content
    if isinstance(layout, ak.contents.ListOffsetArray) and layout.content.is_record:
        return tuple(shape), layout.offsets, layout.content
    return None


def _columnar(ak: Any, layout: Any, ndim: int, array: Any) -> Columnar:
    """A packed layout of cells as :class:`Columnar` (see :func:`from_awkward`)."""
    shape, levels = [layout.length], []
    while not isinstance(layout, ak.contents.NumpyArray):
        levels.append(layout := _list(ak, layout, array))
        layout = layout.content
    for axis, level in enumerate(levels[: ndim - 1], 1):
        if not isinstance(level, ak.contents.RegularArray):
            _refuse(array, f"a var dimension {axis}: the first {ndim} must be regular")
        shape.append(level.size)
    if len(levels) < ndim:
        _refuse(array, "no axis below the cells: cells must be arrays (pass a smaller ndim=)")
    count = math.prod(shape)
    lists = np.ones(count, dtype=np.int64)  # how many lists each cell has at this depth
    dims: list[int | None] = []
    extents = []
    for level in levels[ndim - 1 :]:
        if isinstance(level, ak.contents.RegularArray):
            if not level.size:
                _refuse(array, "an axis of fixed extent 0, which no ndarray pattern has")
            extents.append(np.full(count, level.size, dtype=np.int64))
        else:  # every list of a cell at this depth has the cell's extent: it is rectangular
            lengths, owner = np.diff(level.offsets.data), np.repeat(np.arange(count), lists)
            extents.append(np.zeros(count, dtype=np.int64))
            extents[-1][owner] = lengths
            if (wrong := np.flatnonzero(extents[-1][owner] != lengths)).size:
                why = f"rows of different lengths along its axis {len(dims)}"
                _refuse(array, f"cell {owner[wrong[0]]} with {why}: a cell must be rectangular")
        dims.append(level.size if isinstance(level, ak.contents.RegularArray) else None)
        lists = lists * extents[-1]
    items = np.asarray(layout.data).reshape(-1)
    try:
        data_type = NDArrayDType(dtype=items.dtype.name, shape=tuple(dims))
    except ElementDTypeError:
        _refuse(array, f"items of dtype {items.dtype}, none of the element dtypes")
    if dims[0] is None and None not in dims[1:]:  # rows of values: offsets of the first list
        rows = np.asarray(levels[ndim - 1].offsets.data, dtype=np.int64)
        return Columnar(data_type, items.reshape(-1, *dims[1:]), rows, None, tuple(shape))
    table = np.stack(extents, axis=1)
    return Columnar(data_type, items, _offsets(table.prod(axis=1)), table, tuple(shape))


def _list(ak: Any, layout: Any, array: Any) -> Any:
    """A packed layout as a RegularArray or a ListOffsetArray; what no cell is made of refused."""
    if layout.parameter("__array__") in ("string", "bytestring", "char", "byte"):
        _refuse(array, "strings or bytes")
    if isinstance(layout, ak.contents.RegularArray | ak.contents.ListOffsetArray):
        return layout
    if layout.is_option:
        _refuse(array, "missing values (an option type): fill or drop them first (ak.fill_none)")
    if layout.is_record:
        _refuse(array, "records: convert one field at a time")
    if layout.is_union:
        _refuse(array, "a union (cells of different ranks or dtypes)")
    if isinstance(layout, ak.contents.EmptyArray):
        _refuse(array, "no item type (type unknown): give the items a dtype (ak.values_astype)")
    _refuse(array, f"a {type(layout).__name__} layout")


def _refuse(array: Any, what: str) -> NoReturn:
    kind = getattr(array, "type", None) or type(array).__name__
    raise CellError(
        f"from_awkward: the awkward type {kind} has {what}; cells of the 'ndarray' data type "
        "are rectangular arrays of one numeric dtype, each dimension var or of a fixed extent"
    )
