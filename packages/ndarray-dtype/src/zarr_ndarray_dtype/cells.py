"""One cell, the ndarray held by one array element (pure numpy, no zarr): :func:`coerce_cell`
and the conversion rule (SPEC 1.2, :func:`convert`), the bool-byte rule, and the immutable fill
cell zarr treats as one scalar (:func:`fill_scalar`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype.errors import CellError, CellTypeError
from zarr_ndarray_dtype.pattern import ShapePattern

# The rest (coerce_cell, convert, check_bool_bytes, ...) is the package's own vocabulary.
__all__ = ["unbox"]


def equal_bytes(
    values: np.ndarray, starts: npt.NDArray[np.int64], cell: np.ndarray
) -> npt.NDArray[np.bool_]:
    """Which runs of ``cell.size`` items of the flat ``values`` (of ``cell``'s dtype), starting
    at the items ``starts``, hold ``cell``'s bytes: SPEC 1.5's equality, so a NaN equals only a
    NaN with the same bits and -0.0 is not 0.0. Items compare as unsigned words."""
    word = np.dtype(f"u{min(cell.itemsize, 8)}")
    per = cell.itemsize // word.itemsize
    want = np.ascontiguousarray(cell).reshape(-1).view(word)
    words = np.ascontiguousarray(values).reshape(-1).view(word)
    return (words[(starts * per)[:, None] + np.arange(want.size)] == want).all(axis=1)


class _FillCell(np.ndarray):  # type: ignore[type-arg]
    """A fill cell: an immutable ndarray whose ``==`` and ``!=`` compare whole cells.

    zarr compares chunks against the fill value element by element and truth-tests each result,
    so the comparison gives one ``bool``; as an ndarray subclass, its ``__eq__`` also wins with a
    plain cell on the left. Equal: the same shape and, converted as a write would, the same bytes
    (:func:`equal_bytes`, as ``_columns.FillCell.matches``).
    """

    def __eq__(self, other: object) -> bool:  # type: ignore[override]
        if type(other) is np.ndarray and other.shape != self.shape:
            return False  # fast path: zarr compares every cell of a chunk with the fill
        other = unbox(other)
        if other is None:
            return False
        try:
            arr = np.asarray(other)
            if arr.dtype == object:  # zarr hands a scalar write over as an object array
                arr = np.asarray(arr.tolist()) if arr.size else arr
        except (TypeError, ValueError):
            return False
        if arr.shape != self.shape:
            return False
        if not self.size:
            return True  # no bytes to differ in
        try:
            arr = convert(arr, self.dtype, "cell")  # the bytes it would be written with
        except CellError:
            return False
        return bool(equal_bytes(arr, np.zeros(1, np.int64), self)[0])

    def __ne__(self, other: object) -> bool:  # type: ignore[override]
        return not self.__eq__(other)

    def __hash__(self) -> int:  # type: ignore[override]
        return hash((self.dtype.str, self.shape, self.tobytes()))

    def __reduce__(self) -> Any:
        return (frozen_cell, (self.tobytes(), self.dtype.str, self.shape))


class _FillScalar(np.ndarray):  # type: ignore[type-arg]
    """A 0-d object array holding one cell, so numpy broadcasts the cell as a single scalar."""

    def __eq__(self, other: object) -> bool:  # type: ignore[override]
        return bool(self[()] == unbox(other))

    def __ne__(self, other: object) -> bool:  # type: ignore[override]
        return not self.__eq__(other)

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(self[()])

    def __reduce__(self) -> Any:
        return (fill_scalar, (self[()],))


def frozen_cell(data: bytes, dtype: str | np.dtype[Any], shape: tuple[int, ...]) -> _FillCell:
    """An immutable fill cell over ``data`` (backed by ``bytes``: never writable)."""
    cell = np.frombuffer(bytes(data), dtype=np.dtype(dtype)).reshape(shape)
    return cell.view(_FillCell)


def fill_scalar(cell: np.ndarray) -> np.ndarray:
    """Wrap ``cell`` (made immutable) in a read-only 0-d object array that acts as one scalar."""
    if not isinstance(cell, _FillCell) or cell.flags.writeable:
        cell = frozen_cell(np.ascontiguousarray(cell).tobytes(), cell.dtype, cell.shape)
    owner = np.empty((), dtype=object)
    owner[()] = cell
    owner.flags.writeable = False
    return owner.view(_FillScalar)


def unbox(value: object) -> object:
    """Peel 0-d object-array wrappers (zarr wraps scalar reads in them); else return as is."""
    while isinstance(value, np.ndarray) and value.dtype == object and value.ndim == 0:
        value = value[()]
    return value


_CAST_HINT = "convert the values explicitly (e.g. np.round / np.clip / .astype) if that is intended"


def describe(value: object) -> str:
    """``repr(value)``, cut to 60 characters, for messages."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def cell_array(
    data: object, pattern: ShapePattern, target: np.dtype[Any], subject: str = "cell"
) -> np.ndarray:
    """``data`` as an ndarray of its own dtype (nothing converted yet): an ndarray, nested
    sequences, or either inside zarr's 0-d object wrappers. ``None`` and empty flat input
    (``[]``, ``np.array([])``) are the empty cell of ``target`` (patterns with a variable
    dimension). ``subject`` names the cell in errors."""
    data = unbox(data)
    if data is None:
        if pattern.is_fixed:
            raise CellError(
                f"{subject} is None: None is not a cell of the all-fixed pattern {pattern}, whose "
                f"every element has shape {pattern.empty_shape}; pass an array of that shape."
            )
        return np.empty(pattern.empty_shape, dtype=target)
    if isinstance(data, np.ndarray) and data.dtype != object:
        arr = np.asarray(data)
    else:
        items = data.tolist() if isinstance(data, np.ndarray) else data
        arr = _from_python(items, pattern, subject)
    if arr.size == 0 and arr.ndim == 1 and pattern.variable_axes:
        return np.empty(pattern.empty_shape, dtype=target)
    return arr


