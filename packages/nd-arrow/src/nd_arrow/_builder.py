"""Building an nd column's storage from numpy arrays and :class:`NdArray` rows: the values of all
rows are copied once, and per row only its shape is read."""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Sequence
from itertools import repeat
from operator import attrgetter
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from nd_arrow._array import NdArray
from nd_arrow._attrs import encode_attrs
from nd_arrow._format import MAX_DIM_SIZE, check_dim_names, default_dim_names
from nd_arrow._storage import RowNames, StorageParts, assemble_parts, repeated_names
from nd_arrow._values import is_string_dtype, numpy_to_arrow, string_array
from nd_arrow.errors import InvalidArgumentError, InvalidDimensionsError, SchemaMismatchError

__all__ = ["build_parts"]


def _compatible(a: np.dtype[Any], b: np.dtype[Any]) -> bool:
    return a == b or (is_string_dtype(a) and is_string_dtype(b))


def _check_dtypes(arrays: Sequence[np.ndarray | None], where: str) -> np.dtype[Any] | None:
    """The common dtype of the non-null rows, or a SchemaMismatchError naming the first outlier."""
    if arrays and arrays[0] is not None:
        first_dtype = arrays[0].dtype
        # Fast check: numpy shares one dtype object per builtin type, so identity usually decides.
        try:
            if all(map(operator.is_, map(attrgetter("dtype"), arrays), repeat(first_dtype))):
                return first_dtype
        except AttributeError:  # null rows (None) among them
            pass
    dtypes = {a.dtype for a in arrays if a is not None}
    if not dtypes:
        return None
    first = next(a for a in arrays if a is not None).dtype
    if len(dtypes) > 1:
        for i, a in enumerate(arrays):
            if a is not None and not _compatible(a.dtype, first):
                raise SchemaMismatchError(
                    f"{where}: row {i} has dtype {a.dtype} but earlier rows have {first}; all rows "
                    "of a column share one value type. Cast first or pass value_type="
                )
        if is_string_dtype(first):
            return np.dtype(object)
    return first


def build_parts(
    items: list[Any],
    dims: Sequence[str] | None,
    value_type: pa.DataType | None,
    where: str,
) -> StorageParts:
    kinds = set(map(type, items))
    if kinds <= {np.ndarray, type(None)} and np.ndarray in kinds:
        built = _build_uniform(items, type(None) in kinds, dims, value_type, where)
        if built is not None:
            return built
    return _build_general(items, dims, value_type, where)


def _join(
    arrays: list[np.ndarray],
    rank: int,
    dtype: np.dtype[Any] | None,
    casting: Literal["no", "same_kind"],
) -> np.ndarray | None:
    """The values of all rows in one new array (0-d rows stacked, others concatenated); None
    where ranks or trailing shapes differ. ``casting="no"`` makes numpy refuse other dtypes."""
    join = np.stack if rank == 0 else np.concatenate
    try:
        return join(arrays, dtype=dtype, casting=casting)
    except ValueError:
        return None


def _build_uniform(
    items: list[np.ndarray | None],
    has_nulls: bool,
    dims: Sequence[str] | None,
    value_type: pa.DataType | None,
    where: str,
) -> StorageParts | None:
    """Fast path: plain numpy arrays of one rank and one trailing shape, sharing ``dims``.

    Returns None (use the general path) when ranks or trailing shapes differ. numpy's
    concatenation checks ranks, trailing shapes and (``casting="no"``) dtypes in one copy of the
    values; only the leading sizes are read per row.
    """
    arrays: list[np.ndarray] = [a for a in items if a is not None] if has_nulls else items  # type: ignore[assignment]
    k = len(arrays)
    rank = arrays[0].ndim
    try:
        joined = _join(arrays, rank, arrays[0].dtype, "no")
    except TypeError:  # dtypes differ: refused with the row named, or strings made objects
        joined = _join(arrays, rank, _check_dtypes(arrays, where), "same_kind")
    if joined is None:
        return None
    flat = joined.reshape(-1)
    inner_shape = joined.shape[1:]
    lead = np.fromiter(map(len, arrays), np.int64, k) if rank else np.ones(k, np.int64)
    dim_names = default_dim_names(rank) if dims is None else check_dim_names(dims, rank, where)
    if is_string_dtype(flat.dtype) and flat.dtype.kind != "O":
        flat = flat.astype(object)
    sizes = _sizes_table(lead, inner_shape, rank, where)
    counts = lead * math.prod(inner_shape)
    null_rows = np.fromiter((a is None for a in items), np.bool_, len(items)) if has_nulls else None
    values = numpy_to_arrow(flat, None, value_type, where)
    ranks = np.full(k, rank, np.int64)
    return assemble_parts(
        values, counts, ranks, repeated_names(dim_names, k), sizes, null_rows, None
    )


