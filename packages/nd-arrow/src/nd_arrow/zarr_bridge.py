"""Zarr <-> Arrow (the extra ``nd-arrow[zarr]``): the cells of ``ndarray`` arrays as columns, one
row per cell in C order of the selection, and back, through zarr-ndarray-dtype's ``Columnar``
(values shared), imported only when called: ``import nd_arrow`` works without zarr."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from nd_arrow import _format as fmt
from nd_arrow import errors
from nd_arrow._column import NdColumn, import_arrow
from nd_arrow._storage import (
    arrow_to_numpy,
    arrow_type_for_dtype,
    assemble,
    numpy_to_arrow,
    numpy_view,
)
from nd_arrow._tensor import (
    from_variable_shape_tensor,
    variable_shape_tensor_from_parts,
    variable_shape_tensor_parts,
)

if TYPE_CHECKING:
    import zarr

    from zarr_ndarray_dtype import Columnar, NDArrayDType

    Arrays = Mapping[str, zarr.Array] | zarr.Group

__all__ = ["from_zarr", "to_zarr", "to_column", "table_from_zarr", "table_to_zarr"]
__all__ += ["variable_shape_tensor_to_zarr", "zarr_to_variable_shape_tensor"]


_EXTRA = "install the extra: pip install 'nd-arrow[zarr]'"


def _data_type(array: Any, where: str) -> NDArrayDType:
    """The data type of an ``ndarray`` zarr array; anything else is refused, naming it."""
    data_type = getattr(getattr(array, "metadata", None), "data_type", None)
    try:
        from zarr_ndarray_dtype import NDArrayDType
    except ImportError:
        hint = f"; nd_arrow.from_zarr / to_zarr need zarr: {_EXTRA}"
    else:
        if isinstance(data_type, NDArrayDType):
            return data_type
        hint = ""
    if data_type is not None:
        given = f"a zarr array of the data type {data_type!r}"
    else:
        cls, text = type(array), repr(array) if len(repr(array)) <= 60 else repr(array)[:57] + "..."
        module = "" if cls.__module__ == "builtins" else cls.__module__ + "."
        given = f"{module}{cls.__qualname__} {text}"
        if isinstance(array, str | os.PathLike):
            given += f"; open it first: zarr.open_array({os.fspath(array)!r}, mode='r')"
    raise errors.InvalidArgumentError(
        f"{where}: expected a zarr array of the 'ndarray' data type, got {given}{hint}"
    )


def _read(array: Any, selection: Any, where: str) -> Columnar:
    """The cells ``selection`` of an ``ndarray`` array (either codec, any rank)."""
    arrow_type_for_dtype(np.dtype(_data_type(array, where).dtype), where)  # complex: refused here
    from zarr_ndarray_dtype import read_columnar

    try:
        return read_columnar(array, selection)
    except ValueError as exc:  # a serializer without columnar access
        if "plain zarr array" not in str(exc):
            raise
        raise errors.NotSupportedError(f"{where}: {exc}") from exc


def to_column(
    columnar: Columnar, dims: Sequence[str] | None = None, *, where: str = "to_column"
) -> NdColumn:
    """The cells of a zarr-ndarray-dtype ``Columnar`` as an nd column, one non-null row per cell
    without attributes; the values are shared, not copied. ``dims`` names the axes of each cell
    (as many as the pattern has), default ``dim_0, ..., dim_k``."""
    shapes = columnar.shapes
    rank = shapes.shape[1]
    names = fmt.check_dim_names(dims, rank, where)
    fmt.check_dim_size(int(np.max(shapes, initial=0)), f"{where}: a cell's shape")
    row_items = math.prod(columnar.values.shape[1:])  # [null, d1..dk]: offsets count rows
    offsets = columnar.offsets * row_items if row_items != 1 else columnar.offsets
    fmt.check_int32(int(offsets[-1]), "values", where, "read a smaller selection at a time")
    values = numpy_to_arrow(columnar.values.reshape(-1), None, None, where)
    return NdColumn(assemble(values, np.diff(offsets), rank, shapes.reshape(-1), names))


def from_zarr(
    array: Any, dims: Sequence[str] | None = None, selection: Any = slice(None)
) -> pa.ExtensionArray:
    """The cells ``selection`` (an int, a step-1 slice, ``...`` or a tuple of those) of a zarr
    ``ndarray`` array as an ``nd_arrow.array`` column, as :func:`to_column` makes it (the zarr
    array's ``dimension_names`` name the axes of the rows, not ``dims``). Complex values are
    :class:`NotSupportedError`; corrupt chunks raise the codec's ValueError."""
    where = "nd_arrow.from_zarr"
    return to_column(_read(array, selection, where), dims, where=where).to_arrow()


def _cells(column: NdColumn, pattern: tuple[int | None, ...], where: str) -> tuple[Any, Any, Any]:
    """Flat values, item offsets and ``(rows, rank)`` shapes of the rows as cells of ``pattern``
    (rank and fixed extents checked); null rows are empty cells (every variable extent 0)."""
    p, rank = column._parts, len(pattern)
    text = "[" + ", ".join("null" if d is None else str(d) for d in pattern) + "]"
    ranks = np.diff(p.dim_offsets)
    if (bad := p.valid & (ranks != rank)).any():
        i = int(np.argmax(bad))
        raise errors.ShapeMismatchError(
            f"{where}: row {i} has rank {int(ranks[i])}, but the zarr array's cells have the "
            f"pattern {text} of rank {rank}"
        )
    shapes = np.tile(np.array([d or 0 for d in pattern], np.int64), (len(p), 1))
    shapes[p.valid] = p.sizes[p.dim_offsets[:-1][p.valid, None] + np.arange(rank)]
    for axis, extent in enumerate(pattern):
        if extent is not None and (wrong := shapes[:, axis] != extent).any():
            i = int(np.argmax(wrong))
            raise errors.ShapeMismatchError(
                f"{where}: row {i} has sizes {shapes[i].tolist()}, but axis {axis} of the zarr "
                f"array's cells is fixed at {extent} (pattern {text})"
            )
    if p.values.null_count:
        raise errors.NotSupportedError(
            f"{where}: the column has null values inside its arrays; zarr cells cannot hold "
            "nulls. Fill them first (e.g. pyarrow.compute.fill_null on the values)"
        )
    lengths = np.diff(p.value_offsets)
    values = numpy_view(p.values)[p.value_offsets[0] : p.value_offsets[-1]]
    if not p.valid.all():  # null rows carry no meaning: leave out whatever values they hold
        values, lengths = values[np.repeat(p.valid, lengths)], np.where(p.valid, lengths, 0)
    return values, fmt.offsets_of(lengths), shapes


def to_zarr(column: Any, array: Any, selection: Any = slice(None)) -> None:
    """Write a column (:class:`NdColumn`, extension array or storage, checked first) into the
    cells ``selection`` of a zarr array, in C order: rows must have the pattern's rank and fixed
    extents (names are not stored), null rows become empty cells, null values are refused, and
    values must convert without loss. The chunks equal those zarr writes for the same cells."""
    where = "nd_arrow.to_zarr"
    pattern = tuple(_data_type(array, where).shape)
    col = column if isinstance(column, NdColumn) else NdColumn.from_arrow(column)
    values, offsets, shapes = _cells(col, pattern, where)
    from zarr_ndarray_dtype import write_columnar

    write_columnar(array, values, offsets, selection, shapes=shapes)


def zarr_to_variable_shape_tensor(
    array: Any, dims: Sequence[str] | None = None, selection: Any = slice(None)
) -> pa.ExtensionArray:
    """The cells ``selection`` as ``arrow.variable_shape_tensor`` (pyarrow >= 24): the cells'
    shape table is the ``shape`` child, ``dims`` the ``dim_names``; extents beyond int32 are
    refused. Older pyarrow: ``variable_shape_tensor_storage`` of :func:`from_zarr`'s column."""
    where = "nd_arrow.zarr_to_variable_shape_tensor"
    cells = _read(array, selection, where)
    column = to_column(cells, dims, where=where)  # (dims checked)
    valid, data = np.ones(len(column), np.bool_), column.storage.field(0)
    parts = variable_shape_tensor_parts(data, cells.shapes, list(dims or ()), valid)
    return variable_shape_tensor_from_parts(*parts)


def variable_shape_tensor_to_zarr(
    tensor: pa.Array | pa.ChunkedArray,
    array: Any,
    selection: Any = slice(None),
    field: pa.Field | None = None,
) -> None:
    """Write ``arrow.variable_shape_tensor`` rows into the cells ``selection`` of a zarr array:
    the extension array (pyarrow >= 24) or its storage with the tagged ``field`` (any pyarrow).
    Rules and bytes as for :func:`to_zarr` (``dim_names`` are not stored)."""
    to_zarr(from_variable_shape_tensor(tensor, field), array, selection)


def _split(
    arrays: Any, where: str, names: Sequence[str] | None = None
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The arrays of a mapping or group (its own, by name), or those ``names`` picks; of them the
    ``ndarray`` ones and the plain ones, which must have the ``ndarray`` arrays' shape."""
    try:
        from zarr_ndarray_dtype import AlignmentError, NDArrayDType
    except ImportError as exc:
        raise errors.NotSupportedError(f"{where} needs zarr: {_EXTRA}") from exc
    members = dict(arrays if isinstance(arrays, Mapping) else sorted(arrays.arrays()))
    if unknown := [n for n in names or () if n not in members]:
        raise errors.InvalidArgumentError(
            f"{where}: no array named {unknown} among {list(members)}; name the arrays to "
            "write by the columns"
        )
    members = members if names is None else {n: members[n] for n in names}
    nd = {k: a for k, a in members.items() if isinstance(a.metadata.data_type, NDArrayDType)}
    plain = {k: a for k, a in members.items() if k not in nd}
    shape = tuple(next(iter(nd.values())).shape) if nd else ()
    if other := {k: tuple(a.shape) for k, a in plain.items() if tuple(a.shape) != shape}:
        raise AlignmentError(
            f"{where}: the 'ndarray' arrays have the shape {shape}, but {other} (name: shape); "
            "the arrays of one table have one shape: leave the others out"
        )
    return members, nd, plain


def table_from_zarr(arrays: Arrays, selection: Any = ..., *, explode: bool = False) -> pa.Table:
    """The cells ``selection`` of row-aligned arrays (a mapping of names to zarr arrays, or a
    group's own arrays) as one table, read by ``zarr_ndarray_dtype.read_aligned``, which refuses
    misaligned cells (``AlignmentError``). One row per cell in C order: a column per array, by
    name, ``nd_arrow.array`` (values shared, as :func:`to_column` makes it) or primitive for a
    plain array. ``explode=True``: one row per leading row, ``cell`` (int64, the flat index in
    the selection) and per array that row's values (primitive for ``[null]``,
    ``fixed_size_list<T>[d]`` for ``[null, d]``, nested for more; plain values repeated)."""
    where = "nd_arrow.table_from_zarr"
    members, nd, plain = _split(arrays, where)
    if explode and "cell" in members:
        raise errors.InvalidArgumentError(
            f"{where}: an array is named 'cell', the exploded table's column of cell indices; "
            "rename it, or read it with explode=False"
        )
    from zarr_ndarray_dtype import read_aligned

    cols = read_aligned(nd, selection)
    counts = np.diff(next(iter(cols.values())).offsets)
    out = {"cell": numpy_to_arrow(fmt.range_ids(counts), None)} if explode else {}
    for name in members:
        if name in plain:  # one value per cell
            flat = np.asarray(plain[name][selection]).reshape(-1)
            out[name] = numpy_to_arrow(np.repeat(flat, counts) if explode else flat, None)
        elif not explode:
            out[name] = to_column(cols[name], where=where).to_arrow()
        else:  # rows of (d1, ..., dk): nested fixed-size lists over the flat values
            values = cols[name].values
            out[name] = numpy_to_arrow(values.reshape(-1), None, None, where)
            for extent in reversed(values.shape[1:]):
                out[name] = pa.FixedSizeListArray.from_arrays(out[name], extent)
    return pa.table(out)


def table_to_zarr(table: Any, arrays: Arrays, selection: Any = ...) -> None:
    """Write a table as :func:`table_from_zarr` reads it (not exploded) into ``selection`` of the
    arrays its columns name (others untouched; a column with no array refused). Every column is
    checked first (rows aligned, values without nulls or loss), then the ``nd_arrow.array``
    columns are written together by ``zarr_ndarray_dtype.write_aligned``, then the plain ones by
    zarr."""
    where = "nd_arrow.table_to_zarr"
    table = import_arrow(table, where, table=True)
    _, nd, plain = _split(arrays, where, table.column_names)
    from zarr_ndarray_dtype import AlignmentError, write_aligned

    values, offsets, writes = {}, None, []
    for name, column in zip(table.column_names, table.columns, strict=True):
        if name in plain:  # checked now, written by zarr after the aligned write
            flat, mask = arrow_to_numpy(column.combine_chunks())
            writes.append((plain[name], converted := flat.astype(plain[name].dtype)))
            lossy = "null values" if mask is not None else "values that do not convert without loss"
            nan = flat.dtype.kind == converted.dtype.kind == "f"
            if mask is not None or not np.array_equal(converted, flat, equal_nan=nan):
                raise errors.InvalidArgumentError(
                    f"{where}: column {name!r} has {lossy} to the array's dtype {converted.dtype}; "
                    "fill or convert them first"
                )
            continue
        dtype = nd[name].metadata.data_type
        flat, _, shapes = _cells(NdColumn.from_arrow(column), tuple(dtype.shape), where)
        if not dtype.pattern.is_leading_variable:  # refused by write_aligned, naming the array
            values[name] = flat
            continue
        rows = fmt.offsets_of(shapes[:, 0])
        values[name] = flat.reshape(int(rows[-1]), *dtype.shape[1:])
        if offsets is not None and (differ := rows != offsets).any():
            i, first = int(np.argmax(differ)) - 1, next(iter(values))
            raise AlignmentError(
                f"{where}: row {i} has {int(np.diff(rows)[i])} rows in column {name!r} but "
                f"{int(np.diff(offsets)[i])} in {first!r}; the cells of one table row align"
            )
        offsets = rows
    write_aligned({k: nd[k] for k in values}, values, offsets, selection)
    for array, flat in writes:
        array[selection] = flat.reshape(np.broadcast_to(0, array.shape)[selection].shape)
