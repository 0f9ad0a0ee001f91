"""Checking a storage array against every row rule of the ``nd_arrow.array`` layout.

The rules (FORMAT.md section 4) are checked over whole arrays with numpy and the first offending
row is reported; null rows are not checked, their contents carry no meaning. What all rows share
(one rank, names, shape: the common case) is found first and checked once.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from nd_arrow._format import DIM_NAMES_FIELD, DIM_SIZES_FIELD, VALUES_FIELD, size_products
from nd_arrow._ragged import offsets_of, range_ids, range_positions
from nd_arrow._storage import (
    Dims,
    RowShape,
    StorageLayout,
    StorageParts,
    make_parts,
    parse_storage_type,
    row_shape,
    uniform_rank,
)
from nd_arrow._values import numpy_view
from nd_arrow.errors import InvalidDimensionsError, InvalidEncodingError, ShapeMismatchError

__all__ = ["validate_storage"]

_INT64_MAX = 2**63 - 1


def validate_storage(
    storage: pa.Array, where: str = "nd column", layout: StorageLayout | None = None
) -> StorageParts:
    """Check every row rule of a storage array (vectorized) and return its parts.

    ``layout`` is the parsed storage type when the caller has it (an :class:`NdArrayType`).
    """
    if layout is None:
        layout = parse_storage_type(storage.type)
    all_valid = storage.null_count == 0
    valid = np.ones(len(storage), np.bool_) if all_valid else numpy_view(storage.is_valid())
    lists = _take_lists(storage, valid, where)
    dim_offsets = lists.dim_offsets
    rank = np.diff(dim_offsets) if all_valid else np.where(valid, np.diff(dim_offsets), 0)
    r = uniform_rank(dim_offsets, valid)
    # Names laid out like the sizes (as written: one set of offsets) and one rank for all rows
    # leave nothing to check here.
    same_layout = np.array_equal(lists.name_offsets, dim_offsets)
    if r is None or not same_layout:
        _check_name_counts(lists.name_offsets, rank, valid, all_valid, where)
    sizes = numpy_view(lists.sizes).astype(np.int64, copy=False)
    shape = row_shape(sizes, dim_offsets, r)
    _check_value_counts(lists, sizes, rank, valid, all_valid, shape, where)
    codes, name_dict = _name_codes(lists, valid, rank, r, same_layout, where)
    dims = Dims(dim_offsets, sizes, codes, name_dict)
    return make_parts(storage, layout, valid, lists.values, lists.value_offsets, dims, shape)


class _Lists(NamedTuple):
    """The three list children of a storage array: flat children and int64 offsets."""

    values: pa.Array
    value_offsets: npt.NDArray[np.int64]
    names: pa.Array
    name_offsets: npt.NDArray[np.int64]
    sizes: pa.Array
    dim_offsets: npt.NDArray[np.int64]


def _take_lists(storage: pa.StructArray, valid: npt.NDArray[np.bool_], where: str) -> _Lists:
    """The list children taken apart, checked: no null list and no null name or size in a row."""
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
    sizes, dim_offsets = _list_offsets(children[2], DIM_SIZES_FIELD, where)
    _check_item_nulls(names, name_offsets, valid, DIM_NAMES_FIELD, where)
    _check_item_nulls(sizes, dim_offsets, valid, DIM_SIZES_FIELD, where)
    return _Lists(values, value_offsets, names, name_offsets, sizes, dim_offsets)


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


def _check_name_counts(
    name_offsets: npt.NDArray[np.int64],
    rank: npt.NDArray[np.int64],
    valid: npt.NDArray[np.bool_],
    all_valid: bool,
    where: str,
) -> None:
    """Offsets that never decrease, and one name per size in every row."""
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


def _check_value_counts(
    lists: _Lists,
    sizes: npt.NDArray[np.int64],
    rank: npt.NDArray[np.int64],
    valid: npt.NDArray[np.bool_],
    all_valid: bool,
    shape: RowShape | None,
    where: str,
) -> None:
    """Every row's sizes multiply within int64 to its number of values."""
    dim_offsets = lists.dim_offsets
    starts = dim_offsets[:-1] if all_valid else np.where(valid, dim_offsets[:-1], 0)
    exact = None if shape is None else shape.product
    if shape is not None and exact is not None:
        # Every row has one shape (found once, kept in the parts for decoding): one product.
        beyond = int(shape.nonzero_product or 0) > _INT64_MAX
        products = np.full(len(valid), -1 if beyond else exact, np.int64)
        overflow = np.full(len(valid), beyond, np.bool_)
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
    lengths = np.diff(lists.value_offsets)
    bad = lengths != products if all_valid else valid & (lengths != products)
    if bad.any():
        i = _first(bad)
        raise ShapeMismatchError(
            f"{where}: row {i} has {int(lengths[i])} values but dimension sizes {row_sizes(i)} "
            f"(product {int(products[i])}); the number of values must equal the product of the "
            "sizes (1 for rank 0) (FORMAT 4/4)"
        )


def _name_codes(
    lists: _Lists,
    valid: npt.NDArray[np.bool_],
    rank: npt.NDArray[np.int64],
    uniform: int | None,
    same_layout: bool,
    where: str,
) -> tuple[npt.NDArray[np.int64], list[Any]]:
    """Every name as a code into the distinct names, laid out like the sizes, and those names;
    each row's names checked (non-empty, unique). ``uniform`` is the rank of every row (see
    :func:`uniform_rank`), ``same_layout`` whether names and sizes share their offsets."""
    names, name_offsets = lists.names, lists.name_offsets
    if pa.types.is_string_view(names.type):
        names = names.cast(pa.string())
    n, off0 = len(valid), int(name_offsets[0])
    shared = _uniform_names(names, off0, n, uniform) if same_layout else None
    if shared is not None:
        # Every row carries the same names (the common case): check them once.
        _check_one_row(shared, where)
        codes = np.zeros(len(names), np.int64)
        k = len(shared)
        block = codes[off0 : off0 + n * k].reshape(n, k)
        for j in range(1, k):  # column by column; column 0 is code 0
            block[:, j] = j
        return codes, list(shared)
    codes, name_dict = _dictionary_codes(names, name_offsets, valid, rank, where)
    if not same_layout:
        codes = _align_names(codes, name_offsets, lists.dim_offsets, valid, rank)
    return codes, name_dict


def _dictionary_codes(
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