def _sizes_table(
    lead: npt.NDArray[np.int64], inner_shape: tuple[int, ...], rank: int, where: str
) -> npt.NDArray[np.int64]:
    """Every row's sizes back to back: its leading size, then the shared inner shape."""
    largest = max(int(np.max(lead)) if rank else 0, *inner_shape, 0)
    if largest > MAX_DIM_SIZE:
        raise InvalidDimensionsError(
            f"{where}: dimension size {largest} exceeds {MAX_DIM_SIZE}, the largest "
            "UInt32 dimension size"
        )
    sizes = np.empty((len(lead), rank), np.int64)
    if rank:
        sizes[:, 0] = lead
    for j, size in enumerate(inner_shape, 1):  # column by column (broadcasting short rows is slow)
        sizes[:, j] = size
    return sizes.reshape(-1)


def _build_general(
    items: list[Any],
    dims: Sequence[str] | None,
    value_type: pa.DataType | None,
    where: str,
) -> StorageParts:
    """Any mix of NdArrays, numpy arrays and None, row by row."""
    rows = _as_rows(items, dims, where)
    present = [r for r in rows if r is not None]
    values = _joined_values(rows, present, value_type, where)
    null_rows = np.fromiter((r is None for r in rows), np.bool_, len(rows))
    counts = np.fromiter((r.values.size for r in present), np.int64, len(present))
    ranks = np.fromiter((r.ndim for r in present), np.int64, len(present))
    sizes = np.fromiter(
        itertools.chain.from_iterable(r.shape for r in present), np.int64, int(ranks.sum())
    )
    names = _names_of(present)
    attrs = encode_attrs([r.attrs if r is not None else None for r in rows], f"{where} row")
    null_rows_or_none = null_rows if null_rows.any() else None
    return assemble_parts(values, counts, ranks, names, sizes, null_rows_or_none, attrs)


def _as_rows(items: list[Any], dims: Sequence[str] | None, where: str) -> list[NdArray | None]:
    """Every item as an NdArray (numpy arrays named by ``dims``), None as None."""
    rows: list[NdArray | None] = []
    for i, item in enumerate(items):
        if item is None or isinstance(item, NdArray):
            rows.append(item)
            continue
        try:
            rows.append(NdArray(item, dims))
        except (InvalidDimensionsError, InvalidArgumentError) as exc:
            raise type(exc)(f"{where}: row {i}: {exc}") from exc
    return rows


def _joined_values(
    rows: list[NdArray | None],
    present: list[NdArray],
    value_type: pa.DataType | None,
    where: str,
) -> pa.Array:
    """The values of all non-null rows as one Arrow array, element nulls from their masks."""
    if not present and value_type is None:
        raise InvalidArgumentError(
            f"{where}: no row has values to take the value type from; pass value_type="
        )
    dtype = _check_dtypes([r.values if r is not None else None for r in rows], where)
    if not present:
        return pa.array([], value_type)
    flat = np.concatenate([r.values.reshape(-1) for r in present])
    if dtype is not None and dtype.kind == "O":
        flat = flat.astype(object)
    mask = None
    if any(r.mask is not None for r in present):
        mask = np.concatenate(
            [
                np.zeros(r.values.size, np.bool_) if r.mask is None else r.mask.reshape(-1)
                for r in present
            ]
        )
    return numpy_to_arrow(flat, mask, value_type, where)


def _names_of(present: list[NdArray]) -> RowNames:
    """The names of the non-null rows: one set repeated, or a dictionary of the distinct ones."""
    dim_tuples = {r.dims for r in present}
    if len(dim_tuples) == 1:
        return repeated_names(next(iter(dim_tuples)), len(present))
    flat_names = list(itertools.chain.from_iterable(r.dims for r in present))
    index: dict[str, int] = {}
    codes = np.fromiter(
        (index.setdefault(nm, len(index)) for nm in flat_names), np.int64, len(flat_names)
    )
    return RowNames(string_array(flat_names), codes, list(index))