def _from_python(data: object, pattern: ShapePattern, subject: str) -> np.ndarray:
    """Nested sequences (or an object array's items, as zarr hands over scalar writes)."""
    if isinstance(data, str | bytes | dict | set):
        raise CellTypeError(
            f"{subject} is a {type(data).__name__}; a cell must be an ndarray or a nested "
            f"sequence of numbers matching pattern {pattern}."
        )
    try:
        arr = np.asarray(data)
    except (ValueError, TypeError, OverflowError) as exc:
        raise CellError(
            f"{subject} is not a rectangular array of numbers ({exc}); each cell must have one "
            f"shape matching pattern {pattern}."
        ) from exc
    if arr.dtype == object:
        raise CellTypeError(
            f"{subject} does not convert to a numeric array (numpy made an object array: ragged "
            f"rows or non-numbers, not a rectangular array); cells must match pattern {pattern}."
        )
    if arr.dtype.kind == "f" and arr.size and float(np.nanmax(np.abs(arr))) >= 2.0**53:
        arr = _keep_big_ints(data, arr, subject)
    return arr


def _keep_big_ints(data: object, arr: np.ndarray, subject: str) -> np.ndarray:
    """Python ints that numpy made float64 (mixed signs beyond int64), kept exact or refused."""
    items = np.array(data, dtype=object).reshape(-1)
    ints = [v for v in items.tolist() if isinstance(v, int) and not isinstance(v, bool)]
    if len(ints) == items.size:
        for wide in (np.int64, np.uint64):
            if np.iinfo(wide).min <= min(ints) and max(ints) <= np.iinfo(wide).max:
                return np.array(ints, dtype=wide).reshape(arr.shape)
    inexact = next((v for v in ints if int(float(v)) != v), None)
    if inexact is not None:
        raise CellTypeError(
            f"{subject} holds the integer {inexact}, which numpy turns into float64 (it would be "
            f"stored as {int(float(inexact))}) because no 64-bit integer dtype holds all of the "
            "cell's numbers; pass an ndarray of the element dtype."
        )
    return arr


def lossy(src: np.ndarray, out: np.ndarray) -> tuple[int, str] | None:
    """The first item whose value the conversion ``src`` -> ``out`` (``src.astype(out.dtype)``,
    flat) changed, and the rule it breaks: None when every value is kept (SPEC §1.2).

    Integers and bools convert when in range, integers to a float only when exact, floats to a
    narrower float round to nearest unless they overflow, complex never to real. Whole-array
    tests come first; the item is looked for only when one fails.
    """
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
            rule = f"outside the range [{info.min}, {info.max}] of {target.name}"
        return first, f"holds {value!r}, {rule};"
    if kind == "f" or kind == "c":  # to a float or complex: round to nearest, never overflow
        if target.itemsize // (2 if target.kind == "c" else 1) >= src.dtype.itemsize // (
            2 if kind == "c" else 1
        ):
            return None
        bad = np.isinf(out)
        if not bad.any():
            return None
        bad &= ~np.isinf(src)
        return _first(src, bad, f"too large for the element dtype {target.name} (it would be inf)")
    return _inexact_integers(src, out)


