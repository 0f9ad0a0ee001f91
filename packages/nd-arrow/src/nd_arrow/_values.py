"""Conversion of flat element values between numpy and Arrow.

Numeric, boolean and temporal values map to their Arrow primitive types without copies where
Arrow's layout allows it; strings become ``utf8`` and bytes ``binary``. Element nulls travel as a
boolean mask on the numpy side (True = null) and as the validity buffer on the Arrow side. NaT is
numpy's missing-time marker and Arrow has none, so NaT is written as null and a null time reads
back as NaT under the mask. NaN is an ordinary float value.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from nd_arrow._format import INT32_MAX
from nd_arrow._ragged import offsets_of
from nd_arrow.errors import InvalidArgumentError, NotSupportedError

__all__ = [
    "arrow_to_numpy",
    "arrow_type_for_dtype",
    "fill_nulls",
    "is_string_dtype",
    "numpy_to_arrow",
    "numpy_view",
    "primitive_array",
    "string_array",
]

_TIME_UNITS = ("s", "ms", "us", "ns")


def is_string_dtype(dtype: np.dtype[Any]) -> bool:
    """True for numpy str dtypes (``U``, numpy 2's ``StringDType``) and object (assumed str)."""
    return dtype.kind in ("U", "T", "O")


def arrow_type_for_dtype(dtype: np.dtype[Any], where: str = "values") -> pa.DataType:
    """The Arrow value type written for a numpy dtype."""
    kind = dtype.kind
    if kind in ("b", "i", "u", "f"):
        return pa.from_numpy_dtype(dtype)
    if kind in ("M", "m"):
        unit, count = np.datetime_data(dtype)
        if unit == "D" and kind == "M" and count == 1:
            return pa.date32()
        if unit not in _TIME_UNITS or count != 1:
            raise NotSupportedError(
                f"{where}: numpy {dtype} has unit {unit!r}; Arrow timestamps and durations use "
                f"s, ms, us or ns. Convert with .astype('{kind}8[ns]') first"
            )
        return pa.timestamp(unit) if kind == "M" else pa.duration(unit)
    if kind in ("U", "T", "O"):
        return pa.string()
    if kind == "S":
        return pa.binary()
    raise NotSupportedError(
        f"{where}: numpy dtype {dtype} has no Arrow value type in nd-arrow; use a numeric, bool, "
        "datetime64, timedelta64 or string dtype (complex numbers: store real and imag apart)"
    )


_NUMPY_OF: dict[pa.DataType, np.dtype[Any]] = {
    t: np.dtype(d)
    for t, d in (
        (pa.int8(), np.int8),
        (pa.int16(), np.int16),
        (pa.int32(), np.int32),
        (pa.int64(), np.int64),
        (pa.uint8(), np.uint8),
        (pa.uint16(), np.uint16),
        (pa.uint32(), np.uint32),
        (pa.uint64(), np.uint64),
        (pa.float16(), np.float16),
        (pa.float32(), np.float32),
        (pa.float64(), np.float64),
    )
}


def _raw_values(arr: pa.Array) -> npt.NDArray[Any] | None:
    """The values buffer of a fixed-width array as numpy, whatever the validity says (zero-copy,
    read-only; booleans unpacked): numbers, timestamps and durations. None for other types."""
    t = arr.type
    n = len(arr)
    data = arr.buffers()[1] if n else None
    if pa.types.is_boolean(t):
        if data is None:
            return np.zeros(0, np.bool_)
        bits = np.unpackbits(np.frombuffer(data, np.uint8), bitorder="little")
        return bits[arr.offset : arr.offset + n].astype(np.bool_)
    dtype = _NUMPY_OF.get(t)
    if dtype is None and (pa.types.is_timestamp(t) or pa.types.is_duration(t)):
        dtype = np.dtype(f"{'M' if pa.types.is_timestamp(t) else 'm'}8[{t.unit}]")
    if dtype is None:
        return None
    if data is None:
        return np.zeros(0, dtype)
    return np.frombuffer(data, dtype, count=n, offset=arr.offset * dtype.itemsize)


def numpy_view(arr: pa.Array) -> npt.NDArray[Any]:
    """``arr.to_numpy(zero_copy_only=False)``, read from the buffers where Arrow's layout is
    numpy's (fixed-width numbers, timestamps and durations without nulls; booleans unpacked).

    Zero-copy (read-only) like pyarrow's, and it never imports pandas, which pyarrow's
    ``to_numpy`` does on its first call where pandas is installed. Anything else falls back to it.
    """
    if arr.null_count == 0:
        raw = _raw_values(arr)
        if raw is not None:
            return raw
    out: npt.NDArray[Any] = arr.to_numpy(zero_copy_only=False)
    return out


def primitive_array(
    values: npt.NDArray[Any], arrow_type: pa.DataType, mask: npt.NDArray[np.bool_] | None = None
) -> pa.Array:
    """A fixed-width Arrow array over a flat native-endian numpy array, built from its buffers.

    No copy for numbers (booleans are bit-packed), and unlike ``pa.array`` this never imports
    pandas (which costs seconds on the first call where pandas is installed). ``values`` must
    already have the layout of ``arrow_type`` (the caller picks the type); ``mask`` is True = null.
    """
    n = len(values)
    validity = None
    null_count = 0
    if mask is not None:
        null_count = int(np.count_nonzero(mask))
        if null_count:
            validity = pa.py_buffer(np.packbits(~mask, bitorder="little"))
    if values.dtype.kind == "b":
        data = pa.py_buffer(np.packbits(values, bitorder="little"))
    else:
        data = pa.py_buffer(np.ascontiguousarray(values))
    return pa.Array.from_buffers(arrow_type, n, [validity, data], null_count=null_count)


def string_array(strings: list[str], where: str = "nd column") -> pa.Array:
    """A Utf8 array of Python strings, built from buffers (``pa.array`` would import pandas)."""
    encoded = [x.encode("utf-8") for x in strings]
    lengths = np.fromiter(map(len, encoded), np.int64, len(encoded))
    total = int(lengths.sum())
    if total > INT32_MAX:
        raise InvalidArgumentError(
            f"{where}: {total} bytes of strings exceed the 2**31 - 1 one Utf8 array can hold; "
            "split the arrays over several columns or record batches"
        )
    offsets = pa.py_buffer(offsets_of(lengths, np.int32))
    return pa.StringArray.from_buffers(len(encoded), offsets, pa.py_buffer(b"".join(encoded)))


def _from_buffers(flat: npt.NDArray[Any], mask: npt.NDArray[np.bool_] | None) -> pa.Array | None:
    """``flat`` as an Arrow array built from buffers, or None where ``pa.array`` is needed."""
    kind = flat.dtype.kind
    if flat.ndim != 1 or not flat.dtype.isnative:
        return None
    if kind in "biuf":
        return primitive_array(flat, pa.from_numpy_dtype(flat.dtype), mask)
    if kind in "mM":
        unit, count = np.datetime_data(flat.dtype)
        if unit not in _TIME_UNITS or count != 1:
            return None  # dates (and odd units) go through pa.array
        nat = np.isnat(flat)
        if nat.any():
            mask = nat if mask is None else (mask | nat)
        arrow_type = pa.timestamp(unit) if kind == "M" else pa.duration(unit)
        return primitive_array(flat.view(np.int64), arrow_type, mask)
    return None


def numpy_to_arrow(
    flat: npt.NDArray[Any],
    mask: npt.NDArray[np.bool_] | None,
    value_type: pa.DataType | None = None,
    where: str = "values",
) -> pa.Array:
    """One flat Arrow array from a flat numpy array and an optional null mask (True = null).

    Numeric input without a mask and without a cast is wrapped without copying.
    """
    target = arrow_type_for_dtype(flat.dtype, where) if value_type is None else None
    if flat.dtype.kind == "T":
        flat = flat.astype(object)
    if mask is not None and not mask.any():
        mask = None
    fast = _from_buffers(flat, mask)
    try:
        if target is not None:
            if fast is not None:
                return fast
            if flat.dtype.kind == "M" and target == pa.date32():
                arr = pa.array(flat, mask=mask, type=pa.date32())
            elif flat.dtype.kind == "O":
                arr = pa.array(flat, mask=mask, type=target, from_pandas=False)
            else:
                arr = pa.array(flat, mask=mask)
            return arr
        natural = fast
        if natural is None and flat.dtype.kind != "O":
            natural = pa.array(flat, mask=mask)
        if natural is not None:
            return natural if natural.type == value_type else natural.cast(value_type)
        return pa.array(flat, mask=mask, type=value_type, from_pandas=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError) as exc:
        want = value_type if value_type is not None else target
        raise InvalidArgumentError(
            f"{where}: cannot convert numpy {flat.dtype} values to Arrow {want}: {exc}"
        ) from exc


def fill_nulls(values: npt.NDArray[Any], mask: npt.NDArray[np.bool_] | None) -> npt.NDArray[Any]:
    """Values with nulls filled as xarray and pandas expect: NaN (integers and booleans turn
    float64), NaT for times, None for anything else. Without a mask the values come back as they
    are."""
    if mask is None:
        return values
    kind = values.dtype.kind
    if kind in "iub":
        out = values.astype(np.float64)
        out[mask] = np.nan
    elif kind == "f":
        out = values.copy()
        out[mask] = np.nan
    elif kind in "mM":
        out = values.copy()
        out[mask] = np.array("NaT", dtype=values.dtype)
    else:
        out = values.astype(object)
        out[mask] = None
    return out


def _fill_scalar(t: pa.DataType) -> pa.Scalar | None:
    """The filler under nulls of variable-width values (fixed-width ones are filled in numpy)."""
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.scalar("", t)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.scalar(b"", t)
    return None


def arrow_to_numpy(arr: pa.Array) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_] | None]:
    """Flat numpy values and null mask (None when there are no nulls) of one Arrow array.

    Fixed-width values without nulls are returned as a zero-copy view of Arrow's buffer.
    """
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    t = arr.type
    if pa.types.is_string_view(t) or pa.types.is_large_string(t):
        arr = arr.cast(pa.string())
        t = arr.type
    if arr.null_count == 0:
        return numpy_view(arr), None
    mask = numpy_view(arr.is_null())
    raw = _raw_values(arr)
    if raw is not None:
        # Fixed width: a copy of the buffer with a filler under the nulls: NaT for times (numpy's
        # own missing-time marker), else zero / False.
        out = raw.copy()
        out[mask] = np.array("NaT", raw.dtype) if raw.dtype.kind in "mM" else 0
        return out, mask
    if pa.types.is_temporal(t):
        # Dates and times of day: nulls come back as NaT from pyarrow's conversion.
        return arr.to_numpy(zero_copy_only=False), mask
    fill = _fill_scalar(t)
    if fill is not None:
        data = numpy_view(pc.fill_null(arr, fill))
    else:
        data = arr.to_numpy(zero_copy_only=False)
    return data, mask
