"""The Arrow storage layout of ``nd_arrow.array``: its type, writing it, and the parts a column
is decoded from.

Writers produce exactly the layout of FORMAT.md ("Storage layout"); readers are more lenient
(:func:`parse_storage_type`) and check every row rule in :mod:`nd_arrow._storage_check`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from nd_arrow._format import (
    ATTRS_FIELD,
    DIM_NAMES_FIELD,
    DIM_SIZES_FIELD,
    INT32_MAX,
    ITEM_FIELD,
    VALUES_FIELD,
)
from nd_arrow._ragged import offsets_of
from nd_arrow._values import primitive_array
from nd_arrow.errors import InvalidArgumentError, InvalidEncodingError

__all__ = [
    "Dims",
    "RowNames",
    "RowShape",
    "StorageLayout",
    "StorageParts",
    "assemble_parts",
    "build_storage",
    "make_parts",
    "parse_storage_type",
    "repeated_names",
    "row_shape",
    "storage_type",
    "tile_names",
    "uniform_rank",
]

NAMES_TYPE = pa.list_(pa.field(ITEM_FIELD, pa.string(), nullable=False))
SIZES_TYPE = pa.list_(pa.field(ITEM_FIELD, pa.uint32(), nullable=False))


def storage_type(
    value_type: pa.DataType, attr_fields: Sequence[pa.Field] = (), *, values_nullable: bool = True
) -> pa.StructType:
    """The storage struct type written for a value type and attribute fields::

    Struct {
      values:    List<item: T>               (non-nullable child; nullable items)
      dim_names: List<item: Utf8 not null>   (non-nullable child)
      dim_sizes: List<item: UInt32 not null> (non-nullable child)
      attrs:     Struct {key: any, ...}      (optional; non-nullable child; nullable members)
    }
    """
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
    """Check a storage type against the layout (:class:`InvalidEncodingError` if it breaks it).

    Readers also accept other list item names, nullable children and items, LargeList / ListView
    children, LargeUtf8 / Utf8View names and a zero-field ``attrs``.
    """
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


class Dims(NamedTuple):
    """Every row's dimensions: sizes and name codes laid out by one set of offsets."""

    offsets: npt.NDArray[np.int64]  # len n+1, into ``sizes`` and ``codes``
    sizes: npt.NDArray[np.int64]
    codes: npt.NDArray[np.int64]  # indices into ``names``
    names: list[str]


def make_parts(
    storage: pa.StructArray,
    layout: StorageLayout,
    valid: npt.NDArray[np.bool_],
    values: pa.Array,
    value_offsets: npt.NDArray[np.int64],
    dims: Dims,
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


class RowNames(NamedTuple):
    """Every non-null row's dimension names back to back, as Utf8 and as codes into ``distinct``."""

    flat: pa.Array
    codes: npt.NDArray[np.int64]
    distinct: list[str]


def repeated_names(names: Sequence[str], count: int) -> RowNames:
    """The names of ``count`` rows that all have ``names``."""
    codes = np.tile(np.arange(len(names), dtype=np.int64), count)
    return RowNames(tile_names(names, count), codes, list(names))


def assemble_parts(
    values: pa.Array,
    counts: npt.NDArray[np.int64],
    ranks: npt.NDArray[np.int64],
    names: RowNames,
    sizes: npt.NDArray[np.int64],
    null_rows: npt.NDArray[np.bool_] | None,
    attrs: pa.StructArray | None,
) -> StorageParts:
    """Storage and its parts from the value counts and ranks of the non-null rows, whose rules the
    caller checked; ``null_rows`` (True = null row) places them among all rows, None: no null row.

    For writers (the column builder, tensor imports): re-checking storage just built from
    checked parts would only repeat those checks.
    """
    valid = np.ones(len(counts), np.bool_) if null_rows is None else ~null_rows
    if null_rows is not None:  # null rows own no values and no dimensions
        counts, ranks = _on_rows(counts, valid), _on_rows(ranks, valid)
    value_offsets = offsets_of(counts)
    dim_offsets = offsets_of(ranks)
    storage = build_storage(
        value_field=pa.field(ITEM_FIELD, values.type, nullable=True),
        values=values,
        value_offsets=value_offsets,
        names=names.flat,
        sizes=sizes,
        dim_offsets=dim_offsets,
        null_rows=null_rows,
        attrs=attrs,
    )
    layout = parse_storage_type(storage.type)
    shape = row_shape(sizes, dim_offsets, uniform_rank(dim_offsets, valid))
    dims = Dims(dim_offsets, sizes, names.codes, names.distinct)
    return make_parts(storage, layout, valid, values, value_offsets, dims, shape)


def _on_rows(present: npt.NDArray[np.int64], valid: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
    """Numbers of the non-null rows placed on all rows, 0 on null rows."""
    out = np.zeros(len(valid), np.int64)
    out[valid] = present
    return out


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
