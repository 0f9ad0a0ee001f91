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

from nd_arrow.errors import InvalidArgumentError, NotSupportedError

__all__ = [
    "arrow_to_numpy",
    "arrow_type_for_dtype",
    "fill_nulls",
    "is_string_dtype",
    "numpy_to_arrow",
    "primitive_array",
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
    if pa.types.is_boolean(t):
        return pa.scalar(False, t)
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return pa.scalar(0, t) if not pa.types.is_float16(t) else None
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
        return _plain_numpy(arr), None
    mask = arr.is_null().to_numpy(zero_copy_only=False)
    if pa.types.is_float16(t):
        data = _plain_numpy(arr)
        return np.where(mask, np.float16(0), data), mask
    if pa.types.is_temporal(t):
        # Nulls come back as NaT, numpy's own missing-time marker.
        return arr.to_numpy(zero_copy_only=False), mask
    fill = _fill_scalar(t)
    if fill is not None:
        data = _plain_numpy(pc.fill_null(arr, fill))
    else:
        data = arr.to_numpy(zero_copy_only=False)
    return data, mask


def _plain_numpy(arr: pa.Array) -> npt.NDArray[Any]:
    t = arr.type
    if pa.types.is_float16(t):
        # to_numpy of halffloat is not zero-copy on every supported pyarrow; view the buffer.
        buf = arr.buffers()[1]
        if buf is None:
            return np.zeros(0, np.float16)
        return np.frombuffer(buf, dtype=np.float16)[arr.offset : arr.offset + len(arr)]
    out: npt.NDArray[Any] = arr.to_numpy(zero_copy_only=False)
    return out
