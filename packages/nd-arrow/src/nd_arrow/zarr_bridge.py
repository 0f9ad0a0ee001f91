"""Zarr <-> Arrow: a 1-D zarr array of ragged ``ndarray`` cells as an ``nd_arrow.array`` column.

Needs the extra ``nd-arrow[zarr]`` (zarr and zarr-vlen-ndarray); this module imports them only
when a function is called, so ``import nd_arrow`` keeps working without zarr.

The zarr array holds one cell per row, of the ``ndarray`` data type with the pattern
``[null, d1, ..., dk]`` served by the ``vlen-ndarray`` codec. Each cell becomes one row of rank
``k + 1`` with sizes ``(n, d1, ..., dk)``. Both directions go through the columnar path of
``zarr_vlen_ndarray`` (flat values plus offsets), so no Python object is created per cell: the
row offsets, sizes and names are built with numpy over the whole column.

Dimension names: the caller names the ``k + 1`` axes of every cell with ``dims``. Without
``dims`` they are nd-arrow's defaults ``dim_0, ..., dim_k``. The zarr array's own
``dimension_names`` are not used: they name the array's axis, which is the row index of the
column, not an axis of the cells.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from nd_arrow._format import MAX_DIM_SIZE, check_dim_names, default_dim_names
from nd_arrow._storage import build_storage, tile_names
from nd_arrow._values import numpy_to_arrow, numpy_view
from nd_arrow.column import NdColumn, parts_of
from nd_arrow.errors import (
    InvalidArgumentError,
    InvalidDimensionsError,
    NotSupportedError,
    ShapeMismatchError,
)
from nd_arrow.extension import NdArrayType

__all__ = ["from_zarr", "to_zarr"]

_EXTRA_HINT = "install the extra: pip install 'nd-arrow[zarr]'"


def _columnar() -> Any:
    """The columnar module of zarr-vlen-ndarray (imported on first use)."""
    try:
        from zarr_vlen_ndarray import columnar
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            f"nd_arrow.from_zarr / to_zarr need zarr and zarr-vlen-ndarray: {_EXTRA_HINT}"
        ) from exc
    return columnar


def _pattern(array: Any, where: str) -> tuple[tuple[int, ...], np.dtype[Any]]:
    """The fixed extents ``(d1, ..., dk)`` and the item dtype of a zarr ``ndarray`` array."""
    metadata = getattr(getattr(array, "_async_array", array), "metadata", None)
    dtype: Any = getattr(metadata, "data_type", None)
    shape = getattr(dtype, "shape", None)
    if shape is None or not hasattr(dtype, "item_dtype"):
        raise InvalidArgumentError(
            f"{where}: expected a zarr array of the 'ndarray' data type, got {dtype!r}"
        )
    if not shape or shape[0] is not None or any(d is None for d in shape[1:]):
        raise NotSupportedError(
            f"{where}: the zarr array's cells have the pattern {list(shape)}; only "
            "[null, d1, ..., dk] (one leading variable axis) is supported"
        )
    return tuple(int(d) for d in shape[1:]), np.dtype(dtype.item_dtype)


def _pattern_text(fixed: tuple[int, ...]) -> str:
    return "[" + ", ".join(["null", *map(str, fixed)]) + "]"


def from_zarr(
    array: Any,
    dims: Sequence[str] | None = None,
    selection: Any = slice(None),
) -> pa.ExtensionArray:
    """The cells ``selection`` of a 1-D zarr ``ndarray`` array as an ``nd_arrow.array`` column.

    ``dims`` names the ``k + 1`` axes of each cell (pattern ``[null, d1, ..., dk]``), default
    ``dim_0, ..., dim_k``. ``selection`` is a slice with step 1 or an int. Returns a
    ``pa.ExtensionArray`` of :class:`NdArrayType` with one non-null row per cell and no
    attributes; unwritten cells are the array's fill cells (empty by default).

    Raises :class:`InvalidDimensionsError` for bad names or a leading extent beyond UInt32,
    :class:`NotSupportedError` for patterns other than ``[null, d1, ..., dk]`` or element dtypes
    Arrow has no type for (complex), and the codec's ValueError for corrupt chunks.
    """
    where = "nd_arrow.from_zarr"
    fixed, item = _pattern(array, where)
    rank = len(fixed) + 1
    names = default_dim_names(rank) if dims is None else check_dim_names(dims, rank, where)
    values, offsets = _columnar().read_columnar(array, selection)
    n = len(offsets) - 1
    rows = np.diff(offsets)
    if n and int(np.max(rows)) > MAX_DIM_SIZE:
        i = int(np.argmax(rows > MAX_DIM_SIZE))
        raise InvalidDimensionsError(
            f"{where}: cell {i} has {int(rows[i])} rows, more than the {MAX_DIM_SIZE} a UInt32 "
            "dimension size can hold"
        )
    if item.kind == "c":
        raise NotSupportedError(
            f"{where}: the element dtype {item} is complex, which has no Arrow value type; "
            "store the real and imaginary parts as two arrays"
        )
    sizes = np.empty((n, rank), dtype=np.int64)
    sizes[:, 0] = rows
    sizes[:, 1:] = fixed
    inner = int(np.prod(fixed, dtype=np.int64))
    flat = values.reshape(-1)
    arrow_values = numpy_to_arrow(flat, None, None, where)
    storage = build_storage(
        value_field=pa.field("item", arrow_values.type, nullable=True),
        values=arrow_values,
        value_offsets=offsets * inner,
        names=tile_names(names, n),
        sizes=sizes.reshape(-1),
        dim_offsets=np.arange(n + 1, dtype=np.int64) * rank,
        null_rows=None,
        attrs=None,
    )
    return pa.ExtensionArray.from_storage(NdArrayType(storage.type), storage)


def _flat_values(column: NdColumn, where: str) -> npt.NDArray[Any]:
    values = parts_of(column).values
    if values.null_count:
        raise NotSupportedError(
            f"{where}: the column has null values inside its arrays; zarr cells cannot hold "
            "nulls. Fill them first (e.g. pyarrow.compute.fill_null on the values)"
        )
    if pa.types.is_boolean(values.type):
        return np.asarray(numpy_view(values), dtype=bool)
    return np.asarray(numpy_view(values))


def to_zarr(column: Any, array: Any, selection: Any = slice(None)) -> None:
    """Write an ``nd_arrow.array`` column into the cells ``selection`` of a 1-D zarr array.

    ``column`` is an :class:`NdColumn`, an ``nd_arrow.array`` extension array (chunked or not)
    or its storage struct; its rules are checked first. Every non-null row must have rank
    ``k + 1`` and sizes ``(n, d1, ..., dk)`` matching the zarr array's pattern ``[null, d1,
    ..., dk]`` (dimension names are not checked: zarr does not store them). Null rows are
    written as empty cells, as ``array[i] = None`` does; null values inside a row are refused.
    Values must convert to the element dtype without loss. Writes through
    ``zarr_vlen_ndarray.write_columnar``, so the chunks are byte-identical to writing the cells
    one by one.
    """
    where = "nd_arrow.to_zarr"
    fixed, _ = _pattern(array, where)
    col = column if isinstance(column, NdColumn) else NdColumn.from_arrow(column)
    parts = parts_of(col)
    n = len(parts)
    rank = len(fixed) + 1
    valid = parts.valid
    ranks = np.diff(parts.dim_offsets)
    bad = valid & (ranks != rank)
    if bad.any():
        i = int(np.argmax(bad))
        raise ShapeMismatchError(
            f"{where}: row {i} has rank {int(ranks[i])}, but the zarr array's cells have the "
            f"pattern {_pattern_text(fixed)} of rank {rank}"
        )
    starts = np.where(valid, parts.dim_offsets[:-1], 0)
    rows = np.zeros(n, dtype=np.int64)
    if valid.any():
        lead = parts.sizes[starts[valid]]
        rows[valid] = lead
        for axis, extent in enumerate(fixed, start=1):
            got = parts.sizes[starts + axis][valid] if n else np.zeros(0, np.int64)
            wrong = got != extent
            if wrong.any():
                i = int(np.flatnonzero(valid)[int(np.argmax(wrong))])
                shape = parts.sizes[starts[i] : starts[i] + rank].tolist()
                raise ShapeMismatchError(
                    f"{where}: row {i} has sizes {shape}, but axis {axis} of the zarr array's "
                    f"cells is fixed at {extent} (pattern {_pattern_text(fixed)})"
                )
    flat = _flat_values(col, where)
    lengths = np.diff(parts.value_offsets)
    if valid.all():
        lo, hi = int(parts.value_offsets[0]), int(parts.value_offsets[-1])
        flat = flat[lo:hi]
    else:
        # Null rows carry no meaning: leave out whatever values they hold.
        keep_rows = np.repeat(valid, lengths)
        lo = int(parts.value_offsets[0])
        flat = flat[lo : lo + keep_rows.size][keep_rows]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(rows, out=offsets[1:])
    values = flat.reshape(-1, *fixed) if flat.size else flat.reshape(0, *fixed)
    _columnar().write_columnar(array, values, offsets, selection)
