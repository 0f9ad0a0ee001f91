"""Zarr <-> Arrow: the cells of a zarr ``ndarray`` array as an ``nd_arrow.array`` column or as
``arrow.variable_shape_tensor`` (one row per cell, in C order of the selection), and back.

Needs the extra ``nd-arrow[zarr]``; zarr's side is imported only when a function is called, so
``import nd_arrow`` works without zarr.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from nd_arrow._column import NdColumn, parts_of
from nd_arrow._extension import NdArrayType
from nd_arrow._format import INT32_MAX, MAX_DIM_SIZE, check_dim_names, default_dim_names
from nd_arrow._ragged import offsets_of
from nd_arrow._storage import build_storage, tile_names
from nd_arrow._tensor import (
    from_variable_shape_tensor,
    require_variable_shape_tensor,
    variable_shape_tensor_from_parts,
    variable_shape_tensor_parts,
)
from nd_arrow._values import numpy_to_arrow, numpy_view, primitive_array
from nd_arrow.errors import (
    InvalidArgumentError,
    InvalidDimensionsError,
    NotSupportedError,
    ShapeMismatchError,
)

__all__ = [
    "from_zarr",
    "to_zarr",
    "variable_shape_tensor_to_zarr",
    "zarr_to_variable_shape_tensor",
]

_EXTRA_HINT = "install the extra: pip install 'nd-arrow[zarr]'"


def _engine() -> Any:
    """zarr-ndarray-dtype, whose ``read_columnar`` / ``write_columnar`` move the cells
    (imported on first use)."""
    try:
        import zarr_ndarray_dtype
    except ImportError as exc:
        raise ImportError(f"nd_arrow.from_zarr / to_zarr need zarr: {_EXTRA_HINT}") from exc
    return zarr_ndarray_dtype


class _Pattern(NamedTuple):
    dims: tuple[int | None, ...]  # the shape pattern (None: a variable extent)
    item: np.dtype[Any]

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def text(self) -> str:
        return "[" + ", ".join("null" if d is None else str(d) for d in self.dims) + "]"


def _pattern(array: Any, where: str) -> _Pattern:
    """The shape pattern and item dtype of a zarr ``ndarray`` array."""
    metadata = getattr(array, "metadata", None)
    dtype: Any = getattr(metadata, "data_type", None)
    shape = getattr(dtype, "shape", None)
    if shape is None or not hasattr(dtype, "item_dtype"):
        raise InvalidArgumentError(
            f"{where}: expected a zarr array of the 'ndarray' data type, got {_describe(array)}"
        )
    return _Pattern(tuple(None if d is None else int(d) for d in shape), np.dtype(dtype.item_dtype))


def _describe(array: Any) -> str:
    """What was passed instead of an ``ndarray`` zarr array, and what to do about it."""
    metadata = getattr(array, "metadata", None)
    if metadata is not None and hasattr(metadata, "data_type"):
        return f"a zarr array of the data type {metadata.data_type!r}"
    text = repr(array) if len(repr(array)) <= 60 else repr(array)[:57] + "..."
    cls = type(array)
    kind = (
        cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    )
    if isinstance(array, str | os.PathLike):
        text += f"; open it first: zarr.open_array({os.fspath(array)!r}, mode='r')"
    try:
        _engine()
    except ImportError as exc:
        text += f"; {exc}"
    return f"{kind} {text}"


class _Cells(NamedTuple):
    """The cells of a selection, flat: cell ``i`` is
    ``values[offsets[i]:offsets[i + 1]].reshape(shapes[i])``, in C order of the selection."""

    values: np.ndarray  # flat, the element dtype
    shapes: npt.NDArray[np.int64]  # (cells, ndim): the full shape of every cell
    offsets: npt.NDArray[np.int64]  # item offsets: cells + 1 entries from 0


def _read_cells(array: Any, selection: Any, where: str) -> tuple[_Cells, _Pattern]:
    """Read ``selection`` (either codec) with its items flat, as Arrow lists hold them."""
    pattern = _pattern(array, where)
    if pattern.item.kind == "c":
        raise NotSupportedError(
            f"{where}: the element dtype {pattern.item} is complex, which has no Arrow value "
            "type; store the real and imaginary parts as two arrays"
        )
    try:
        col = _engine().read_columnar(array, selection)
    except ValueError as exc:
        if "plain zarr array" not in str(exc):
            raise
        raise NotSupportedError(f"{where}: {exc}") from exc
    # Arrow's list holds items: rows of [null, d1..dk] values (offsets counting rows) flattened.
    row_items = math.prod(col.values.shape[1:])
    offsets = col.offsets * row_items if row_items != 1 else col.offsets
    return _Cells(col.values.reshape(-1), col.shapes, offsets), pattern


def from_zarr(
    array: Any,
    dims: Sequence[str] | None = None,
    selection: Any = slice(None),
) -> pa.ExtensionArray:
    """The cells ``selection`` of a zarr ``ndarray`` array as an ``nd_arrow.array`` column.

    ``dims`` names the axes of each cell (as many as the pattern has), default
    ``dim_0, ..., dim_k`` (the zarr array's ``dimension_names`` name its own axes, which index
    the rows, so they are not used). ``selection`` is an int, a slice with step 1, ``...`` or a
    tuple of those (one per axis of the zarr array); the cells come in C order of the selection.
    Returns a ``pa.ExtensionArray`` of :class:`NdArrayType` with one non-null row per cell and no
    attributes; unwritten cells are the array's fill cells (empty by default).

    Raises :class:`InvalidDimensionsError` for bad names or an extent beyond UInt32,
    :class:`NotSupportedError` for patterns no installed codec path serves or element dtypes
    Arrow has no type for (complex), and the codec's ValueError for corrupt chunks.
    """
    where = "nd_arrow.from_zarr"
    cells, pattern = _read_cells(array, selection, where)
    rank = pattern.rank
    names = default_dim_names(rank) if dims is None else check_dim_names(dims, rank, where)
    n = cells.shapes.shape[0]
    if n and int(np.max(cells.shapes)) > MAX_DIM_SIZE:
        i = int(np.argmax((cells.shapes > MAX_DIM_SIZE).any(axis=1)))
        raise InvalidDimensionsError(
            f"{where}: cell {i} has the shape {cells.shapes[i].tolist()}, an extent beyond the "
            f"{MAX_DIM_SIZE} a UInt32 dimension size can hold"
        )
    # Offsets, sizes and names built over the whole column: no Python object per cell.
    arrow_values = numpy_to_arrow(cells.values, None, None, where)
    storage = build_storage(
        value_field=pa.field("item", arrow_values.type, nullable=True),
        values=arrow_values,
        value_offsets=cells.offsets,
        names=tile_names(names, n),
        sizes=cells.shapes.reshape(-1),
        dim_offsets=np.arange(n + 1, dtype=np.int64) * rank,
        null_rows=None,
        attrs=None,
    )
    return pa.ExtensionArray.from_storage(NdArrayType(storage.type), storage)


def _row_shapes(column: NdColumn, pattern: _Pattern, where: str) -> npt.NDArray[np.int64]:
    """The ``(rows, rank)`` shape table of the column, checked against ``pattern``.

    Null rows get the empty shape (0 on every variable axis, the fixed extents as given).
    """
    parts = parts_of(column)
    n = len(parts)
    rank = pattern.rank
    valid = parts.valid
    ranks = np.diff(parts.dim_offsets)
    bad = valid & (ranks != rank)
    if bad.any():
        i = int(np.argmax(bad))
        raise ShapeMismatchError(
            f"{where}: row {i} has rank {int(ranks[i])}, but the zarr array's cells have the "
            f"pattern {pattern.text} of rank {rank}"
        )
    empty = np.array([0 if d is None else d for d in pattern.dims], dtype=np.int64)
    shapes = np.tile(empty, (n, 1))
    if valid.any():
        starts = parts.dim_offsets[:-1][valid]
        shapes[valid] = parts.sizes[starts[:, None] + np.arange(rank, dtype=np.int64)]
    for axis, extent in enumerate(pattern.dims):
        if extent is None:
            continue
        wrong = shapes[:, axis] != extent
        if wrong.any():
            i = int(np.argmax(wrong))
            raise ShapeMismatchError(
                f"{where}: row {i} has sizes {shapes[i].tolist()}, but axis {axis} of the zarr "
                f"array's cells is fixed at {extent} (pattern {pattern.text})"
            )
    return shapes


def _kept_values(column: NdColumn, where: str) -> npt.NDArray[Any]:
    """The flat values of the non-null rows, in row order (null rows' values left out)."""
    parts = parts_of(column)
    values = parts.values
    if values.null_count:
        raise NotSupportedError(
            f"{where}: the column has null values inside its arrays; zarr cells cannot hold "
            "nulls. Fill them first (e.g. pyarrow.compute.fill_null on the values)"
        )
    flat = np.asarray(numpy_view(values), dtype=bool if pa.types.is_boolean(values.type) else None)
    lo, hi = int(parts.value_offsets[0]), int(parts.value_offsets[-1])
    if parts.valid.all():
        return flat[lo:hi]
    # Null rows carry no meaning: leave out whatever values they hold.
    keep = np.repeat(parts.valid, np.diff(parts.value_offsets))
    return flat[lo:hi][keep]


def to_zarr(column: Any, array: Any, selection: Any = slice(None)) -> None:
    """Write an ``nd_arrow.array`` column into the cells ``selection`` of a zarr array.

    ``column`` is an :class:`NdColumn`, an ``nd_arrow.array`` extension array (chunked or not)
    or its storage struct; its rules are checked first. Every non-null row must have the rank of
    the zarr array's pattern and its fixed extents (dimension names are not checked: zarr does
    not store them). Null rows are written as empty cells (every variable extent 0); null values
    inside a row are refused. Values must convert to the element dtype without loss.

    The rows fill the selection in C order, through the columnar engine (either codec, any
    rank); the chunks are byte-identical to writing the cells through zarr.
    """
    where = "nd_arrow.to_zarr"
    pattern = _pattern(array, where)
    col = column if isinstance(column, NdColumn) else NdColumn.from_arrow(column)
    shapes = _row_shapes(col, pattern, where)
    flat = _kept_values(col, where)
    offsets = offsets_of(np.prod(shapes, axis=1, dtype=np.int64))
    _engine().write_columnar(array, flat, offsets, selection, shapes=shapes)


def zarr_to_variable_shape_tensor(
    array: Any,
    dims: Sequence[str] | None = None,
    selection: Any = slice(None),
) -> pa.ExtensionArray:
    """The cells ``selection`` of a zarr ``ndarray`` array as ``arrow.variable_shape_tensor``.

    One tensor per cell (C order of the selection), of rank ``len(pattern)``: the ``shape``
    child is the cells' shape table, the ``data`` child their flat values. ``dims`` become the
    type's ``dim_names`` (none without ``dims``). Selections and codecs as for
    :func:`from_zarr`. Needs pyarrow >= 24 (:class:`NotSupportedError` before; on older pyarrow
    ``nd_arrow.variable_shape_tensor_storage(NdColumn.from_arrow(from_zarr(...)))`` gives the
    tagged storage). Extents beyond int32 (the canonical type's shape type) are refused.
    """
    where = "nd_arrow.zarr_to_variable_shape_tensor"
    require_variable_shape_tensor()
    cells, pattern = _read_cells(array, selection, where)
    names = [] if dims is None else list(check_dim_names(dims, pattern.rank, where))
    n = cells.shapes.shape[0]
    if int(cells.offsets[-1]) > INT32_MAX:
        raise NotSupportedError(
            f"{where}: {int(cells.offsets[-1])} values exceed the 2**31 - 1 a List can hold; "
            "convert a smaller selection at a time"
        )
    arrow_values = numpy_to_arrow(cells.values, None, None, where)
    data = pa.ListArray.from_arrays(
        primitive_array(cells.offsets.astype(np.int32), pa.int32()),
        arrow_values,
        type=pa.list_(pa.field("item", arrow_values.type)),
    )
    field, storage = variable_shape_tensor_parts(
        data, cells.shapes, names, np.ones(n, dtype=np.bool_)
    )
    return variable_shape_tensor_from_parts(field, storage)


def variable_shape_tensor_to_zarr(
    tensor: pa.Array | pa.ChunkedArray,
    array: Any,
    selection: Any = slice(None),
    field: pa.Field | None = None,
) -> None:
    """Write ``arrow.variable_shape_tensor`` rows into the cells ``selection`` of a zarr array.

    ``tensor`` is the extension array (pyarrow >= 24) or its storage with the tagged ``field``
    (any pyarrow). Each row's ``shape`` must match the zarr array's pattern (rank and fixed
    extents); null rows become empty cells. The rules and the bytes written are those of
    :func:`to_zarr` (``dim_names`` are not stored: zarr has no place for them).
    """
    to_zarr(from_variable_shape_tensor(tensor, field), array, selection)
