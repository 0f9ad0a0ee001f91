"""nd columns <-> the canonical ``arrow.fixed_shape_tensor`` and ``arrow.variable_shape_tensor``.
Neither has attributes or element nulls: rows with either are refused; null rows stay null."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from nd_arrow import _format as fmt
from nd_arrow import errors
from nd_arrow._column import NdColumn
from nd_arrow._compat import VARIABLE_SHAPE_TENSOR_IN_CPP, extension_keys, import_with_field
from nd_arrow._format import FIXED_SHAPE_TENSOR, VARIABLE_SHAPE_TENSOR, Ints, Mask
from nd_arrow._storage import StorageParts, assemble, numpy_view, primitive_array, valid_rows


def _canonical_rows(column: NdColumn, target: str, same: bool) -> tuple[StorageParts, Any, Ints]:
    """The column's parts, the names every non-null row shares, and the ``(rows, rank)`` sizes
    of those rows; refused where ``target`` cannot hold the rows."""
    p = column._parts
    if p.attrs is not None and any(child.null_count < len(p.attrs) for child in p.attrs.flatten()):
        raise errors.NotSupportedError(
            f"{target} has no attributes, but rows of this column have some; build the column "
            "from arrays without attributes first"
        )
    starts, lengths = np.where(p.valid, p.value_offsets[:-1], 0), np.diff(p.value_offsets)
    inside = fmt.range_positions(starts, np.where(p.valid, lengths, 0))
    if p.values.null_count and numpy_view(p.values.is_null())[inside].any():
        raise errors.NotSupportedError(
            f"{target} elements cannot be null, but this column has null values; fill them "
            "first (for example NdVariable(arr.to_numpy().filled(0), arr.dims))"
        )
    if not len(rows := np.flatnonzero(p.valid)):
        raise errors.NotSupportedError(
            f"{target}: the column has no non-null row to take the dimensions from"
        )
    ranks = np.diff(p.dim_offsets)[rows]
    if (other := ranks != ranks[0]).any():
        raise errors.NotSupportedError(
            f"{target} needs one rank for all rows; row {int(rows[other][0])} has rank "
            f"{int(ranks[other][0])} but row {int(rows[0])} has rank {int(ranks[0])}"
        )
    idx = p.dim_offsets[:-1][rows, None] + np.arange(int(ranks[0]))
    codes, sizes = p.name_codes[idx], p.sizes[idx]
    if (other := (codes != codes[0]).any(axis=1)).any():
        raise errors.NotSupportedError(
            f"{target} needs the same dimension names in all rows; row {int(rows[other][0])} "
            f"differs from row {int(rows[0])}"
        )
    if same and (other := (sizes != sizes[0]).any(axis=1)).any():
        raise errors.NotSupportedError(
            f"{target} needs the same sizes in all rows; row {int(rows[other][0])} has "
            f"{sizes[other][0].tolist()} but row {int(rows[0])} has {sizes[0].tolist()}. Use "
            "to_variable_shape_tensor"
        )
    return p, [p.name_dict[c] for c in codes[0].tolist()], sizes


def to_fixed_shape_tensor(column: NdColumn) -> pa.ExtensionArray:
    """``arrow.fixed_shape_tensor`` of a column whose non-null rows share names and sizes."""
    p, names, sizes = _canonical_rows(column, FIXED_SHAPE_TENSOR, same=True)
    shape = sizes[0].tolist()
    size, n, value_type = math.prod(shape), len(p), p.values.type
    try:
        tensor_type = pa.fixed_shape_tensor(value_type, shape, dim_names=names or None)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, TypeError) as exc:
        raise errors.NotSupportedError(
            f"{FIXED_SHAPE_TENSOR} cannot hold {value_type} values of shape {shape}: {exc}"
        ) from exc
    validity = None
    if p.null_count == 0:
        values = p.values.slice(int(p.value_offsets[0]), n * size)
    else:  # null rows still occupy list_size slots: point them at the first row's values
        starts = np.where(p.valid, p.value_offsets[:-1], p.value_offsets[:-1][p.valid][0])
        picked = (starts[:, None] + np.arange(size)).reshape(-1)
        values = p.values.take(primitive_array(picked, pa.int64()))
        validity = primitive_array(p.valid, pa.bool_()).buffers()[1]
    # from_buffers, not FixedSizeListArray.from_arrays: the latter divides by the list size and
    # crashes the process for size 0 (a shape with a zero axis) on pyarrow 18-26.
    storage_type, nulls = tensor_type.storage_type, p.null_count
    storage = pa.Array.from_buffers(storage_type, n, [validity], nulls, children=[values])
    return pa.ExtensionArray.from_storage(tensor_type, storage)


def from_fixed_shape_tensor(arr: pa.Array | pa.ChunkedArray) -> NdColumn:
    """An nd column of an ``arrow.fixed_shape_tensor`` array (``permutation`` is ignored)."""
    arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    if getattr(arr.type, "extension_name", None) != FIXED_SHAPE_TENSOR:
        raise errors.InvalidArgumentError(f"expected an {FIXED_SHAPE_TENSOR} array, got {arr.type}")
    valid, shape = valid_rows(arr.storage), np.asarray(arr.type.shape, np.int64)
    sizes = np.tile(shape, (int(valid.sum()), 1))
    lengths = np.full(len(sizes), math.prod(shape.tolist()))
    names = arr.type.dim_names
    return _column(FIXED_SHAPE_TENSOR, names, sizes, lengths, arr.storage.flatten(), valid)


def _column(
    target: str, names: Any, sizes: Ints, lengths: Any, values: pa.Array, valid: Mask
) -> NdColumn:
    """The nd column of canonical tensor rows: ``sizes`` and ``lengths`` (value counts) of the
    non-null rows, ``values`` their values back to back, ``names`` the ``dim_names`` or None."""
    r = sizes.shape[1]
    names = list(names or fmt.default_dim_names(r))
    if len(names) != r or len(set(names)) != r or not all(isinstance(x, str) and x for x in names):
        raise errors.InvalidEncodingError(
            f"{target}: dim_names {names} do not name the {r} axes uniquely"
        )
    return NdColumn(assemble(values, lengths, r, sizes.reshape(-1), names, None, ~valid))


def variable_shape_tensor_parts(
    data: pa.Array, shapes: npt.NDArray[Any], names: list[str], valid: Mask
) -> tuple[pa.Field, pa.StructArray]:
    """The tagged field and storage of ``arrow.variable_shape_tensor``, the one writer of the
    canonical layout: ``data`` is the List of the rows' flat values (C order), ``shapes`` the
    ``(rows, rank)`` table of the non-null rows' shapes, ``names`` the ``dim_names`` (none
    written when empty), ``valid`` False for null rows (whose shapes are written as zeros)."""
    if shapes.size and int(shapes.max()) > fmt.INT32_MAX:
        raise errors.NotSupportedError(
            f"{VARIABLE_SHAPE_TENSOR} stores shapes as int32, which {int(shapes.max())} exceeds"
        )
    full = np.zeros((len(valid), shapes.shape[1]), np.int32)
    full[valid] = shapes
    shape_type = pa.list_(pa.field("item", pa.int32()), shapes.shape[1])
    children = [primitive_array(full.ravel(), pa.int32())]
    shape = pa.Array.from_buffers(shape_type, len(valid), [None], children=children)
    mask = None if valid.all() else primitive_array(~valid, pa.bool_())
    storage = pa.StructArray.from_arrays([data, shape], ["data", "shape"], mask=mask)
    meta = json.dumps({"dim_names": names} if names else {}, separators=(",", ":")).encode()
    tag = VARIABLE_SHAPE_TENSOR.encode()
    tags = {fmt.EXTENSION_NAME_KEY: tag, fmt.EXTENSION_METADATA_KEY: meta}
    return pa.field("", storage.type, metadata=tags), storage


def variable_shape_tensor_storage(column: NdColumn) -> tuple[pa.Field, pa.StructArray]:
    """The ``arrow.variable_shape_tensor`` storage of a column and its tagged field (any pyarrow),
    which readers that know the type (pyarrow >= 24, arrow-rs, ...) read as it."""
    p, names, sizes = _canonical_rows(column, VARIABLE_SHAPE_TENSOR, same=False)
    return variable_shape_tensor_parts(column.storage.field(0), sizes, names, p.valid)


def variable_shape_tensor_from_parts(field: pa.Field, storage: pa.StructArray) -> pa.ExtensionArray:
    """The ``arrow.variable_shape_tensor`` array of a tagged field and storage: pyarrow >= 24's C++
    side builds the type through the C data interface (Python has no factory for it through 26)."""
    out = import_with_field(field, storage) if VARIABLE_SHAPE_TENSOR_IN_CPP else storage
    if getattr(out.type, "extension_name", None) != VARIABLE_SHAPE_TENSOR:
        raise errors.NotSupportedError(
            f"pyarrow {pa.__version__} cannot represent {VARIABLE_SHAPE_TENSOR} (pyarrow >= 24 "
            "can); use variable_shape_tensor_storage() to write the tagged storage instead"
        )
    return out


def to_variable_shape_tensor(column: NdColumn) -> pa.ExtensionArray:
    """``arrow.variable_shape_tensor`` of a column whose non-null rows share names and rank
    (pyarrow >= 24; before, :func:`variable_shape_tensor_storage` writes the type)."""
    return variable_shape_tensor_from_parts(*variable_shape_tensor_storage(column))


def from_variable_shape_tensor(
    arr: pa.Array | pa.ChunkedArray, field: pa.Field | None = None
) -> NdColumn:
    """An nd column of ``arrow.variable_shape_tensor``: the extension array (pyarrow >= 24) or
    its storage Struct with the tagged ``field`` (any pyarrow). Of the parameters only
    ``dim_names`` is read: ``permutation(s)`` and ``uniform_shape`` are view hints."""
    arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    meta = getattr(field, "metadata", None) or {}
    if getattr(arr.type, "extension_name", None) == VARIABLE_SHAPE_TENSOR:
        meta, storage = extension_keys(arr.type), arr.storage
    elif meta.get(fmt.EXTENSION_NAME_KEY) == VARIABLE_SHAPE_TENSOR.encode():
        storage = arr
    else:
        raise errors.InvalidArgumentError(
            f"expected an {VARIABLE_SHAPE_TENSOR} array, or its storage with the tagged field; "
            f"got type {arr.type}"
        )
    try:
        params = json.loads(meta.get(fmt.EXTENSION_METADATA_KEY) or b"{}")
    except ValueError as exc:
        raise errors.InvalidEncodingError(f"{VARIABLE_SHAPE_TENSOR}: metadata is not JSON") from exc
    st = storage.type
    names = [f.name for f in st] if pa.types.is_struct(st) else []
    if names != ["data", "shape"] or not pa.types.is_fixed_size_list(st.field(1).type):
        raise errors.InvalidEncodingError(
            f"{VARIABLE_SHAPE_TENSOR} storage must be Struct<data: List, shape: "
            f"FixedSizeList<int32>>; got {st}"
        )
    r = st.field(1).type.list_size
    valid, data, shape = valid_rows(storage), storage.field(0), storage.field(1)
    sizes = numpy_view(shape.values.slice(shape.offset * r, len(shape) * r)).astype(np.int64)
    sizes = sizes.reshape(len(shape), r)[valid]
    if (sizes < 0).any():
        raise errors.ShapeMismatchError(
            f"{VARIABLE_SHAPE_TENSOR}: a negative size in {sizes.tolist()}"
        )
    lengths = np.diff(numpy_view(data.offsets).astype(np.int64))[valid]
    if (bad := np.prod(sizes, axis=1) != lengths).any():
        j = int(np.flatnonzero(bad)[0])
        raise errors.ShapeMismatchError(
            f"{VARIABLE_SHAPE_TENSOR}: row {int(np.flatnonzero(valid)[j])} has "
            f"{int(lengths[j])} values for shape {sizes[j].tolist()}"
        )
    # flatten() merges the struct's validity into its children: null rows' values are left out.
    values = storage.flatten()[0].flatten()
    return _column(VARIABLE_SHAPE_TENSOR, params.get("dim_names"), sizes, lengths, values, valid)
