"""The Arrow storage layout of ``nd_arrow.array``: building it, and checking it vectorized.

Storage of one column (FORMAT.md, "Storage layout")::

    Struct {
      values:    List<item: T>            (non-nullable child; nullable items)
      dim_names: List<item: Utf8 not null> (non-nullable child)
      dim_sizes: List<item: UInt32 not null> (non-nullable child)
      attrs:     Struct {key: any, ...}    (optional; non-nullable child; nullable members)
    }

Writers produce exactly this. Readers also accept other list item names, nullable children and
items, LargeList / ListView children, LargeUtf8 / Utf8View names and a zero-field ``attrs``.
All row rules are checked over whole arrays with numpy; the first offending row is reported.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from nd_arrow._format import (
    ATTRS_FIELD,
    DIM_NAMES_FIELD,
    DIM_SIZES_FIELD,
    INT32_MAX,
    ITEM_FIELD,
    VALUES_FIELD,
    size_products,
)
from nd_arrow._ragged import offsets_of, range_ids, range_positions
from nd_arrow._values import numpy_view, primitive_array
from nd_arrow.errors import (
    InvalidArgumentError,
    InvalidDimensionsError,
    InvalidEncodingError,
    ShapeMismatchError,
)

__all__ = [
    "RowShape",
    "StorageLayout",
    "StorageParts",
    "assemble_parts",
    "build_storage",
    "parse_storage_type",
    "row_shape",
    "storage_type",
    "uniform_rank",
    "validate_storage",
]

_INT64_MAX = 2**63 - 1

NAMES_TYPE = pa.list_(pa.field(ITEM_FIELD, pa.string(), nullable=False))
SIZES_TYPE = pa.list_(pa.field(ITEM_FIELD, pa.uint32(), nullable=False))


def storage_type(
    value_type: pa.DataType, attr_fields: Sequence[pa.Field] = (), *, values_nullable: bool = True
) -> pa.StructType:
    """The storage struct type written for a value type and attribute fields."""
    fields = [
        pa.field(
            VALUES_FIELD,
            pa.list_(pa.field(ITEM_FIELD, value_type, nullable=values_nullable)),
            nullable=False,
        ),
        pa.field(DIM_NAMES_FIELD, NAMES_TYPE, nullable=False),
        pa.field(DIM_SIZES_FIELD, SIZES_TYPE, nullable=False),
    ]
    if attr_fields:
        attrs = [pa.field(f.name, f.type, nullable=True, metadata=f.metadata) for f in attr_fields]
        fields.append(pa.field(ATTRS_FIELD, pa.struct(attrs), nullable=False))
    return pa.struct(fields)


@dataclass(frozen=True)
class StorageLayout:
    """What a storage type says: the values item field and the attribute fields."""

    value_field: pa.Field
    attr_fields: tuple[pa.Field, ...]

    @property
    def value_type(self) -> pa.DataType:
        return self.value_field.type


def _is_list_like(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_list_view(t)
        or pa.types.is_large_list_view(t)
    )


def _is_string_like(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t))


def parse_storage_type(t: pa.DataType) -> StorageLayout:
    """Check a storage type against the layout (:class:`InvalidEncodingError` if it breaks it)."""
    if not pa.types.is_struct(t):
        raise InvalidEncodingError(
            f"nd_arrow.array storage must be a Struct of values, dim_names, dim_sizes[, attrs]; "
            f"got {t} (FORMAT 3/1)"
        )
    names = [t.field(i).name for i in range(t.num_fields)]
    expected = [VALUES_FIELD, DIM_NAMES_FIELD, DIM_SIZES_FIELD]
    if names[:3] != expected or len(names) > 4 or (len(names) == 4 and names[3] != ATTRS_FIELD):
        raise InvalidEncodingError(
            f"nd_arrow.array storage children are {names}; the layout requires exactly "
            f"{expected} in this order, optionally followed by {ATTRS_FIELD!r} (FORMAT 3/1)"
        )
    values, dim_names, dim_sizes = (t.field(i) for i in range(3))
    for f in (values, dim_names, dim_sizes):
        if not _is_list_like(f.type):
            raise InvalidEncodingError(
                f"nd_arrow.array storage child {f.name!r} has type {f.type}; it must be a List "
                "(FORMAT 3/2)"
            )
    if not _is_string_like(dim_names.type.value_type):
        raise InvalidEncodingError(
            f"nd_arrow.array storage child 'dim_names' has items of type "
            f"{dim_names.type.value_type}; they must be Utf8 (FORMAT 3/2)"
        )
    if dim_sizes.type.value_type != pa.uint32():
        raise InvalidEncodingError(
            f"nd_arrow.array storage child 'dim_sizes' has items of type "
            f"{dim_sizes.type.value_type}; they must be UInt32 (FORMAT 3/2)"
        )
    attr_fields: tuple[pa.Field, ...] = ()
    if len(names) == 4:
        attrs_t = t.field(3).type
        if not pa.types.is_struct(attrs_t):
            raise InvalidEncodingError(
                f"nd_arrow.array storage child 'attrs' has type {attrs_t}; it must be a Struct "
                "(FORMAT 3/2)"
            )
        attr_fields = tuple(attrs_t.field(i) for i in range(attrs_t.num_fields))
        keys = [f.name for f in attr_fields]
        if len(set(keys)) != len(keys):
            dup = next(k for k in keys if keys.count(k) > 1)
            raise InvalidEncodingError(
                f"nd_arrow.array storage child 'attrs' has the key {dup!r} twice; keys are unique "
                "(FORMAT 6/1)"
            )
    return StorageLayout(values.type.value_field, attr_fields)


@dataclass(frozen=True)
class StorageParts:
    """A validated storage array taken apart into numpy offsets and flat Arrow children."""

    storage: pa.StructArray
    layout: StorageLayout
    valid: npt.NDArray[np.bool_]  # per row: False for a null row
    values: pa.Array  # flat values child (not sliced to the rows)
    value_offsets: npt.NDArray[np.int64]  # len n+1, into ``values``
    dim_offsets: npt.NDArray[np.int64]  # len n+1, into ``sizes`` and ``name_codes``
    sizes: npt.NDArray[np.int64]  # flat dim sizes
    name_codes: npt.NDArray[np.int64]  # flat indices into ``name_dict``
    name_dict: list[str]
    attrs: pa.StructArray | None  # sliced to the rows; None without attributes
    # The shape every row shares (see row_shape), None otherwise.
    row_shape: RowShape | None = None

    def __len__(self) -> int:
        return len(self.valid)

    @property
    def null_count(self) -> int:
        return int(len(self.valid) - np.count_nonzero(self.valid))


class RowShape(NamedTuple):
    """The shape all rows of a column share: ``(64, 64)`` is ``RowShape(64, (64,))``, rows of
    (n, 2) are ``RowShape(None, (2,))``."""

    first: int | None  # the first size, None where it varies
    inner: tuple[int, ...]  # the other sizes

    @property
    def product(self) -> int | None:
        """Values per row, None where the first size varies."""
        return None if self.first is None else self.first * math.prod(self.inner)

    @property
    def nonzero_product(self) -> int | None:
        """The product of the non-zero sizes (the one FORMAT 4/4 bounds), None as ``product``."""
        if self.first is None:
            return None
        return max(self.first, 1) * math.prod(max(s, 1) for s in self.inner)


def uniform_rank(dim_offsets: npt.NDArray[np.int64], valid: npt.NDArray[np.bool_]) -> int | None:
    """The rank of every row when all rows are valid and laid out back to back (row i's
    dimensions start at ``dim_offsets[0] + i * rank``); None otherwise and for zero rows."""
    n = len(valid)
    if n == 0 or not valid.all():
        return None
    off0 = int(dim_offsets[0])
    r, rest = divmod(int(dim_offsets[-1]) - off0, n)
    if rest or r < 0 or not np.array_equal(dim_offsets, off0 + r * np.arange(n + 1)):
        return None
    return r


def row_shape(
    sizes: npt.NDArray[np.int64], dim_offsets: npt.NDArray[np.int64], rank: int | None
) -> RowShape | None:
    """The shape every row shares (see :class:`RowShape`), given the :func:`uniform_rank` of the
    rows; None without one, for rank 0, or where sizes after the first differ."""
    if not rank:
        return None
    n = len(dim_offsets) - 1
    off0 = int(dim_offsets[0])
    block = sizes[off0 : off0 + n * rank].reshape(n, rank)
    first = block[0].tolist()
    # Column by column: a compare broadcast over short rows is many times slower.
    if not all((block[:, j] == first[j]).all() for j in range(1, rank)):
        return None
    return RowShape(first[0] if (block[:, 0] == first[0]).all() else None, tuple(first[1:]))


def _list_offsets(arr: pa.Array, name: str, where: str) -> tuple[pa.Array, npt.NDArray[np.int64]]:
    """(flat child, int64 offsets) of a List/LargeList array; ListViews are cast to List first."""
    t = arr.type
    if pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        # Compact the views into one flat child (casting ListView to List is broken in some
        # pyarrow releases); null views contribute nothing.
        lengths = numpy_view(arr.sizes).astype(np.int64)
        if arr.null_count:
            lengths[numpy_view(arr.is_null())] = 0
        return pc.list_flatten(arr), offsets_of(lengths)
    offsets = numpy_view(arr.offsets).astype(np.int64, copy=False)
    child = arr.values
    if len(offsets) and (int(np.min(offsets)) < 0 or int(np.max(offsets)) > len(child)):
        raise InvalidEncodingError(
            f"{where}: offsets of {name!r} point outside its {len(child)} items (FORMAT 4/6)"
        )
    return child, offsets


def _first(mask: npt.NDArray[np.bool_]) -> int:
    return int(np.flatnonzero(mask)[0])


def _check_item_nulls(
    child: pa.Array,
    offsets: npt.NDArray[np.int64],
    valid: npt.NDArray[np.bool_],
    name: str,
    where: str,
) -> None:
    if child.null_count == 0:
        return
    null_pos = np.flatnonzero(numpy_view(child.is_null()))
    rows = np.searchsorted(offsets, null_pos, side="right") - 1
    inside = (rows >= 0) & (rows < len(valid))
    rows = rows[inside]
    bad = rows[valid[rows] & (null_pos[inside] < offsets[rows + 1])]
    if len(bad):
        raise InvalidEncodingError(
            f"{where}: row {int(bad[0])} has a null item in {name!r}; dimension names and sizes "
            "are never null (FORMAT 4/2)"
        )


def validate_storage(
    storage: pa.Array, where: str = "nd column", layout: StorageLayout | None = None
) -> StorageParts:
    """Check every row rule of a storage array (vectorized) and return its parts.

    Null rows are not checked: their contents carry no meaning. ``layout`` is the parsed storage
    type when the caller has it (an :class:`NdArrayType`). What all rows share (one rank, names,
    shape: the common case) is found first and checked once.
    """
    if isinstance(storage, pa.ChunkedArray):
        storage = (
            pa.concat_arrays(storage.chunks) if storage.num_chunks else pa.array([], storage.type)
        )
    if layout is None:
        layout = parse_storage_type(storage.type)
    n = len(storage)
    all_valid = storage.null_count == 0
    valid = np.ones(n, np.bool_) if all_valid else numpy_view(storage.is_valid())

    children = [storage.field(i) for i in range(3)]
    for child, name in zip(children, (VALUES_FIELD, DIM_NAMES_FIELD, DIM_SIZES_FIELD), strict=True):
        if child.null_count:
            bad = valid & numpy_view(child.is_null())
            if bad.any():
                rule = "4/5" if name == VALUES_FIELD else "4/2"
                raise InvalidEncodingError(
                    f"{where}: row {_first(bad)} is not null but its {name!r} list is null; "
                    f"only whole rows may be null (FORMAT {rule})"
                )
    values, value_offsets = _list_offsets(children[0], VALUES_FIELD, where)
    names, name_offsets = _list_offsets(children[1], DIM_NAMES_FIELD, where)
    sizes_arr, dim_offsets = _list_offsets(children[2], DIM_SIZES_FIELD, where)
    _check_item_nulls(names, name_offsets, valid, DIM_NAMES_FIELD, where)
    _check_item_nulls(sizes_arr, dim_offsets, valid, DIM_SIZES_FIELD, where)

    rank = np.diff(dim_offsets) if all_valid else np.where(valid, np.diff(dim_offsets), 0)
    r = uniform_rank(dim_offsets, valid)
    # Names laid out like the sizes (as written: one set of offsets) and one rank for all rows
    # leave nothing to check here.
    same_layout = np.array_equal(name_offsets, dim_offsets)
    if r is None or not same_layout:
        n_names = np.diff(name_offsets) if all_valid else np.where(valid, np.diff(name_offsets), 0)
        if np.any(n_names < 0) or np.any(rank < 0):
            raise InvalidEncodingError(f"{where}: dimension list offsets decrease (FORMAT 4/6)")
        bad = n_names != rank
        if bad.any():
            i = _first(bad)
            raise InvalidDimensionsError(
                f"{where}: row {i} has {int(n_names[i])} dimension names but {int(rank[i])} "
                "sizes; dim_names and dim_sizes must have one entry per axis (FORMAT 4/1)"
            )

    sizes = numpy_view(sizes_arr).astype(np.int64, copy=False)
    starts = dim_offsets[:-1] if all_valid else np.where(valid, dim_offsets[:-1], 0)
    shape0 = row_shape(sizes, dim_offsets, r)
    exact = None if shape0 is None else shape0.product
    if shape0 is not None and exact is not None:
        # Every row has one shape (found once, kept in the parts for decoding): one product.
        beyond = int(shape0.nonzero_product or 0) > _INT64_MAX
        products = np.full(n, -1 if beyond else exact, np.int64)
        overflow = np.full(n, beyond, np.bool_)
    else:
        products, overflow = size_products(sizes, starts, starts + rank)

    def row_sizes(i: int) -> list[int]:
        return sizes[starts[i] : starts[i] + rank[i]].tolist()  # type: ignore[no-any-return]

    if overflow.any():
        i = _first(overflow)
        raise InvalidDimensionsError(
            f"{where}: row {i} has dimension sizes {row_sizes(i)} whose non-zero sizes multiply "
            "past int64; no array has that shape (FORMAT 4/4)"
        )
    lengths = np.diff(value_offsets)
    bad = lengths != products if all_valid else valid & (lengths != products)
    if bad.any():
        i = _first(bad)
        raise ShapeMismatchError(
            f"{where}: row {i} has {int(lengths[i])} values but dimension sizes {row_sizes(i)} "
            f"(product {int(products[i])}); the number of values must equal the product of the "
            "sizes (1 for rank 0) (FORMAT 4/4)"
        )

    # Names: a dictionary of distinct names, then non-empty and unique per row.
    if pa.types.is_string_view(names.type):
        names = names.cast(pa.string())
    uniform = _uniform_names(names, int(name_offsets[0]), n, r) if same_layout else None
    if uniform is not None:
        # Every row carries the same names (the common case): check them once.
        _check_one_row(uniform, where)
        name_codes = np.zeros(len(names), np.int64)
        k, off0 = len(uniform), int(name_offsets[0])
        codes = name_codes[off0 : off0 + n * k].reshape(n, k)
        for j in range(1, k):  # column by column; column 0 is code 0
            codes[:, j] = j
        name_dict: list[Any] = list(uniform)
    else:
        name_codes, name_dict = _row_names(names, name_offsets, valid, rank, where)
    if not same_layout:
        name_codes = _align_names(name_codes, name_offsets, dim_offsets, valid, rank)
    dims = _Dims(dim_offsets, sizes, name_codes, name_dict)
    return _parts(storage, layout, valid, values, value_offsets, dims, shape0)


def _row_names(
    names: pa.Array,
    name_offsets: npt.NDArray[np.int64],
    valid: npt.NDArray[np.bool_],
    rank: npt.NDArray[np.int64],
    where: str,
) -> tuple[npt.NDArray[np.int64], list[Any]]:
    """Dictionary codes of every name and the distinct names; each row's names checked."""
    pos = range_positions(np.where(valid, name_offsets[:-1], 0), rank)
    if len(names):
        encoded = pc.dictionary_encode(names)
        all_codes = numpy_view(encoded.indices)
        name_dict = encoded.dictionary.to_pylist()
        name_len = numpy_view(pc.binary_length(encoded.dictionary))
    else:
        all_codes = np.zeros(0, np.int64)
        name_dict = []
        name_len = np.zeros(0, np.int64)
    name_codes = np.asarray(all_codes, dtype=np.int64)
    if len(pos):
        codes = name_codes[pos]
        empty = name_len[codes] == 0
        if empty.any():
            i = int(range_ids(rank)[_first(empty)])
            raise InvalidDimensionsError(
                f"{where}: row {i} has an empty dimension name; names must not be empty "
                "(FORMAT 4/3)"
            )
        _check_unique(codes, rank, name_dict, where)
    return name_codes, name_dict


