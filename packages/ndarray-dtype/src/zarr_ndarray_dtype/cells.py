"""Cells: the ndarray held by one array element (pure numpy, no zarr).

* :func:`coerce_cell` turns user input into a contiguous little-endian array of a shape that
  matches the pattern, refusing every conversion that would change a value.
* :class:`VlenScalar` and :func:`box` make the immutable fill cell that zarr treats as a scalar.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype.errors import CellError, CellTypeError
from zarr_ndarray_dtype.pattern import ShapePattern

__all__ = [
    "VlenScalar",
    "bool_bytes_as_01",
    "box",
    "check_bool_bytes",
    "coerce_cell",
    "frozen_cell",
    "unbox",
]


class VlenScalar(np.ndarray):  # type: ignore[type-arg]
    """A fill cell: an immutable ndarray whose ``==`` and ``!=`` compare whole cells.

    zarr compares chunks against the fill value element by element and truth-tests each result,
    so the comparison must give one ``bool``. Being an ndarray subclass, this ``__eq__`` also wins
    when a plain cell is on the left (Python tries the subclass's reflected method first).
    Equality is that of SPEC 1.5 (which elements equal the fill): the same shape and the same
    bytes, so a NaN equals only a NaN with the same bits and -0.0 is not 0.0.
    """

    def __eq__(self, other: object) -> bool:  # type: ignore[override]
        if type(other) is np.ndarray and other.shape != self.shape:
            return False  # fast path: zarr compares every cell of a chunk with the fill
        other = unbox(other)
        if other is None:
            return False
        try:
            other_arr = np.asarray(other)
            if other_arr.dtype == object:  # zarr hands a scalar write over as an object array
                other_arr = np.asarray(other_arr.tolist()) if other_arr.size else other_arr
        except (TypeError, ValueError):
            return False
        if other_arr.shape != self.shape:
            return False
        if not self.size:
            return True  # no bytes to differ in
        if other_arr.dtype != self.dtype:
            # The bytes the cell would be written with (the one conversion rule); a cell that
            # cannot be converted is not the fill.
            try:
                other_arr = convert(other_arr, self.dtype, "cell")
            except CellError:
                return False
        return bool(np.ascontiguousarray(other_arr).tobytes() == self.tobytes())

    def __ne__(self, other: object) -> bool:  # type: ignore[override]
        return not self.__eq__(other)

    def __hash__(self) -> int:  # type: ignore[override]
        return hash((self.dtype.str, self.shape, self.tobytes()))

    def __reduce__(self) -> Any:
        return (frozen_cell, (self.tobytes(), self.dtype.str, self.shape))


class _Box(np.ndarray):  # type: ignore[type-arg]
    """A 0-d object array holding one cell, so numpy broadcasts the cell as a single scalar."""

    def __eq__(self, other: object) -> bool:  # type: ignore[override]
        return bool(self[()] == unbox(other))

    def __ne__(self, other: object) -> bool:  # type: ignore[override]
        return not self.__eq__(other)

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(self[()])

    def __reduce__(self) -> Any:
        return (box, (self[()],))


def frozen_cell(data: bytes, dtype: str | np.dtype[Any], shape: tuple[int, ...]) -> VlenScalar:
    """An immutable :class:`VlenScalar` over ``data`` (backed by ``bytes``: never writable)."""
    cell = np.frombuffer(bytes(data), dtype=np.dtype(dtype)).reshape(shape)
    return cell.view(VlenScalar)


def box(cell: np.ndarray) -> np.ndarray:
    """Wrap ``cell`` (made immutable) in a read-only 0-d object array that acts as one scalar."""
    if not isinstance(cell, VlenScalar) or cell.flags.writeable:
        cell = frozen_cell(np.ascontiguousarray(cell).tobytes(), cell.dtype, cell.shape)
    owner = np.empty((), dtype=object)
    owner[()] = cell
    owner.flags.writeable = False
    return owner.view(_Box)


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


def _to_ndarray(data: object, pattern: ShapePattern, target: np.dtype[Any]) -> np.ndarray:
    if isinstance(data, np.ndarray) and data.dtype != object:
        arr = data
    else:
        arr = _from_python(data.tolist() if isinstance(data, np.ndarray) else data, pattern)
    if arr.size == 0 and arr.ndim == 1 and pattern.variable_axes:
        # An empty flat input ([] or np.array([])) is the empty cell, whatever its dtype.
        return np.empty(pattern.empty_shape, dtype=target)
    return arr


def _from_python(data: object, pattern: ShapePattern) -> np.ndarray:
    """Nested sequences (or an object array's items, as zarr hands over scalar writes)."""
    if isinstance(data, str | bytes | dict | set):
        raise CellTypeError(
            f"cell {describe(data)} is a {type(data).__name__}; a cell must be an ndarray or a "
            f"nested sequence of numbers matching pattern {pattern}."
        )
    try:
        arr = np.asarray(data)
    except (ValueError, TypeError, OverflowError) as exc:
        raise CellError(
            f"cell {describe(data)} is not a rectangular array of numbers ({exc}); each cell "
            f"must have one shape matching pattern {pattern}."
        ) from exc
    if arr.dtype == object:
        raise CellTypeError(
            f"cell {describe(data)} does not convert to a numeric array (numpy made an object "
            f"array: ragged rows or non-numbers); cells must match pattern {pattern}."
        )
    if arr.dtype.kind == "f" and arr.size and float(np.nanmax(np.abs(arr))) >= 2.0**53:
        arr = _keep_big_ints(data, arr)
    return arr


def _keep_big_ints(data: object, arr: np.ndarray) -> np.ndarray:
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
            f"cell {describe(data)} holds the integer {inexact}, which numpy turns into float64 "
            f"(it would be stored as {int(float(inexact))}) because no 64-bit integer dtype "
            "holds all of the cell's numbers; pass an ndarray of the element dtype."
        )
    return arr


def _check_lossless(arr: np.ndarray, target: np.dtype[Any], what: str) -> None:
    src = arr.dtype
    if src.kind not in "biufc":
        raise CellTypeError(
            f"{what} has dtype {src}, which is not numeric or bool; the element "
            f"dtype is {target.name}."
        )
    if arr.size == 0 or src.kind == "b":
        return
    kind = target.kind
    if src.kind == "c" and kind != "c":
        raise CellTypeError(
            f"{what} is complex ({src}) but the element dtype is {target.name}: "
            f"dropping the imaginary part would lose data; {_CAST_HINT}."
        )
    if kind == "b":
        if not np.isin(arr, (0, 1)).all():
            raise CellTypeError(
                f"{what} ({src}) has values other than 0 and 1, which the bool "
                f"element dtype cannot hold; {_CAST_HINT}."
            )
        return
    if kind in "iu":
        if src.kind == "f":
            if not np.isfinite(arr).all():
                raise CellTypeError(
                    f"{what} holds NaN or infinity, which the integer element "
                    f"dtype {target.name} cannot hold."
                )
            if not (arr == np.trunc(arr)).all():
                raise CellTypeError(
                    f"{what} ({src}) has fractional values; casting to "
                    f"{target.name} would truncate them; {_CAST_HINT}."
                )
        info = np.iinfo(target)
        lo, hi = arr.min(), arr.max()
        if src.kind == "f":
            # Compare in float against bounds that are exact in float64 (powers of two).
            too_low = lo < float(info.min)
            too_high = hi >= float(info.max) + 1.0
        else:
            too_low = int(lo) < info.min
            too_high = int(hi) > info.max
        if too_low or too_high:
            raise CellTypeError(
                f"{what} has values in [{lo}, {hi}], outside the range "
                f"[{info.min}, {info.max}] of the element dtype {target.name}; casting would wrap "
                f"around; {_CAST_HINT}."
            )
        return
    # Float or complex target: a float source rounds to nearest (as numpy assignment does), an
    # integer source must be exact, and overflow to infinity is refused.
    with np.errstate(all="ignore"):
        converted = arr.astype(target)
    src_finite = np.isfinite(arr)
    if not (np.isfinite(converted) | ~src_finite).all():
        raise CellTypeError(
            f"{what} has values too large for the element dtype {target.name} "
            f"(they would become infinite); {_CAST_HINT}."
        )
    if src.kind in "iu":
        _check_exact_integers(arr, target, what)


def _check_exact_integers(arr: np.ndarray, target: np.dtype[Any], what: str) -> None:
    """Refuse integers that the float (or complex) ``target`` would round.

    An integer of magnitude m is exact in a float of p significand bits when m's odd part
    (m without its trailing zero bits) is below 2**p; that test runs on uint64, exactly.
    """
    bits = np.finfo(target).nmant + 1
    flat = arr.reshape(-1)
    if flat.dtype.itemsize * 8 - (flat.dtype.kind == "i") <= bits:
        return
    wide = flat.astype(np.int64 if flat.dtype.kind == "i" else np.uint64)
    magnitude = wide.view(np.uint64)
    if wide.dtype.kind == "i":
        magnitude = np.where(wide < 0, ~magnitude + np.uint64(1), magnitude)
    limit = np.uint64(1 << bits)
    big = np.flatnonzero(magnitude > limit)
    if not big.size:
        return
    m = magnitude[big]
    inexact = m // (m & (~m + np.uint64(1))) >= limit
    if inexact.any():
        first = int(flat[big[int(np.argmax(inexact))]])
        rounded = int(np.array(first).astype(target).real)
        raise CellTypeError(
            f"{what} holds the integer {first}, which {target.name} cannot hold "
            f"exactly (it would be stored as {rounded}; integers convert to a float only when "
            f"exact); use a wider element dtype, an integer one for IDs, or {_CAST_HINT}."
        )


def coerce_cell(data: object, pattern: ShapePattern, dtype: np.dtype[Any]) -> np.ndarray:
    """Return ``data`` as a C-contiguous little-endian ``dtype`` array matching ``pattern``.

    ``None`` and empty flat input give the empty cell (patterns with a variable dimension).
    Raises :class:`CellError` for a shape that does not match and :class:`CellTypeError` (also
    a ``TypeError``) for values the element dtype cannot represent exactly.
    """
    data = unbox(data)
    if data is None:
        if pattern.is_fixed:
            raise CellError(
                f"None is not a cell of the all-fixed pattern {pattern}: every element must have "
                f"shape {pattern.empty_shape}; pass an array of that shape."
            )
        return np.empty(pattern.empty_shape, dtype=dtype)
    arr = _to_ndarray(data, pattern, dtype)
    if not pattern.matches(arr.shape):
        raise CellError(
            f"cell of shape {arr.shape} does not match pattern {pattern}: expected shape "
            f"matching it ({pattern.ndim} dimension{'s' * (pattern.ndim != 1)}, fixed extents as "
            "given, None = any extent); reshape the cell."
        )
    return convert(arr, dtype, f"cell {describe(data)}")


def convert(arr: np.ndarray, dtype: np.dtype[Any], what: str) -> np.ndarray:
    """``arr`` as a C-contiguous array of ``dtype``, if the conversion loses nothing.

    The one home of the conversion rule (SPEC §1.2): integers and bools convert when in range,
    integers to a float only when exact, floats to a narrower float round to nearest unless
    they overflow. Otherwise CellTypeError, naming ``what`` (e.g. ``"cell array([...])"``).
    """
    if arr.dtype != dtype:
        if arr.dtype.kind != dtype.kind or arr.dtype.itemsize != dtype.itemsize:
            _check_lossless(arr, dtype, what)
        with np.errstate(all="ignore"):
            arr = arr.astype(dtype, order="C")
    return np.ascontiguousarray(arr)


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
