"""The Arrow storage of ``nd_arrow.array`` (FORMAT 3-6): element values numpy <-> Arrow through
buffers (``pa.array`` and ``to_numpy`` import pandas), per-row attributes, the storage type,
writing it and reading it back checked against every rule, vectorized. Nulls: a numpy mask."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
from pyarrow import types as pat

from nd_arrow import _format as fmt
from nd_arrow import errors
from nd_arrow._format import Ints, Mask

_LISTS = (pat.is_list, pat.is_large_list, pat.is_list_view, pat.is_large_list_view)
_STRINGS = (pat.is_string, pat.is_large_string, pat.is_string_view)
_NUMBERS = (pat.is_integer, pat.is_floating, pat.is_boolean, pat.is_timestamp, pat.is_duration)


def _is_any(t: pa.DataType, *kinds: Callable[[pa.DataType], bool]) -> bool:
    return any(kind(t) for kind in kinds)


def is_string_dtype(dtype: np.dtype[Any]) -> bool:
    """True for numpy str dtypes (``U``, numpy 2's ``StringDType``) and object (assumed str)."""
    return dtype.kind in "UTO"


def arrow_type_for_dtype(dtype: np.dtype[Any], where: str = "values") -> pa.DataType:
    """The Arrow value type written for a numpy dtype (strings as Utf8, ``datetime64[D]`` as
    Date32)."""
    if dtype.kind in "TO":
        return pa.string()
    unit, count = np.datetime_data(dtype) if dtype.kind in "mM" else ("", 1)
    with contextlib.suppress(pa.ArrowNotImplementedError):
        if count == 1:
            return pa.from_numpy_dtype(dtype)
    if dtype.kind in "mM":
        raise errors.NotSupportedError(
            f"{where}: numpy {dtype} has unit {unit!r}; Arrow timestamps and durations use "
            f"s, ms, us or ns. Convert with .astype('{dtype.kind}8[ns]') first"
        )
    raise errors.NotSupportedError(
        f"{where}: numpy dtype {dtype} has no Arrow value type in nd-arrow; use a numeric, bool, "
        "datetime64, timedelta64 or string dtype (complex numbers: store real and imag apart)"
    )


def raw_values(arr: pa.Array) -> npt.NDArray[Any] | None:
    """The values buffer of a fixed-width array as numpy, whatever the validity says (zero-copy,
    read-only; booleans unpacked): numbers, timestamps and durations. None for other types."""
    t, n = arr.type, len(arr)
    if pat.is_boolean(t):
        bits = np.unpackbits(np.frombuffer(arr.buffers()[1] or b"", np.uint8), bitorder="little")
        return bits[arr.offset : arr.offset + n].astype(np.bool_)
    if _is_any(t, pat.is_integer, pat.is_floating):  # (to_pandas_dtype imports pandas)
        kind = "f" if pat.is_floating(t) else "i" if pat.is_signed_integer(t) else "u"
        dtype = np.dtype(f"{kind}{t.bit_width // 8}")
    elif _is_any(t, pat.is_timestamp, pat.is_duration):
        dtype = np.dtype(f"{'M' if pat.is_timestamp(t) else 'm'}8[{t.unit}]")
    else:
        return None
    data = arr.buffers()[1] if n else b""
    return np.frombuffer(data, dtype, count=n, offset=arr.offset * dtype.itemsize if n else 0)


def valid_rows(arr: pa.Array) -> Mask:
    """Per row of ``arr``: False where it is null."""
    return numpy_view(arr.is_valid()) if arr.null_count else np.ones(len(arr), np.bool_)


def numpy_view(arr: pa.Array) -> npt.NDArray[Any]:
    """``arr.to_numpy(zero_copy_only=False)``, read from the buffers (zero-copy, read-only) where
    Arrow's layout is numpy's: fixed-width values without nulls, booleans unpacked."""
    raw = raw_values(arr) if arr.null_count == 0 else None
    return arr.to_numpy(zero_copy_only=False) if raw is None else raw


def primitive_array(values: npt.NDArray[Any], t: pa.DataType, mask: Mask | None = None) -> pa.Array:
    """A fixed-width Arrow array over a flat native-endian numpy array of its layout (no copy;
    booleans are bit-packed); ``mask`` is True = null."""
    nulls = 0 if mask is None else int(np.count_nonzero(mask))
    validity = pa.py_buffer(np.packbits(~mask, bitorder="little")) if nulls else None  # type: ignore[operator]
    bits = values.dtype.kind == "b"
    data = np.packbits(values, bitorder="little") if bits else np.ascontiguousarray(values)
    return pa.Array.from_buffers(t, len(values), [validity, pa.py_buffer(data)], null_count=nulls)


def string_array(strings: Sequence[str], where: str = "nd column") -> pa.Array:
    """A Utf8 array of Python strings, built from numpy buffers."""
    encoded = [s.encode("utf-8") for s in strings]
    lengths = np.fromiter(map(len, encoded), np.int64, len(encoded))
    fmt.check_int32(int(lengths.sum()), "bytes of strings", where)
    offsets = pa.py_buffer(fmt.offsets_of(lengths, np.int32))
    return pa.StringArray.from_buffers(len(encoded), offsets, pa.py_buffer(b"".join(encoded)))


def numpy_to_arrow(
    flat: Any, mask: Mask | None, value_type: Any = None, where: str = "values"
) -> Any:
    """One flat Arrow array of a flat numpy array and a null mask (True = null; NaT is null too),
    cast to ``value_type`` when given. Numbers and times are wrapped from their buffers."""
    flat = flat.astype(object) if flat.dtype.kind == "T" else flat
    dtype, kind = flat.dtype, flat.dtype.kind
    arrow_type = arrow_type_for_dtype(dtype, where)
    if kind in "mM" and arrow_type.bit_width == 64 and dtype.isnative:  # not Date32
        mask = np.isnat(flat) if mask is None else mask | np.isnat(flat)
        flat = flat.view(np.int64)
    mask = mask if mask is not None and mask.any() else None
    try:
        if flat.dtype.kind in "biuf" and dtype.isnative:
            arr = primitive_array(flat, arrow_type, mask)
        else:
            arr = pa.array(flat, mask=mask, type=value_type if kind == "O" else arrow_type)
        return arr if value_type is None or arr.type == value_type else arr.cast(value_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError) as exc:
        want = value_type or arrow_type
        raise errors.InvalidArgumentError(
            f"{where}: cannot convert numpy {dtype} values to Arrow {want}: {exc}"
        ) from exc


def fill_nulls(values: npt.NDArray[Any], mask: Mask | None) -> npt.NDArray[Any]:
    """A copy of ``values`` with nulls filled as xarray and pandas expect: NaN (integers and
    booleans turn float64), NaT for times, None for anything else (no mask: ``values``)."""
    if mask is None:
        return values
    kind = values.dtype.kind
    fill: Any = np.array("NaT", values.dtype) if kind in "mM" else None
    fill = np.nan if kind in "iubf" else fill
    out = values.astype(np.float64 if kind in "iub" else object if fill is None else values.dtype)
    out[mask] = fill
    return out


def arrow_to_numpy(arr: pa.Array) -> tuple[npt.NDArray[Any], Mask | None]:
    """Flat numpy values and null mask (None without nulls) of one Arrow array; fixed-width
    values without nulls are a zero-copy view of Arrow's buffer."""
    if _is_any(arr.type, pat.is_string_view, pat.is_large_string):
        arr = arr.cast(pa.string())
    if arr.null_count == 0:
        return numpy_view(arr), None
    t, mask = arr.type, numpy_view(arr.is_null())
    if (raw := raw_values(arr)) is not None:  # a copy with a filler under the nulls
        out = raw.copy()
        out[mask] = np.array("NaT", raw.dtype) if raw.dtype.kind in "mM" else 0
        return out, mask
    if _is_any(t, pat.is_string, pat.is_binary, pat.is_large_binary):
        arr = pc.fill_null(arr, pa.scalar("" if pat.is_string(t) else b"", t))
    return arr.to_numpy(zero_copy_only=False), mask  # dates and times of day: NaT under nulls


_SIMPLE_ATTRS = (
    (bool | np.bool_, pa.bool_()),
    (int, pa.int64()),
    (float, pa.float64()),
    (str, pa.string()),
    (bytes, pa.binary()),
)


def attr_type(value: object, where: str) -> pa.DataType:
    """The Arrow type one attribute value is written with (FORMAT 6)."""
    if isinstance(value, pa.Scalar):
        return value.type
    for kind, arrow_type in _SIMPLE_ATTRS:  # before numpy: np.float64 is a float, np.str_ a str
        if isinstance(value, kind):
            return arrow_type
    if not isinstance(value, list | tuple | np.generic | np.ndarray):
        raise errors.InvalidAttributeError(
            f"{where}: value {value!r} of type {type(value).__name__} is not supported; "
            "attributes are scalars, strings or 1-D arrays"
        )
    arr = np.asarray(value)
    try:
        item = arrow_type_for_dtype(arr.dtype, where)
    except errors.NdArrowError as exc:
        raise errors.InvalidAttributeError(f"{where}: {exc}") from exc
    if arr.ndim > 1:
        raise errors.InvalidAttributeError(
            f"{where}: value has shape {arr.shape}; attributes are scalars, strings or 1-D arrays"
        )
    return pa.list_(item) if arr.ndim else item


def checked_attrs(attrs: Mapping[str, Any] | None, where: str) -> dict[str, Any]:
    """A copy of one variable's or dataset's attributes, each key and value checked."""
    out = dict(attrs or {})
    for key, value in out.items():
        if not isinstance(key, str):
            raise errors.InvalidAttributeError(
                f"{where}: attribute key {key!r} is a {type(key).__name__}; keys are strings"
            )
        attr_type(value, f"{where} attribute {key!r}")
    return out


def _normalize(value: object) -> object:
    if isinstance(value, pa.Scalar):
        return value.as_py()
    if isinstance(value, list | tuple):
        return np.asarray(value)
    return value[()] if isinstance(value, np.ndarray) and value.ndim == 0 else value


def encode_attrs(rows: Sequence[Mapping[str, Any] | None], where: str = "row") -> Any:
    """One Struct of per-row dicts: a child per key (the rows' keys, first-seen order), null where
    a row lacks it; None without keys. A key has one Arrow type in all rows (FORMAT 6)."""
    children = []
    for key in fmt.merge_keys(r for r in rows if r):
        col: list[object] = []
        key_type, first = None, -1
        for i, r in enumerate(rows):
            if (v := r.get(key) if r else None) is not None:
                t = attr_type(v, f"{where} {i}: attribute {key!r}")
                if key_type is None:
                    key_type, first = t, i
                elif t != key_type:
                    raise errors.InvalidAttributeError(
                        f"{where} {i}: attribute {key!r} has type {t} but {key_type} in {where} "
                        f"{first}; one key has one type in a column: convert the values to one"
                    )
            col.append(None if v is None else _normalize(v))
        try:
            children.append((key, pa.array(col, type=key_type)))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as exc:
            raise errors.InvalidAttributeError(
                f"{where}: attribute {key!r} cannot be stored as {key_type}: {exc}"
            ) from exc
    fields = [pa.field(key, child.type) for key, child in children]
    return pa.StructArray.from_arrays([c for _, c in children], fields=fields) if fields else None


def attr_rows(attrs: pa.StructArray | None) -> Callable[[int], dict[str, Any]]:
    """Row ``i``'s attribute dict of an attrs Struct, each child converted once: numbers,
    booleans and times as numpy scalars (their dtype survives), lists of them as 1-D arrays."""
    # flatten() merges the struct's validity into its children: a null struct row has none.
    children = [] if attrs is None else zip(attrs.type, attrs.flatten(), strict=True)
    getters = [(f.name, numpy_view(c.is_valid()), _getter(c)) for f, c in children]
    return lambda i: {k: get(i) for k, valid, get in getters if valid[i]}


def _getter(child: pa.Array) -> Callable[[int], object]:
    t = child.type
    if _is_any(t, *_NUMBERS):
        return arrow_to_numpy(child)[0].__getitem__  # type: ignore[no-any-return]
    lists = (pat.is_list, pat.is_large_list, pat.is_fixed_size_list)
    if _is_any(t, *lists) and _is_any(t.value_type, *_NUMBERS, pat.is_string):
        child = child.cast(pa.list_(t.value_field)) if pat.is_fixed_size_list(t) else child
        flat, off = arrow_to_numpy(child.values)[0], numpy_view(child.offsets)
        return lambda i: flat[off[i] : off[i + 1]].copy()
    return child.to_pylist().__getitem__  # type: ignore[no-any-return]


def attrs_equal(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Equality of attribute dicts: same keys, equal values (NaN equals NaN, arrays elementwise)."""

    def same(x: Any, y: Any) -> bool:
        x, y = np.asarray(x), np.asarray(y)
        return bool(np.array_equal(x, y, equal_nan=x.dtype.kind == "f" == y.dtype.kind))

    return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)


_CHILDREN = (fmt.VALUES_FIELD, fmt.DIM_NAMES_FIELD, fmt.DIM_SIZES_FIELD, fmt.ATTRS_FIELD)
NAMES_TYPE = pa.list_(pa.field(fmt.ITEM_FIELD, pa.string(), nullable=False))
SIZES_TYPE = pa.list_(pa.field(fmt.ITEM_FIELD, pa.uint32(), nullable=False))


def storage_type(
    value_type: pa.DataType, attr_fields: Sequence[pa.Field] = (), *, values_nullable: bool = True
) -> pa.StructType:
    """The storage type written (FORMAT 3): non-nullable children ``values: List<item: T>``,
    ``dim_names: List<item: Utf8 not null>``, ``dim_sizes: List<item: UInt32 not null>`` and,
    with attributes, ``attrs: Struct {key: any, ...}`` of nullable members."""
    values = pa.list_(pa.field(fmt.ITEM_FIELD, value_type, nullable=values_nullable))
    types = [values, NAMES_TYPE, SIZES_TYPE]
    if attr_fields:
        types.append(pa.struct([f.with_nullable(True) for f in attr_fields]))
    fields = zip(_CHILDREN, types, strict=False)
    return pa.struct([pa.field(name, t, nullable=False) for name, t in fields])


class StorageLayout(NamedTuple):
    """What a storage type says: the values item field and the attribute fields."""

    value_field: pa.Field
    attr_fields: tuple[pa.Field, ...]


def parse_storage_type(t: pa.DataType) -> StorageLayout:
    """Check a storage type against the layout (FORMAT 3/1, 3/2, 6/1). Readers also accept other
    item names, nullable children and items, LargeList / ListView children, LargeUtf8 / Utf8View
    names and a zero-field ``attrs``."""
    where = "nd_arrow.array storage"
    if not pat.is_struct(t):
        raise errors.InvalidEncodingError(
            f"{where} must be a Struct of values, dim_names, dim_sizes[, attrs]; got {t} "
            "(FORMAT 3/1)"
        )
    names, expected = [f.name for f in t], list(_CHILDREN[:3])
    if names[:3] != expected or names[3:] not in ([], [fmt.ATTRS_FIELD]):
        raise errors.InvalidEncodingError(
            f"{where} children are {names}; the layout requires exactly {expected} in this "
            f"order, optionally followed by {fmt.ATTRS_FIELD!r} (FORMAT 3/1)"
        )

    def refuse(child: str, what: str, want: str) -> errors.InvalidEncodingError:
        return errors.InvalidEncodingError(
            f"{where} child {child!r} has {what}; {want} (FORMAT 3/2)"
        )

    for f in list(t)[:3]:
        if not _is_any(f.type, *_LISTS):
            raise refuse(f.name, f"type {f.type}", "it must be a List")
    name_type, size_type = t.field(1).type.value_type, t.field(2).type.value_type
    if not _is_any(name_type, *_STRINGS):
        raise refuse("dim_names", f"items of type {name_type}", "they must be Utf8")
    if size_type != pa.uint32():
        raise refuse("dim_sizes", f"items of type {size_type}", "they must be UInt32")
    attrs_type = t.field(3).type if len(names) == 4 else pa.struct([])
    if not pat.is_struct(attrs_type):
        raise refuse("attrs", f"type {attrs_type}", "it must be a Struct")
    keys = [f.name for f in attrs_type]
    if twice := [key for key in keys if keys.count(key) > 1]:
        raise errors.InvalidEncodingError(
            f"{where} child 'attrs' has the key {twice[0]!r} twice; keys are unique (FORMAT 6/1)"
        )
    return StorageLayout(t.field(0).type.value_field, tuple(attrs_type))


class RowShape(NamedTuple):
    """The shape all rows of a column share: ``(64, 64)`` is ``RowShape(64, (64,))``, rows of
    (n, 2) are ``RowShape(None, (2,))``."""

    first: int | None  # the first size, None where it varies
    inner: tuple[int, ...]  # the other sizes


@dataclass(frozen=True)
class StorageParts:
    """A checked storage array taken apart into numpy offsets and flat Arrow children."""

    storage: pa.StructArray
    layout: StorageLayout
    valid: Mask  # per row: False for a null row
    values: pa.Array  # flat values child (not sliced to the rows)
    value_offsets: Ints  # len n+1, into ``values``
    dim_offsets: Ints  # len n+1, into ``sizes`` and ``name_codes``
    sizes: Ints  # flat dim sizes
    name_codes: Ints  # flat indices into ``name_dict``
    name_dict: list[str]
    row_shape: RowShape | None  # the shape every row shares (see row_shape), or None

    def __len__(self) -> int:
        return len(self.valid)

    @property
    def null_count(self) -> int:
        return int(len(self.valid) - np.count_nonzero(self.valid))

    @property
    def attrs(self) -> pa.StructArray | None:
        """The attributes sliced to the rows; None without attributes."""
        return self.storage.field(3) if self.layout.attr_fields else None


def uniform_rank(dim_offsets: Ints, valid: Mask) -> int | None:
    """The rank of every row when all rows are valid and laid out back to back (row i's
    dimensions start at ``dim_offsets[0] + i * rank``); None otherwise and for zero rows."""
    n, off0 = len(valid), int(dim_offsets[0])
    if n == 0 or not valid.all():
        return None
    r, rest = divmod(int(dim_offsets[-1]) - off0, n)
    return None if rest or not np.array_equal(dim_offsets, off0 + r * np.arange(n + 1)) else r


def row_shape(sizes: Ints, dim_offsets: Ints, rank: int | None) -> RowShape | None:
    """The shape every row shares (see :class:`RowShape`), given the :func:`uniform_rank` of the
    rows; None without one, for rank 0, or where sizes after the first differ."""
    if not rank:
        return None
    off0, n = int(dim_offsets[0]), len(dim_offsets) - 1
    block = sizes[off0 : off0 + n * rank].reshape(n, rank)
    first = block[0].tolist()
    # Column by column: a compare broadcast over short rows is many times slower.
    if not all((block[:, j] == first[j]).all() for j in range(1, rank)):
        return None
    return RowShape(first[0] if (block[:, 0] == first[0]).all() else None, tuple(first[1:]))


def assemble(
    values: pa.Array,
    counts: Ints,
    ranks: Ints | int,
    sizes: npt.NDArray[Any],
    names: Sequence[str],
    codes: Ints | None = None,
    null_rows: Mask | None = None,
    attrs: pa.StructArray | None = None,
) -> StorageParts:
    """Storage in the writer's layout, and its parts, from flat children and the non-null rows'
    value counts and ranks (an int: every row's); null rows own nothing. ``codes`` index
    ``names`` (default: every row has them). For writers, who checked the rules: checking what
    they build would repeat their checks."""
    rows = ~null_rows if null_rows is not None and null_rows.any() else None
    valid = np.ones(len(counts), np.bool_) if rows is None else rows
    value_offsets = fmt.offsets_of(counts, np.int64, rows)
    dim_offsets = fmt.offsets_of(np.broadcast_to(ranks, len(counts)), np.int64, rows)
    fmt.check_int32(int(value_offsets[-1]), "values", "nd column")
    fmt.check_int32(int(dim_offsets[-1]), "dimensions", "nd column")
    if codes is None:
        codes = np.tile(np.arange(len(names), dtype=np.int64), int(np.count_nonzero(valid)))
    attr_fields = () if attrs is None else tuple(attrs.type)
    st = storage_type(values.type, attr_fields)
    sizes = np.asarray(sizes, np.int64)
    names_child = string_array(names).take(primitive_array(codes, pa.int64()))
    sizes_child = primitive_array(sizes.astype(np.uint32), pa.uint32())
    offsets = (value_offsets, dim_offsets, dim_offsets)
    children = [
        pa.ListArray.from_arrays(primitive_array(o.astype(np.int32), pa.int32()), c, type=f.type)
        for o, c, f in zip(offsets, (values, names_child, sizes_child), st, strict=False)
    ]
    children += [] if attrs is None else [attrs]
    mask = None if rows is None else primitive_array(~rows, pa.bool_())
    storage = pa.StructArray.from_arrays(children, fields=list(st), mask=mask)
    shape = row_shape(sizes, dim_offsets, uniform_rank(dim_offsets, valid))
    layout = StorageLayout(st.field(0).type.value_field, attr_fields)
    parts = (storage, layout, valid, values, value_offsets, dim_offsets, sizes, codes, list(names))
    return StorageParts(*parts, shape)


def validate_storage(storage: Any, where: str = "nd column", layout: Any = None) -> StorageParts:
    """Check a storage array against every rule of FORMAT 3, 4 and 6, naming the first offending
    row (null rows carry no meaning), and take it apart; what all rows share (one rank, names,
    shape) is checked once. ``layout`` is the parsed storage type where the caller has it."""
    layout = parse_storage_type(storage.type) if layout is None else layout
    try:  # Arrow's own structural checks: offsets within their children (FORMAT 4/6), UTF-8
        storage.validate(full=True)
    except pa.ArrowInvalid as exc:
        raise errors.InvalidEncodingError(
            f"{where}: the storage is not valid Arrow data ({exc}); list offsets must stay "
            "within their child arrays (FORMAT 4/6)"
        ) from exc
    valid = valid_rows(storage)
    values, value_offsets = _list(storage.field(0), valid, fmt.VALUES_FIELD, where)
    names, name_offsets = _list(storage.field(1), valid, fmt.DIM_NAMES_FIELD, where)
    sizes_child, dim_offsets = _list(storage.field(2), valid, fmt.DIM_SIZES_FIELD, where)
    rank = np.where(valid, np.diff(dim_offsets), 0)
    uniform = uniform_rank(dim_offsets, valid)
    same_layout = np.array_equal(name_offsets, dim_offsets)
    name_counts = np.where(valid, np.diff(name_offsets), 0)
    if (uniform is None or not same_layout) and (bad := name_counts != rank).any():
        i = int(np.argmax(bad))
        raise errors.InvalidDimensionsError(
            f"{where}: row {i} has {int(name_counts[i])} dimension names but {int(rank[i])} "
            "sizes; dim_names and dim_sizes must have one entry per axis (FORMAT 4/1)"
        )
    sizes = numpy_view(sizes_child).astype(np.int64, copy=False)
    shape = row_shape(sizes, dim_offsets, uniform)
    starts = np.where(valid, dim_offsets[:-1], 0)
    _check_value_counts(np.diff(value_offsets), sizes, starts, rank, valid, shape, where)
    names = names if pat.is_string(names.type) else names.cast(pa.string())
    uniform = uniform if same_layout else None
    codes, name_dict = _name_codes(names, name_offsets, rank, valid, uniform, where)
    if not same_layout:  # codes laid out like the sizes, so that one set of offsets serves both
        aligned = np.zeros(int(np.max(dim_offsets, initial=0)), np.int64)
        src = fmt.range_positions(np.where(valid, name_offsets[:-1], 0), rank)
        aligned[fmt.range_positions(starts, rank)] = codes[src]
        codes = aligned
    parts = (storage, layout, valid, values, value_offsets, dim_offsets, sizes, codes, name_dict)
    return StorageParts(*parts, shape)


def _list(arr: pa.Array, valid: Mask, name: str, where: str) -> tuple[pa.Array, Ints]:
    """(flat child, int64 offsets) of a list child, with no null list (FORMAT 4/5, 4/2) and no
    null name or size (4/2) in a valid row; ListViews are compacted."""
    if arr.null_count and (bad := valid & numpy_view(arr.is_null())).any():
        raise errors.InvalidEncodingError(
            f"{where}: row {np.argmax(bad)} is not null but its {name!r} list is null; only whole "
            f"rows may be null (FORMAT {'4/5' if name == fmt.VALUES_FIELD else '4/2'})"
        )
    if _is_any(arr.type, pat.is_list_view, pat.is_large_list_view):
        # Compacted into one flat child (casting ListView to List is broken in some pyarrow
        # releases); null views contribute nothing.
        lengths = numpy_view(arr.sizes).astype(np.int64)
        lengths[numpy_view(arr.is_null())] = 0
        child, offsets = pc.list_flatten(arr), fmt.offsets_of(lengths)
    else:
        child, offsets = arr.values, numpy_view(arr.offsets).astype(np.int64, copy=False)
    if name != fmt.VALUES_FIELD and child.null_count and len(valid):
        null_pos = np.flatnonzero(numpy_view(child.is_null()))
        rows = np.clip(np.searchsorted(offsets, null_pos, side="right") - 1, 0, len(valid) - 1)
        bad = valid[rows] & (offsets[rows] <= null_pos) & (null_pos < offsets[rows + 1])
        if bad.any():
            raise errors.InvalidEncodingError(
                f"{where}: row {int(rows[np.argmax(bad)])} has a null item in {name!r}; dimension "
                "names and sizes are never null (FORMAT 4/2)"
            )
    return child, offsets


def _check_value_counts(
    lengths: Ints, sizes: Ints, starts: Ints, rank: Ints, valid: Mask, shape: Any, where: str
) -> None:
    """Every row's non-zero sizes multiply within int64, and all its sizes to its number of
    values (FORMAT 4/4); row ``i``'s sizes are ``sizes[starts[i]:][:rank[i]]``."""
    products = None
    if shape is not None:  # one rank and inner shape (the common case): one product per row
        firsts = sizes[starts] if shape.first is None else np.full(len(valid), shape.first)
        bound = max(int(np.max(firsts, initial=1)), 1) * math.prod(max(s, 1) for s in shape.inner)
        if bound <= fmt.INT64_MAX:
            products, overflow = firsts * math.prod(shape.inner), np.zeros(len(valid), np.bool_)
    if products is None:
        products, overflow = fmt.size_products(sizes, starts, starts + rank)

    def row_sizes(i: int) -> list[int]:
        return sizes[starts[i] : starts[i] + rank[i]].tolist()  # type: ignore[no-any-return]

    if overflow.any():
        i = int(np.argmax(overflow))
        raise errors.InvalidDimensionsError(
            f"{where}: row {i} has dimension sizes {row_sizes(i)} whose non-zero sizes multiply "
            "past int64; no array has that shape (FORMAT 4/4)"
        )
    if (bad := valid & (lengths != products)).any():
        i = int(np.argmax(bad))
        raise errors.ShapeMismatchError(
            f"{where}: row {i} has {int(lengths[i])} values but dimension sizes {row_sizes(i)} "
            f"(product {int(products[i])}); the number of values must equal the product of the "
            "sizes (1 for rank 0) (FORMAT 4/4)"
        )


def _name_codes(
    names: pa.Array, name_offsets: Ints, rank: Ints, valid: Mask, uniform: int | None, where: str
) -> tuple[Ints, list[str]]:
    """Every name as a code into the distinct names, and those names, each row's names checked
    to be non-empty and unique (FORMAT 4/3). ``uniform``: every row has that many names, back
    to back."""
    n, off0, r = len(valid), int(name_offsets[0]), uniform
    if r is not None and names.slice(off0 + r, (n - 1) * r).equals(names.slice(off0, (n - 1) * r)):
        # Every row repeats row 0's names (the common case): check that row once.
        row: list[str] = names.slice(off0, r).to_pylist()
        name_dict = list(dict.fromkeys(row))
        row_codes = np.array([name_dict.index(x) for x in row], np.int64)
        _check_names(row_codes, np.array([r]), name_dict, where)
        return np.concatenate([np.zeros(off0, np.int64), np.tile(row_codes, n)]), name_dict
    encoded = pc.dictionary_encode(names)
    codes = raw_values(encoded.indices).astype(np.int64)  # type: ignore[union-attr]
    name_dict = encoded.dictionary.to_pylist()
    positions = fmt.range_positions(np.where(valid, name_offsets[:-1], 0), rank)
    _check_names(codes[positions], rank, name_dict, where)
    return codes, name_dict


def _check_names(codes: Ints, rank: Ints, name_dict: list[str], where: str) -> None:
    """``codes`` are the rows' names back to back, ``rank[i]`` of them for row ``i``."""
    row_of = fmt.range_ids(rank)
    if "" in name_dict and (empty := codes == name_dict.index("")).any():
        raise errors.InvalidDimensionsError(
            f"{where}: row {int(row_of[np.argmax(empty)])} has an empty dimension name; names must "
            "not be empty (FORMAT 4/3)"
        )
    nd = max(len(name_dict), 1)
    keys = np.sort(row_of * nd + codes)
    if len(dup := np.flatnonzero(keys[1:] == keys[:-1])):
        k = int(keys[dup[0]])
        raise errors.InvalidDimensionsError(
            f"{where}: row {k // nd} has the dimension name {name_dict[k % nd]!r} twice; names "
            "must be unique within a row (FORMAT 4/3)"
        )