def _uniform_names(names: pa.Array, off0: int, n: int, rank: int | None) -> tuple[str, ...] | None:
    """The names of row 0 when every row has exactly the same names (compared as raw bytes),
    given that rows are of one ``rank`` with their names back to back from ``off0``."""
    if rank is None:
        return None
    if rank == 0:
        return ()
    if pa.types.is_string(names.type):
        offset_type: type[np.integer[Any]] = np.int32
    elif pa.types.is_large_string(names.type):
        offset_type = np.int64
    else:
        return None
    _, offsets_buf, data_buf = names.buffers()
    start = names.offset + off0
    item_off = np.frombuffer(offsets_buf, offset_type)[start : start + n * rank + 1]
    # Every row's item offsets are row 0's moved by whole rows of bytes, and the bytes repeat.
    row_off = item_off[: rank + 1].tolist()
    lo, row_bytes = row_off[0], row_off[-1] - row_off[0]
    if int(item_off[-1]) != lo + n * row_bytes:
        return None
    step = np.arange(n) * row_bytes
    # Column by column: a compare broadcast over short rows is many times slower.
    if not all((item_off[j:-1:rank] == step + row_off[j]).all() for j in range(rank)):
        return None
    data = np.frombuffer(data_buf, np.uint8)[lo : lo + n * row_bytes].tobytes()
    if data != data[:row_bytes] * n:
        return None
    first: list[str] = names.slice(off0, rank).to_pylist()
    return tuple(first)


