"""Conversions between nd columns and Arrow's canonical tensor extension types,
``arrow.fixed_shape_tensor`` and ``arrow.variable_shape_tensor``.

Neither type has attributes or element nulls, so rows with either are refused
(:class:`NotSupportedError`: drop the attributes or fill the nulls first); null rows stay null.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from nd_arrow._column import NdColumn, parts_of
from nd_arrow._compat import VARIABLE_SHAPE_TENSOR_IN_CPP, extension_keys, import_with_field
from nd_arrow._format import (
    EXTENSION_METADATA_KEY,
    EXTENSION_NAME_KEY,
    FIXED_SHAPE_TENSOR,
    INT32_MAX,
    VARIABLE_SHAPE_TENSOR,
    default_dim_names,
)
from nd_arrow._ragged import range_positions
from nd_arrow._storage import assemble_parts, repeated_names
from nd_arrow._values import numpy_view, primitive_array
from nd_arrow.errors import (
    InvalidArgumentError,
    InvalidEncodingError,
    NotSupportedError,
    ShapeMismatchError,
)

__all__ = [
    "FIXED_SHAPE_TENSOR",
    "VARIABLE_SHAPE_TENSOR",
    "from_fixed_shape_tensor",
    "from_variable_shape_tensor",
    "to_fixed_shape_tensor",
    "to_variable_shape_tensor",
    "require_variable_shape_tensor",
    "variable_shape_tensor_from_parts",
    "variable_shape_tensor_parts",
    "variable_shape_tensor_storage",
]


def _check_canonical(column: NdColumn, target: str) -> None:
    p = parts_of(column)
    if p.attrs is not None and any(
        p.attrs.field(i).null_count < len(p.attrs) for i in range(p.attrs.type.num_fields)
    ):
        raise NotSupportedError(
            f"{target} has no attributes, but rows of this column have some; build the column "
            "from arrays without attributes first"
        )
    if p.values.null_count:
        starts = np.where(p.valid, p.value_offsets[:-1], 0)
        lengths = np.where(p.valid, np.diff(p.value_offsets), 0)
        nulls = numpy_view(p.values.is_null())
        if nulls[range_positions(starts, lengths)].any():
            raise NotSupportedError(
                f"{target} elements cannot be null, but this column has null values; fill them "
                "first (for example NdArray(arr.to_numpy().filled(0), arr.dims))"
            )


def _shared_dims(column: NdColumn, target: str, same_sizes: bool) -> tuple[list[str], Any]:
    """Names shared by every non-null row, and the (k, rank) sizes block of those rows."""
    p = parts_of(column)
    valid_rows = np.flatnonzero(p.valid)
    if not len(valid_rows):
        raise NotSupportedError(
            f"{target}: the column has no non-null row to take the dimensions from"
        )
    rank = np.diff(p.dim_offsets)[valid_rows]
    r = int(rank[0])
    if (rank != r).any():
        i = int(valid_rows[np.flatnonzero(rank != r)[0]])
        raise NotSupportedError(
            f"{target} needs one rank for all rows; row {i} has rank "
            f"{int(np.diff(p.dim_offsets)[i])} but row {int(valid_rows[0])} has rank {r}"
        )
    idx = p.dim_offsets[:-1][valid_rows, None] + np.arange(r)
    codes = p.name_codes[idx]
    differ = (codes != codes[0]).any(axis=1)
    if differ.any():
        raise NotSupportedError(
            f"{target} needs the same dimension names in all rows; row "
            f"{int(valid_rows[np.flatnonzero(differ)[0]])} differs from row {int(valid_rows[0])}"
        )
    sizes = p.sizes[idx]
    if same_sizes:
        differ = (sizes != sizes[0]).any(axis=1)
        if differ.any():
            raise NotSupportedError(
                f"{target} needs the same sizes in all rows; row "
                f"{int(valid_rows[np.flatnonzero(differ)[0]])} has {sizes[differ][0].tolist()} "
                f"but row {int(valid_rows[0])} has {sizes[0].tolist()}. Use "
                "to_variable_shape_tensor"
            )
    names = [p.name_dict[c] for c in codes[0].tolist()]
    return names, sizes


def to_fixed_shape_tensor(column: NdColumn) -> pa.ExtensionArray:
    """``arrow.fixed_shape_tensor`` of a column whose non-null rows share names and sizes."""
    _check_canonical(column, FIXED_SHAPE_TENSOR)
    names, sizes = _shared_dims(column, FIXED_SHAPE_TENSOR, same_sizes=True)
    p = parts_of(column)
    shape = sizes[0].tolist()
    size = int(np.prod(shape)) if shape else 1
    try:
        tensor_type = pa.fixed_shape_tensor(p.layout.value_type, shape, dim_names=names or None)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, TypeError) as exc:
        raise NotSupportedError(
            f"{FIXED_SHAPE_TENSOR} cannot hold {p.layout.value_type} values of shape {shape}: {exc}"
        ) from exc
    n = len(p)
    if p.null_count == 0:
        start = int(p.value_offsets[0])
        values = p.values.slice(start, n * size)
        mask = None
    else:
        # Null rows still occupy list_size slots: point them at the first row's values.
        first = int(p.value_offsets[:-1][p.valid][0])
        starts = np.where(p.valid, p.value_offsets[:-1], first)
        idx = (starts[:, None] + np.arange(size)).reshape(-1)
        values = p.values.take(pa.array(idx))
        mask = pa.array(~p.valid)
    # from_buffers, not FixedSizeListArray.from_arrays: the latter divides by the list size and
    # crashes the process for size 0 (a shape with a zero axis) on pyarrow 18-26.
    validity = None if mask is None else pa.array(p.valid, pa.bool_()).buffers()[1]
    storage = pa.Array.from_buffers(
        tensor_type.storage_type,
        n,
        [validity],
        null_count=p.null_count,
        children=[values],
    )
    return pa.ExtensionArray.from_storage(tensor_type, storage)


def _combined(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        return pa.concat_arrays(arr.chunks) if arr.num_chunks else pa.array([], arr.type)
    return arr


def _assemble_column(
    values: pa.Array,
    lengths: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
    names: list[str],
    valid: npt.NDArray[np.bool_],
) -> NdColumn:
    """A column from compacted values (null rows own none), per-row sizes (k, r) and names."""
    k = int(valid.sum())
    ranks = np.full(k, len(names), np.int64)
    null_rows = None if k == len(valid) else ~valid
    sizes = sizes.reshape(-1).astype(np.int64)
    parts = assemble_parts(values, lengths, ranks, repeated_names(names, k), sizes, null_rows, None)
    return NdColumn(parts)


def from_fixed_shape_tensor(arr: pa.Array | pa.ChunkedArray) -> NdColumn:
    """An nd column from an ``arrow.fixed_shape_tensor`` array (``permutation`` is ignored)."""
    arr = _combined(arr)
    t = arr.type
    if getattr(t, "extension_name", None) != FIXED_SHAPE_TENSOR:
        raise InvalidArgumentError(f"expected an {FIXED_SHAPE_TENSOR} array, got type {t}")
    shape = [int(s) for s in t.shape]
    names = list(t.dim_names) if t.dim_names else list(default_dim_names(len(shape)))
    if len(names) != len(shape) or len(set(names)) != len(names) or not all(names):
        raise InvalidEncodingError(
            f"{FIXED_SHAPE_TENSOR}: dim_names {names} do not name the {len(shape)} axes of "
            f"shape {shape} uniquely"
        )
    storage = arr.storage
    size = int(np.prod(shape)) if shape else 1
    values = storage.values.slice(storage.offset * size, len(storage) * size)
    valid = (
        numpy_view(storage.is_valid()) if storage.null_count else np.ones(len(storage), np.bool_)
    )
    if not valid.all():
        values = values.filter(pa.array(np.repeat(valid, size)))
    k = int(valid.sum())
    sizes = np.tile(np.asarray(shape, np.int64), (k, 1)).reshape(k, len(shape))
    return _assemble_column(values, np.full(k, size, np.int64), sizes, names, valid)


def variable_shape_tensor_parts(
    data: pa.Array, shapes: npt.NDArray[np.integer], names: list[str], valid: npt.NDArray[np.bool_]
) -> tuple[pa.Field, pa.StructArray]:
    """The tagged field and storage of ``arrow.variable_shape_tensor`` from its parts.

    ``data`` is the List column of the rows' flat values (C order), ``shapes`` the ``(rows,
    rank)`` table of their shapes (the ``shape`` child, one row per row), ``names`` the
    ``dim_names`` (empty: none written) and ``valid`` False for null rows (whose shape rows are
    written as zeros). The one place the canonical layout is written.
    """
    n = len(valid)
    table = np.asarray(shapes, dtype=np.int64)
    r = table.shape[1]
    if names and len(names) != r:
        raise InvalidArgumentError(f"{len(names)} dim_names for shapes of rank {r}")
    if table.size and int(table.max()) > INT32_MAX:
        raise NotSupportedError(
            f"{VARIABLE_SHAPE_TENSOR} stores shapes as int32; a size of {int(table.max())} "
            "does not fit"
        )
    full = np.where(valid[:, None], table, 0).astype(np.int32)
    shape = pa.Array.from_buffers(
        pa.list_(pa.field("item", pa.int32()), r),
        n,
        [None],
        children=[primitive_array(full.reshape(-1), pa.int32())],
    )
    # From numpy buffers, not pa.array: that imports pandas when it is installed (seconds).
    mask = None if valid.all() else primitive_array(~valid, pa.bool_())
    storage = pa.StructArray.from_arrays(
        [data, shape],
        fields=[pa.field("data", data.type), pa.field("shape", shape.type)],
        mask=mask,
    )
    meta: dict[str, Any] = {"dim_names": names} if names else {}
    field = pa.field(
        "",
        storage.type,
        metadata={
            EXTENSION_NAME_KEY: VARIABLE_SHAPE_TENSOR.encode(),
            EXTENSION_METADATA_KEY: json.dumps(meta, separators=(",", ":")).encode(),
        },
    )
    return field, storage


def variable_shape_tensor_storage(column: NdColumn) -> tuple[pa.Field, pa.StructArray]:
    """The ``arrow.variable_shape_tensor`` storage of a column and its tagged field (any pyarrow).

    Put the field and the storage into a table and write it: readers that know the canonical type
    (pyarrow >= 24, arrow-rs, ...) restore it.
    """
    _check_canonical(column, VARIABLE_SHAPE_TENSOR)
    names, sizes = _shared_dims(column, VARIABLE_SHAPE_TENSOR, same_sizes=False)
    p = parts_of(column)
    full = np.zeros((len(p), len(names)), np.int64)
    full[p.valid] = sizes
    return variable_shape_tensor_parts(column.storage.field(0), full, names, p.valid)


def require_variable_shape_tensor() -> None:
    """Raise :class:`NotSupportedError` unless pyarrow can represent the canonical type (>= 24)."""
    if not VARIABLE_SHAPE_TENSOR_IN_CPP:
        raise NotSupportedError(
            f"pyarrow {pa.__version__} cannot represent {VARIABLE_SHAPE_TENSOR} (pyarrow >= 24 "
            "can); use variable_shape_tensor_storage() to write the tagged storage instead"
        )


def variable_shape_tensor_from_parts(field: pa.Field, storage: pa.StructArray) -> pa.ExtensionArray:
    """The ``arrow.variable_shape_tensor`` extension array of a tagged field and storage.

    Needs pyarrow >= 24 (C++ support); older releases raise :class:`NotSupportedError`: write
    the field and storage (e.g. from :func:`variable_shape_tensor_storage`) instead.
    """
    require_variable_shape_tensor()
    # pyarrow has no Python factory for the type (through 26); its C++ side (>= 24) builds it
    # when the tagged field and the storage come in through the C data interface.
    out = import_with_field(field, storage)
    if getattr(out.type, "extension_name", None) != VARIABLE_SHAPE_TENSOR:
        raise NotSupportedError(
            f"pyarrow {pa.__version__} did not build {VARIABLE_SHAPE_TENSOR} from its storage"
        )
    return out


def to_variable_shape_tensor(column: NdColumn) -> pa.ExtensionArray:
    """``arrow.variable_shape_tensor`` of a column whose non-null rows share names and rank.

    Needs pyarrow >= 24 (C++ support); older releases raise :class:`NotSupportedError` and
    :func:`variable_shape_tensor_storage` is the way to write the type.
    """
    require_variable_shape_tensor()
    return variable_shape_tensor_from_parts(*variable_shape_tensor_storage(column))


def from_variable_shape_tensor(
    arr: pa.Array | pa.ChunkedArray, field: pa.Field | None = None
) -> NdColumn:
    """An nd column from ``arrow.variable_shape_tensor``: the extension array (pyarrow >= 24) or
    its storage Struct with the tagged ``field`` (any pyarrow)."""
    storage, params = _variable_shape_storage(_combined(arr), field)
    r = storage.type.field(1).type.list_size
    names = params.get("dim_names") or list(default_dim_names(r))
    if len(names) != r or len(set(names)) != r or not all(isinstance(x, str) and x for x in names):
        raise InvalidEncodingError(
            f"{VARIABLE_SHAPE_TENSOR}: dim_names {names} do not name the {r} axes uniquely"
        )
    valid = (
        numpy_view(storage.is_valid()) if storage.null_count else np.ones(len(storage), np.bool_)
    )
    data = storage.field(0)
    shape = storage.field(1)
    flat_shape = shape.values.slice(shape.offset * r, len(shape) * r)
    sizes = numpy_view(flat_shape).astype(np.int64).reshape(len(shape), r)
    sizes = sizes[valid]
    if (sizes < 0).any():
        raise ShapeMismatchError(f"{VARIABLE_SHAPE_TENSOR}: negative size in {sizes.tolist()}")
    offsets = numpy_view(data.offsets).astype(np.int64)
    lengths = np.diff(offsets)[valid]
    products = np.prod(sizes, axis=1) if r else np.ones(len(sizes), np.int64)
    if (products != lengths).any():
        j = int(np.flatnonzero(products != lengths)[0])
        i = int(np.flatnonzero(valid)[j])
        raise ShapeMismatchError(
            f"{VARIABLE_SHAPE_TENSOR}: row {i} has {int(lengths[j])} values for shape "
            f"{sizes[j].tolist()}"
        )
    values = (
        data.values.take(pa.array(range_positions(offsets[:-1][valid], lengths)))
        if not valid.all()
        else data.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
    )
    return _assemble_column(values, lengths, sizes, list(names), valid)


def _variable_shape_storage(
    arr: pa.Array, field: pa.Field | None
) -> tuple[pa.StructArray, dict[str, Any]]:
    """The storage of an ``arrow.variable_shape_tensor`` array (or of a plain one tagged by
    ``field``) and its parameters, the storage type checked."""
    t = arr.type
    if getattr(t, "extension_name", None) == VARIABLE_SHAPE_TENSOR:
        meta = extension_keys(t)
        storage = arr.storage
    elif field is not None and (field.metadata or {}).get(EXTENSION_NAME_KEY) == (
        VARIABLE_SHAPE_TENSOR.encode()
    ):
        meta = dict(field.metadata or {})
        storage = arr
    else:
        raise InvalidArgumentError(
            f"expected an {VARIABLE_SHAPE_TENSOR} array, or its storage with the tagged field; "
            f"got type {t}"
        )
    # Only dim_names is used: permutation(s) and uniform_shape are view hints, ignored.
    try:
        params = json.loads(meta.get(EXTENSION_METADATA_KEY, b"{}") or b"{}")
    except ValueError as exc:
        raise InvalidEncodingError(f"{VARIABLE_SHAPE_TENSOR}: metadata is not JSON") from exc
    st = storage.type
    if not (
        pa.types.is_struct(st)
        and st.num_fields == 2
        and st.field(0).name == "data"
        and st.field(1).name == "shape"
        and pa.types.is_fixed_size_list(st.field(1).type)
    ):
        raise InvalidEncodingError(
            f"{VARIABLE_SHAPE_TENSOR} storage must be Struct<data: List, shape: "
            f"FixedSizeList<int32>>; got {st}"
        )
    return storage, params
