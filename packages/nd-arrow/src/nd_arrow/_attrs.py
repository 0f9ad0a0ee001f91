"""Attributes: per-row ``{key: value}`` dicts to and from one Arrow Struct with a child per key.

The struct holds the union of the keys of all rows, in first-seen order; a null child value means
the row lacks that key. Writers accept scalars (bool, int, float, numpy scalars, datetime64),
strings, bytes, 1-D arrays (lists, tuples or numpy) and pyarrow scalars of any type. One key
carries one Arrow type across all rows. The same code serves array attributes and global attributes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from nd_arrow._format import check_attr_keys, merge_keys
from nd_arrow._values import arrow_to_numpy, arrow_type_for_dtype, numpy_view
from nd_arrow.errors import InvalidAttributeError, NdArrowError

__all__ = ["AttrDecoder", "attr_type", "attrs_equal", "encode_attrs"]

Attrs = Mapping[str, Any]


def attr_type(value: object, where: str) -> pa.DataType:
    """The Arrow type one attribute value is written with."""
    if isinstance(value, pa.Scalar):
        return value.type
    if isinstance(value, bool | np.bool_):
        return pa.bool_()
    if isinstance(value, int):
        return pa.int64()
    if isinstance(value, float):
        return pa.float64()
    if isinstance(value, str):
        return pa.string()
    if isinstance(value, bytes):
        return pa.binary()
    if isinstance(value, list | tuple):
        value = np.asarray(value)
    if isinstance(value, np.generic | np.ndarray):
        arr = np.asarray(value)
        try:
            item = arrow_type_for_dtype(arr.dtype, where)
        except NdArrowError as exc:
            raise InvalidAttributeError(f"{where}: {exc}") from exc
        if arr.ndim == 0:
            return item
        if arr.ndim == 1:
            return pa.list_(item)
        raise InvalidAttributeError(
            f"{where}: value has shape {arr.shape}; attributes are scalars, strings or 1-D arrays"
        )
    raise InvalidAttributeError(
        f"{where}: value {value!r} of type {type(value).__name__} is not supported; attributes "
        "are scalars, strings or 1-D arrays"
    )


def _normalize(value: object) -> object:
    if isinstance(value, pa.Scalar):
        return value.as_py()
    if isinstance(value, list | tuple):
        return np.asarray(value)
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value[()]
    return value


def encode_attrs(rows: Sequence[Attrs | None], where: str = "row") -> pa.StructArray | None:
    """One Struct (a child per key, union of keys) from per-row dicts; None when no row has any.

    A row given as None (a null row) or lacking a key gets a null in that key's child.
    """
    present = [r for r in rows if r]
    if not present:
        return None
    for i, r in enumerate(rows):
        if r:
            check_attr_keys(r, f"{where} {i}")
    keys = merge_keys(r.keys() for r in present)
    children: list[pa.Array] = []
    fields: list[pa.Field] = []
    for key in keys:
        col: list[object] = []
        key_type: pa.DataType | None = None
        first = -1
        for i, r in enumerate(rows):
            v = r.get(key) if r else None
            if v is None:
                col.append(None)
                continue
            t = attr_type(v, f"{where} {i}: attribute {key!r}")
            if key_type is None:
                key_type, first = t, i
            elif t != key_type:
                raise InvalidAttributeError(
                    f"{where} {i}: attribute {key!r} has type {t} but {key_type} in {where} "
                    f"{first}; one key has one type in a column. Convert the values to one type"
                )
            col.append(_normalize(v))
        assert key_type is not None
        try:
            children.append(pa.array(col, type=key_type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as exc:
            raise InvalidAttributeError(
                f"{where}: attribute {key!r} cannot be stored as {key_type}: {exc}"
            ) from exc
        fields.append(pa.field(key, key_type, nullable=True))
    n = len(rows)
    return pa.StructArray.from_arrays(children, fields=fields) if n else None


class AttrDecoder:
    """Per-row attribute dicts of an attrs Struct, converting each child once for all rows.

    Numbers, booleans and times come back as numpy scalars (their dtype survives a round trip),
    strings as str, lists as 1-D numpy arrays, anything else as ``as_py()`` gives it.
    """

    def __init__(self, attrs: pa.StructArray | None) -> None:
        self._getters: list[tuple[str, npt.NDArray[np.bool_], Callable[[int], object]]] = []
        if attrs is None:
            return
        row_valid = numpy_view(attrs.is_valid()) if attrs.null_count else None
        t = attrs.type
        for j in range(t.num_fields):
            child = attrs.field(j)
            valid = numpy_view(child.is_valid())
            if row_valid is not None:
                valid &= row_valid
            self._getters.append((t.field(j).name, valid, _getter(child)))

    @property
    def keys(self) -> list[str]:
        return [k for k, _, _ in self._getters]

    def row(self, i: int) -> dict[str, Any]:
        return {k: get(i) for k, valid, get in self._getters if valid[i]}


def _numpy_scalar(t: pa.DataType) -> bool:
    """Arrow scalar types read through one numpy array (numbers, bools, times)."""
    return bool(
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_boolean(t)
        or pa.types.is_timestamp(t)
        or pa.types.is_duration(t)
    )


def _getter(child: pa.Array) -> Callable[[int], object]:
    t = child.type
    if _numpy_scalar(t):
        data, _ = arrow_to_numpy(child)
        return data.__getitem__
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        item = t.value_type
        if _numpy_scalar(item) or pa.types.is_string(item):
            if pa.types.is_fixed_size_list(t):
                child = child.cast(pa.list_(t.value_field))
            flat, _ = arrow_to_numpy(child.values)
            off = numpy_view(child.offsets)
            return lambda i: flat[off[i] : off[i + 1]].copy()
    values = child.to_pylist()
    return values.__getitem__


def _value_equal(a: object, b: object) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        x, y = np.asarray(a), np.asarray(b)
        if x.shape != y.shape:
            return False
        if x.dtype.kind == "f" and y.dtype.kind == "f":
            return bool(np.array_equal(x, y, equal_nan=True))
        return bool(np.array_equal(x, y))
    if isinstance(a, float | np.floating) and isinstance(b, float | np.floating):
        return bool(a == b or (np.isnan(a) and np.isnan(b)))
    return bool(a == b)


def attrs_equal(a: Attrs, b: Attrs) -> bool:
    """Equality of attribute dicts: same keys, equal values (NaN equals NaN, arrays elementwise)."""
    return a.keys() == b.keys() and all(_value_equal(a[k], b[k]) for k in a)