def _check_one_row(names: tuple[str, ...], where: str) -> None:
    for name in names:
        if not name:
            raise InvalidDimensionsError(
                f"{where}: row 0 has an empty dimension name; names must not be empty (FORMAT 4/3)"
            )
    for name in names:
        if names.count(name) > 1:
            raise InvalidDimensionsError(
                f"{where}: row 0 has the dimension name {name!r} twice; names must be unique "
                "within a row (FORMAT 4/3)"
            )


def _align_names(
    codes: npt.NDArray[np.int64],
    name_offsets: npt.NDArray[np.int64],
    dim_offsets: npt.NDArray[np.int64],
    valid: npt.NDArray[np.bool_],
    rank: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]:
    """Name codes laid out like ``sizes`` (dim_offsets), so one set of offsets serves both."""
    out = np.zeros(int(np.max(dim_offsets, initial=0)), np.int64)
    src = range_positions(np.where(valid, name_offsets[:-1], 0), rank)
    out[range_positions(np.where(valid, dim_offsets[:-1], 0), rank)] = codes[src]
    return out


def _check_unique(
    codes: npt.NDArray[np.int64],
    rank: npt.NDArray[np.int64],
    name_dict: list[str],
    where: str,
) -> None:
    rows_with_dims = rank[rank > 0]
    if len(rows_with_dims) == 0:
        return
    low, high = int(np.min(rows_with_dims)), int(np.max(rows_with_dims))
    if high < 2:
        return
    if low == high:
        r = int(rows_with_dims[0])
        block = codes.reshape(-1, r)
        # Every row has the same names (the common case): check one row.
        same = np.array_equal(block, np.broadcast_to(block[0], block.shape))
        if same and len(np.unique(block[0])) == r:
            return
    nd = max(len(name_dict), 1)
    order = np.sort(range_ids(rank) * nd + codes)
    dup = np.flatnonzero(order[1:] == order[:-1])
    if len(dup):
        k = int(order[dup[0]])
        raise InvalidDimensionsError(
            f"{where}: row {k // nd} has the dimension name {name_dict[k % nd]!r} twice; "
            "names must be unique within a row (FORMAT 4/3)"
        )


