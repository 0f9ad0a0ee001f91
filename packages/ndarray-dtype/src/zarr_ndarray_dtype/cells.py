"""One cell, the ndarray held by one array element (pure numpy): :func:`coerce_cell`, the
conversion rule (SPEC 1.2, :func:`convert`, applied to a whole block of values at once) and the
bool-byte rule."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype.errors import CellError, CellTypeError
from zarr_ndarray_dtype.pattern import ShapePattern

# The rest (coerce_cell, convert, check_bool_bytes, ...) is the package's own vocabulary.
__all__ = ["unbox"]

_CAST_HINT = "convert the values explicitly (e.g. np.round / np.clip / .astype) if that is intended"


def unbox(value: object) -> object:
    """Peel 0-d object-array wrappers (zarr wraps scalar reads in them); else return as is."""
    while isinstance(value, np.ndarray) and value.dtype == object and value.ndim == 0:
        value = value[()]
    return value


def cell_array(
    data: object, pattern: ShapePattern, target: np.dtype[Any], subject: str = "cell"
) -> np.ndarray:
    """``data`` (an ndarray or nested sequences, maybe in zarr's 0-d wrappers) as an ndarray
    of its own dtype; ``None`` and ``[]`` are the empty cell; ``subject`` names it in errors."""
    data = unbox(data)
    if data is None:
        if pattern.is_fixed:
            raise CellError(
                f"{subject} is None: None is not a cell of the all-fixed pattern {pattern}, whose "
                f"every element has shape {pattern.empty_shape}; pass an array of that shape."
            )
        return np.empty(pattern.empty_shape, dtype=target)
    if isinstance(data, np.ndarray) and data.dtype != object:
        arr = data
    elif isinstance(data, str | bytes | dict | set):
        raise CellTypeError(
            f"{subject} is a {type(data).__name__}; a cell must be an ndarray or a nested "
            f"sequence of numbers matching pattern {pattern}."
        )
    else:
        arr = numbers(data.tolist() if isinstance(data, np.ndarray) else data, subject, target)
    if arr.size == 0 and arr.ndim == 1 and pattern.variable_axes:
        return np.empty(pattern.empty_shape, dtype=target)
    return arr


def numbers(data: object, subject: str, target: np.dtype[Any]) -> np.ndarray:
    """Numbers in nested sequences as an array of their own dtype. Python ints that no 64-bit
    dtype holds together (numpy makes floats or objects of them) stay exact, or the first one
    ``target`` (or float64, beside floats) cannot hold is refused, named."""
    try:
        arr = np.asarray(data)
    except (ValueError, TypeError, OverflowError) as exc:
        raise CellError(
            f"{subject} is not a rectangular array of numbers ({exc}); each cell must have one "
            "shape matching the pattern."
        ) from exc
    big = arr.dtype.kind == "f" and bool((np.abs(arr) >= 2**53).any())  # NaN is not big
    if arr.dtype != object and not big:
        return arr
    items = (arr if arr.dtype == object else np.array(data, dtype=object)).reshape(-1).tolist()
    ints = [v for v in items if isinstance(v, int) and not isinstance(v, bool)]
    if ints and len(ints) == len(items):
        for wide in (np.int64, np.uint64):
            if np.iinfo(wide).min <= min(ints) and max(ints) <= np.iinfo(wide).max:
                return np.array(ints, dtype=wide).reshape(arr.shape)
    elif arr.dtype == object:
        raise CellTypeError(
            f"{subject} does not convert to a numeric array (numpy made an object array: ragged "
            "rows or non-numbers, not a rectangular array); cells must match the pattern."
        )
    within = target if len(ints) == len(items) else np.dtype(np.float64)
    for value in ints:
        rule = _unheld(value, within)
        if rule is not None:
            raise CellTypeError(f"{subject} holds the integer {value}, {rule}; {_CAST_HINT}.")
    return arr if arr.dtype != object else np.array(ints, dtype=np.float64).reshape(arr.shape)


def _unheld(value: int, target: np.dtype[Any]) -> str | None:
    """Why ``target`` cannot hold the Python int ``value`` exactly; None when it can."""
    if target.kind in "biu":
        low, high = (0, 1) if target.kind == "b" else (np.iinfo(target).min, np.iinfo(target).max)
        return None if low <= value <= high else _out_of_range(low, high, target)
    try:
        with np.errstate(over="ignore"):
            stored = int(target.type(value).real)
    except OverflowError:
        return _too_large(target)
    return None if stored == value else _inexact(target, stored)


def _too_large(target: np.dtype[Any]) -> str:
    return f"too large for the element dtype {target.name} (it would be inf)"


def _out_of_range(low: int, high: int, target: np.dtype[Any]) -> str:
    return f"out of range (outside the range [{low}, {high}] of {target.name})"


def _inexact(target: np.dtype[Any], stored: int) -> str:
    return (
        f"which {target.name} cannot hold exactly (it would be stored as {stored}; integers "
        "convert to a float only when exact); use a wider element dtype, an integer one for IDs"
    )


def lossy(src: np.ndarray, out: np.ndarray) -> tuple[int, str] | None:
    """The first item whose value ``out = src.astype(...)`` changed and the rule it breaks, or
    None (SPEC 1.2): integers and bools convert in range, integers to floats only when exact,
    floats round to nearest unless they overflow, complex never to real."""
    kind, target = src.dtype.kind, out.dtype
    if kind == "c" and target.kind != "c" and src.size:
        return 0, (
            f"is complex ({src.dtype}) but the element dtype is {target.name}: dropping the "
            "imaginary part would lose data"
        )
    if not src.size or kind == "b" or src.dtype == target:
        return None
    if target.kind == "b":
        bad = (src != 0) & (src != 1)
        return _first(src, bad, "but bool elements hold no values other than 0 and 1")
    if target.kind in "iu":
        info = np.iinfo(target)
        if kind in "iu":
            if info.min <= int(src.min()) and int(src.max()) <= info.max:
                return None
            bad = (src < info.min) | (src > info.max)
        else:  # float to integer: finite, integral and in range (bounds exact in float)
            with np.errstate(all="ignore"):  # bounds beyond float16 are its infinities
                bad = ~(np.isfinite(src) & (src >= float(info.min)) & (src < float(info.max) + 1))
                bad |= out.astype(src.dtype) != src
        if not bad.any():
            return None
        first = int(np.argmax(bad))
        value = src[first].item()
        if kind == "f" and not np.isfinite(value):
            rule = f"which the integer element dtype {target.name} cannot hold (NaN or infinity)"
        elif kind == "f" and value != int(value):
            rule = f"whose fractional part {target.name} would truncate"
        else:
            rule = _out_of_range(info.min, info.max, target)
        return first, f"holds {value!r}, {rule}"
    if kind in "fc":  # to a float or complex: round to nearest, never overflow
        width = target.itemsize // (2 if target.kind == "c" else 1)
        if width >= src.dtype.itemsize // (2 if kind == "c" else 1):
            return None
        bad = np.isinf(out) & ~np.isinf(src)
        return _first(src, bad, _too_large(target))
    return _inexact_integers(src, out)


def _inexact_integers(src: np.ndarray, out: np.ndarray) -> tuple[int, str] | None:
    """Integers a float (or complex) element dtype would overflow or round: all below 2**p (p
    its significand bits) are exact; each above is compared exactly."""
    target = out.dtype
    overflow = np.isinf(out)  # float16 is narrower than uint16, int32, ...
    if overflow.any():
        return _first(src, overflow, _too_large(target))
    bits = np.finfo(target).nmant + 1
    if src.dtype.itemsize * 8 - (src.dtype.kind == "i") <= bits:
        return None
    if -(2**bits) <= int(src.min()) and int(src.max()) <= 2**bits:
        return None
    for i in np.flatnonzero(np.abs(out.real) >= 2.0**bits).tolist():
        if int(out[i].real) != int(src[i]):
            return i, f"holds the integer {int(src[i])}, {_inexact(target, int(out[i].real))}"
    return None


def _first(src: np.ndarray, bad: np.ndarray, rule: str) -> tuple[int, str] | None:
    if not bad.any():
        return None
    first = int(np.argmax(bad))
    return first, f"holds {src[first].item()!r}, {rule}"


def coerce_cell(data: object, pattern: ShapePattern, dtype: np.dtype[Any]) -> np.ndarray:
    """``data`` as a C-contiguous little-endian ``dtype`` array matching ``pattern``; else
    CellError (a shape) or CellTypeError (values the element dtype cannot hold exactly)."""
    arr = cell_array(data, pattern, dtype)
    if not pattern.matches(arr.shape):
        raise CellError(mismatch("cell", arr.shape, pattern))
    return convert(arr, dtype, f"cell of shape {arr.shape} and dtype {arr.dtype}")


def mismatch(subject: str, shape: tuple[int, ...], pattern: ShapePattern) -> str:
    """The message for a cell of ``shape`` that does not match ``pattern``."""
    return (
        f"{subject} has shape {shape}, which does not match pattern {pattern}: expected shape "
        f"matching it ({pattern.ndim} dimension{'s' * (pattern.ndim != 1)}, fixed extents as "
        "given, null = any extent); reshape the cell."
    )


def convert(arr: np.ndarray, dtype: np.dtype[Any], name: Callable[[int], str] | str) -> np.ndarray:
    """``arr`` as a C-contiguous array of ``dtype``, if the conversion loses nothing (the one
    home of the rule, see :func:`lossy`); else :class:`CellTypeError`, whose message begins with
    ``name``: a string, or a function of the flat index of the first changed item."""
    if arr.dtype.kind not in "biufc":
        subject = name if isinstance(name, str) else name(0)
        raise CellTypeError(
            f"{subject} has dtype {arr.dtype}, which is not numeric or bool; the element dtype "
            f"is {dtype.name}."
        )
    if arr.dtype == dtype:
        return np.ascontiguousarray(arr)
    real = arr.dtype.kind == "c" and dtype.kind != "c"  # refused before numpy warns of it
    with np.errstate(all="ignore"):
        out = np.empty(arr.shape, dtype) if real else arr.astype(dtype, order="C")
    bad = lossy(arr.reshape(-1), out.reshape(-1))
    if bad is not None:
        subject = name if isinstance(name, str) else name(bad[0])
        raise CellTypeError(f"{subject} {bad[1]}; {_CAST_HINT}.")
    return out


def check_bool_bytes(values: np.ndarray, *, nbytes: npt.NDArray[np.int64] | None = None) -> None:
    """Refuse bool payloads whose bytes are not 0x00 or 0x01 (they would alias True): the
    decoders' side of the rule. With ``nbytes`` (each element's byte length, in order) the
    message names the element holding the first bad byte. Raises :class:`CellError`."""
    raw = values.reshape(-1).view(np.uint8)
    if not raw.size or int(np.max(raw)) <= 1:
        return
    bad = int(np.flatnonzero(raw > 1)[0])
    if nbytes is None:
        where = f"bool payload byte {bad} is 0x{int(raw[bad]):02x}"
    else:
        element = int(np.searchsorted(np.cumsum(nbytes), bad, side="right"))
        where = f"element {element} (C order) holds the byte 0x{int(raw[bad]):02x}"
    raise CellError(
        f"{where}, but bool items must be 0x00 or 0x01 (the data is corrupt or was written with "
        "another element dtype)."
    )


def bool_bytes_as_01(values: np.ndarray) -> np.ndarray:
    """``values`` (bool) with every byte 0x00 or 0x01, the encoders' side of the rule: a bool
    array viewed from arbitrary bytes can hold others (numpy reads them as True)."""
    raw = values.view(np.uint8)
    return raw != 0 if raw.size and int(np.max(raw)) > 1 else values