def _inexact_integers(src: np.ndarray, out: np.ndarray) -> tuple[int, str] | None:
    """Integers a float (or complex) element dtype would round.

    An integer of magnitude m is exact in a float of p significand bits when m < 2**p, else when
    its odd part (m without its trailing zero bits) is; the second test runs on uint64, exactly.
    """
    target = out.dtype
    overflow = np.isinf(out)  # float16 is narrower than uint16, int32, ...
    if overflow.any():
        return _first(
            src, overflow, f"too large for the element dtype {target.name} (it would be inf)"
        )
    bits = np.finfo(target).nmant + 1
    limit = 1 << bits
    if src.dtype.itemsize * 8 - (src.dtype.kind == "i") <= bits:
        return None
    if -limit <= int(src.min()) and int(src.max()) <= limit:
        return None
    wide = src.astype(np.int64 if src.dtype.kind == "i" else np.uint64)
    magnitude = wide.view(np.uint64)
    if wide.dtype.kind == "i":
        magnitude = np.where(wide < 0, ~magnitude + np.uint64(1), magnitude)
    big = np.flatnonzero(magnitude > np.uint64(limit))
    m = magnitude[big]
    inexact = m // (m & (~m + np.uint64(1))) >= np.uint64(limit)  # the odd part too wide
    if not inexact.any():
        return None
    first = int(big[int(np.argmax(inexact))])
    rounded = int(out[first].real)
    return first, (
        f"holds the integer {int(src[first])}, which {target.name} cannot hold exactly (it would "
        f"be stored as {rounded}; integers convert to a float only when exact); use a wider "
        "element dtype, an integer one for IDs, or"
    )


def _first(src: np.ndarray, bad: np.ndarray, rule: str) -> tuple[int, str] | None:
    if not bad.any():
        return None
    first = int(np.argmax(bad))
    return first, f"holds {src[first].item()!r}, {rule};"


def coerce_cell(data: object, pattern: ShapePattern, dtype: np.dtype[Any]) -> np.ndarray:
    """Return ``data`` as a C-contiguous little-endian ``dtype`` array matching ``pattern``.

    ``None`` and empty flat input give the empty cell (patterns with a variable dimension).
    Raises :class:`CellError` for a shape that does not match and :class:`CellTypeError` (also
    a ``TypeError``) for values the element dtype cannot represent exactly.
    """
    arr = cell_array(data, pattern, dtype)
    if not pattern.matches(arr.shape):
        raise CellError(mismatch("cell", arr.shape, pattern))
    return convert(arr, dtype, f"cell of shape {arr.shape} and dtype {arr.dtype}")


def mismatch(subject: str, shape: tuple[int, ...], pattern: ShapePattern) -> str:
    """The message for a cell of ``shape`` that does not match ``pattern``."""
    return (
        f"{subject} has shape {shape}, which does not match pattern {pattern}: expected shape "
        f"matching it ({pattern.ndim} dimension{'s' * (pattern.ndim != 1)}, fixed extents as "
        "given, None = any extent); reshape the cell."
    )


def convert(arr: np.ndarray, dtype: np.dtype[Any], name: Callable[[int], str] | str) -> np.ndarray:
    """``arr`` as a C-contiguous array of ``dtype``, if the conversion loses nothing.

    The one home of the conversion rule (see :func:`lossy`). Otherwise :class:`CellTypeError`,
    whose message begins with ``name``: a string, or a function of the flat index of the first
    changed item (e.g. naming the cell that holds it), called only then.
    """
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
        at, rule = bad
        subject = name if isinstance(name, str) else name(at)
        end = "" if rule.endswith(("or", ";")) else ";"
        raise CellTypeError(f"{subject} {rule}{end} {_CAST_HINT}.")
    return out


def check_bool_bytes(values: np.ndarray, *, nbytes: npt.NDArray[np.int64] | None = None) -> None:
    """Refuse bool payloads whose bytes are not 0x00 or 0x01 (they would alias True).

    The one home of the bool-byte rule for decoders. ``values`` holds one or more elements'
    bytes back to back; with ``nbytes`` (each element's byte length, in order) the message names
    the element holding the first bad byte. Raises :class:`CellError` (a ValueError).
    """
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
    """``values`` (bool) with every byte 0x00 or 0x01: the input itself when it already is.

    The encoders' side of the bool-byte rule: a bool array viewed from arbitrary bytes can hold
    bytes other than 0/1 (numpy reads them as True); they are stored as 0x01.
    """
    raw = values.view(np.uint8)
    if raw.size and int(np.max(raw)) > 1:
        return raw != 0
    return values