class _Dims(NamedTuple):
    """Every row's dimensions: sizes and name codes laid out by one set of offsets."""

    offsets: npt.NDArray[np.int64]  # len n+1, into ``sizes`` and ``codes``
    sizes: npt.NDArray[np.int64]
    codes: npt.NDArray[np.int64]  # indices into ``names``
    names: list[str]


def _parts(
    storage: pa.StructArray,
    layout: StorageLayout,
    valid: npt.NDArray[np.bool_],
    values: pa.Array,
    value_offsets: npt.NDArray[np.int64],
    dims: _Dims,
    shape: RowShape | None,
) -> StorageParts:
    """The one place a :class:`StorageParts` is made, for checked reads and for fresh builds."""
    attrs: pa.StructArray | None = storage.field(3) if layout.attr_fields else None
    return StorageParts(
        storage=storage,
        layout=layout,
        valid=valid,
        values=values,
        value_offsets=value_offsets,
        dim_offsets=dims.offsets,
        sizes=dims.sizes,
        name_codes=dims.codes,
        name_dict=dims.names,
        attrs=attrs,
        row_shape=shape,
    )


def build_storage(
    *,
    value_field: pa.Field,
    values: pa.Array,
    value_offsets: npt.NDArray[np.int64],
    names: pa.Array,
    sizes: npt.NDArray[np.integer],
    dim_offsets: npt.NDArray[np.int64],
    null_rows: npt.NDArray[np.bool_] | None,
    attrs: pa.StructArray | None,
) -> pa.StructArray:
    """Assemble a storage array from flat children and offsets (the writer's layout).

    ``null_rows`` (True = null row) is only turned into a validity buffer when some row is null.
    """
    for offsets, what in ((value_offsets, "values"), (dim_offsets, "dimensions")):
        if len(offsets) and int(offsets[-1]) > INT32_MAX:
            raise InvalidArgumentError(
                f"nd column: {int(offsets[-1])} {what} exceed the 2**31 - 1 a List can hold; "
                "split the arrays over several columns or record batches"
            )
    # Children from numpy buffers, not pa.array: that imports pandas when it is installed.
    vtype = pa.list_(value_field)
    value_off = primitive_array(np.asarray(value_offsets, np.int32), pa.int32())
    values_list = pa.ListArray.from_arrays(value_off, values, type=vtype)
    dim_off = primitive_array(np.asarray(dim_offsets, np.int32), pa.int32())
    names_list = pa.ListArray.from_arrays(dim_off, names, type=NAMES_TYPE)
    sizes_list = pa.ListArray.from_arrays(
        dim_off, primitive_array(np.asarray(sizes, np.uint32), pa.uint32()), type=SIZES_TYPE
    )
    children: list[pa.Array] = [values_list, names_list, sizes_list]
    attr_fields: list[pa.Field] = []
    if attrs is not None and attrs.type.num_fields:
        children.append(attrs)
        attr_fields = [attrs.type.field(i) for i in range(attrs.type.num_fields)]
    st = storage_type(value_field.type, attr_fields, values_nullable=value_field.nullable)
    fields = [st.field(i) for i in range(st.num_fields)]
    mask = None
    if null_rows is not None and null_rows.any():
        mask = primitive_array(null_rows, pa.bool_())
    return pa.StructArray.from_arrays(children, fields=fields, mask=mask)


def assemble_parts(
    values: pa.Array,
    counts: npt.NDArray[np.int64],
    ranks: npt.NDArray[np.int64],
    names: pa.Array,
    sizes: npt.NDArray[np.int64],
    null_rows: npt.NDArray[np.bool_] | None,
    attrs: pa.StructArray | None,
    name_codes: npt.NDArray[np.int64],
    name_dict: list[str],
) -> StorageParts:
    """Storage and its parts from per-row value counts and ranks whose rules the caller checked.

    For writers (the column builder, tensor and zarr imports): re-checking storage just built
    from checked parts would only repeat those checks. ``names`` holds every non-null row's
    names back to back, ``name_codes`` the same as indices into ``name_dict``.
    """
    value_offsets = offsets_of(counts)
    dim_offsets = offsets_of(ranks)
    storage = build_storage(
        value_field=pa.field(ITEM_FIELD, values.type, nullable=True),
        values=values,
        value_offsets=value_offsets,
        names=names,
        sizes=sizes,
        dim_offsets=dim_offsets,
        null_rows=null_rows,
        attrs=attrs,
    )
    valid = np.ones(len(counts), np.bool_) if null_rows is None else ~null_rows
    layout = parse_storage_type(storage.type)
    shape = row_shape(sizes, dim_offsets, uniform_rank(dim_offsets, valid))
    dims = _Dims(dim_offsets, sizes, name_codes, name_dict)
    return _parts(storage, layout, valid, values, value_offsets, dims, shape)


def tile_names(names: Sequence[str], count: int) -> pa.Array:
    """``count`` repetitions of one row's names as one flat Utf8 array, built from numpy buffers."""
    if not names or count == 0:
        return pa.array([], pa.string())
    encoded = [n.encode("utf-8") for n in names]
    lens = np.array([len(b) for b in encoded], np.int64)
    total = int(lens.sum()) * count
    if total > INT32_MAX:
        raise InvalidArgumentError(
            f"nd column: {total} bytes of dimension names exceed what one Utf8 array can hold; "
            "split the arrays over several columns or record batches"
        )
    offsets = offsets_of(np.tile(lens.astype(np.int32), count), np.int32)
    data = np.tile(np.frombuffer(b"".join(encoded), np.uint8), count)
    return pa.StringArray.from_buffers(
        len(names) * count, pa.py_buffer(offsets), pa.py_buffer(data)
    )
