"""The ``vlen-bytes`` chunk framing over whole chunks (pure: no zarr, no cells)::

    u32le count | u32le len_0 | payload_0 | u32le len_1 | payload_1 | ...

identical to numcodecs ``VLenBytes``. Payloads travel as one ``uint8`` buffer plus each
element's byte length. The loops are a kernel chosen at import (:data:`BACKEND`): the compiled
one when built, else the reference (``ZARR_VLEN_NDARRAY_NO_EXTENSION=1`` forces it). Every
check that makes a message is here, against the bytes present, before anything is allocated.
"""

from __future__ import annotations

import importlib.util
import os
import warnings
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype.pattern import U32_MAX
from zarr_vlen_ndarray import _framing_ref
from zarr_vlen_ndarray._framing_ref import HEADER_NBYTES, PREFIX_NBYTES

__all__ = [
    "BACKEND",
    "HEADER_NBYTES",
    "PREFIX_NBYTES",
    "U32_MAX",
    "FramingError",
    "decode_frames",
    "encode_frames",
    "gather_into",
    "scan_frames",
]


class FramingError(ValueError):
    """A chunk does not follow the vlen-bytes framing (or cannot be framed)."""

    #: For an element too long to frame: its index (callers name it in their own terms).
    element: int | None = None


#: Environment variable that, set to anything but "" or "0", forces the reference kernel.
NO_EXTENSION_ENV = "ZARR_VLEN_NDARRAY_NO_EXTENSION"


def _load_kernel() -> Any:
    """The compiled kernel if it was built and is not disabled, else the reference."""
    if os.environ.get(NO_EXTENSION_ENV, "") not in ("", "0"):
        return _framing_ref
    if importlib.util.find_spec("zarr_vlen_ndarray._framing_ext") is None:
        return _framing_ref  # installed without a compiler: the fallback, silently
    try:
        from zarr_vlen_ndarray import _framing_c
    except ImportError as exc:  # built, but cannot load here: say so and step aside
        warnings.warn(
            f"zarr_vlen_ndarray: the compiled framing kernel failed to load ({exc}); using the "
            f"reference one (set {NO_EXTENSION_ENV}=1 to silence this)",
            RuntimeWarning,
            stacklevel=2,
        )
        return _framing_ref
    return _framing_c


_kernel = _load_kernel()
#: The framing kernel in use: ``"c"`` (compiled) or ``"python"`` (the reference).
BACKEND: str = _kernel.NAME


def encode_frames(
    payload: npt.NDArray[np.uint8], nbytes: npt.NDArray[np.int64], *, limit: int = U32_MAX
) -> npt.NDArray[np.uint8]:
    """The framed chunk (a new 1-D ``uint8`` array) of the elements whose payloads are
    concatenated in ``payload`` (1-D C-contiguous ``uint8``), ``nbytes[i]`` bytes each.

    Raises :class:`FramingError` when the count or a length does not fit its u32le field (the
    error's ``element``: the index of an element too long). ``limit`` lowers that bound (never
    above ``U32_MAX``), so callers test the refusals without 4 GiB inputs.
    """
    limit = min(limit, U32_MAX)
    if payload.ndim != 1 or payload.dtype != np.uint8 or not payload.flags.c_contiguous:
        raise TypeError(
            f"payload must be a 1-D C-contiguous uint8 array, got {payload.dtype} with shape "
            f"{payload.shape}"
        )
    nbytes = np.asarray(nbytes, dtype=np.int64).reshape(-1)
    count = nbytes.size
    if count > limit:
        raise FramingError(
            f"cannot frame {count} elements: the framed element count is a u32le, so a chunk "
            f"holds at most {limit} elements; use smaller chunks"
        )
    if count:
        lo = int(np.min(nbytes))
        hi = int(np.max(nbytes))
        if lo < 0:
            raise FramingError(f"element byte lengths must be >= 0, got {lo}")
        if hi > limit:
            bad = int(np.argmax(nbytes > limit))
            error = FramingError(
                f"cannot frame element {bad} of {int(nbytes[bad])} bytes: each length prefix is "
                f"a u32le, so an element holds at most {limit} bytes; split the element"
            )
            error.element = bad
            raise error
    total = int(nbytes.sum())
    if total != payload.size:
        raise FramingError(
            f"element lengths sum to {total} bytes but the payload has {payload.size} bytes"
        )

    out = np.empty(HEADER_NBYTES + PREFIX_NBYTES * count + payload.size, dtype=np.uint8)
    _kernel.frame(payload, np.ascontiguousarray(nbytes), out)
    return out


def scan_frames(
    data: npt.NDArray[np.uint8], count: int, row_nbytes: int = 1, *, what: str = "element"
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Check a framed chunk (1-D C-contiguous ``uint8``) that must hold exactly ``count``
    elements, each a whole number of ``row_nbytes`` bytes (``what`` names one such row in
    messages); return ``(starts, nbytes)``, each element's prefix offset and byte length.

    Nothing is copied. Raises :class:`FramingError` naming the first problem: a short header, a
    count other than ``count``, a truncated prefix, a length past the end, a length that is not
    a whole number of rows, or trailing bytes.
    """
    if data.ndim != 1 or data.dtype != np.uint8 or not data.flags.c_contiguous:
        raise TypeError(
            f"data must be a 1-D C-contiguous uint8 array, got {data.dtype} with shape {data.shape}"
        )
    if row_nbytes < 1:
        raise ValueError(f"row_nbytes must be >= 1, got {row_nbytes}")
    size = data.size
    if size < HEADER_NBYTES:
        raise FramingError(
            f"truncated chunk: {size} bytes is shorter than the {HEADER_NBYTES}-byte element "
            "count header (SPEC 2.5/1)"
        )
    claimed = int(data[:HEADER_NBYTES].view("<u4")[0])
    if claimed != count:
        raise FramingError(
            f"the chunk header claims {claimed} elements but the chunk holds {count}: the "
            "framed u32le element count must equal the product of the chunk shape (the number of "
            "elements in the chunk) (SPEC 2.5/2)"
        )
    if HEADER_NBYTES + PREFIX_NBYTES * count > size:
        raise FramingError(
            f"truncated chunk: {count} elements need at least "
            f"{HEADER_NBYTES + PREFIX_NBYTES * count} bytes of count and length prefixes, "
            f"but the chunk has {size} bytes (SPEC 2.5/1)"
        )
    scanned = _kernel.scan(data, count, row_nbytes)
    if scanned is None:
        _diagnose(data, count, row_nbytes, what)
        raise AssertionError("unreachable: the careful scan accepted a chunk the fast scan refused")
    return scanned


def gather_into(
    data: npt.NDArray[np.uint8],
    starts: npt.NDArray[np.int64],
    nbytes: npt.NDArray[np.int64],
    out: npt.NDArray[np.uint8],
    dst: npt.NDArray[np.int64] | int,
) -> None:
    """Copy the payload of scanned element ``i`` to ``out[dst[i]:dst[i] + nbytes[i]]`` (an int
    ``dst``: back to back from there), for any selection of what :func:`scan_frames` returned,
    in any order, into a writable 1-D C-contiguous ``uint8`` ``out``.

    Raises ValueError for segments outside ``data`` or ``out`` (the compiled kernel may have
    copied the elements before the first bad one).
    """
    for name, arr in (("data", data), ("out", out)):
        if arr.ndim != 1 or arr.dtype != np.uint8 or not arr.flags.c_contiguous:
            raise TypeError(
                f"{name} must be a 1-D C-contiguous uint8 array, got {arr.dtype} with shape "
                f"{arr.shape}"
            )
    if not out.flags.writeable:
        raise TypeError("out must be writable")
    starts, nbytes = (np.ascontiguousarray(a, dtype=np.int64) for a in (starts, nbytes))
    places = int(dst) if isinstance(dst, int | np.integer) else np.ascontiguousarray(dst, np.int64)
    count = starts.size if isinstance(places, int) else places.size
    if not starts.size == nbytes.size == count:
        raise ValueError(
            f"starts, nbytes and dst have {starts.size}, {nbytes.size}, {count} entries"
        )
    try:
        _kernel.gather(data, starts, nbytes, out, places)
    except ValueError:
        raise ValueError(
            f"starts/nbytes/dst do not describe elements of this {data.size}-byte chunk and "
            f"places in the {out.size}-byte output: pass what scan_frames returned for it"
        ) from None


def decode_frames(
    data: npt.NDArray[np.uint8], count: int, row_nbytes: int = 1, *, what: str = "element"
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """``(payload, nbytes)`` of a framed chunk of ``count`` elements: the payloads back to back
    in a new ``uint8`` array, and their byte lengths (:func:`scan_frames`, then a gather)."""
    data = np.ascontiguousarray(data, dtype=np.uint8).reshape(-1)
    starts, nbytes = scan_frames(data, count, row_nbytes, what=what)
    payload = np.empty(data.size - HEADER_NBYTES - PREFIX_NBYTES * count, dtype=np.uint8)
    _kernel.gather(data, starts, nbytes, payload, 0)
    return payload, nbytes


def _diagnose(data: npt.NDArray[np.uint8], count: int, row_nbytes: int, what: str) -> None:
    """Walk the chunk carefully and raise FramingError for the first problem found."""
    raw = data.tobytes()
    size = len(raw)
    p = HEADER_NBYTES
    for i in range(count):
        if p + PREFIX_NBYTES > size:
            raise FramingError(
                f"truncated chunk: the length prefix of element {i} of {count} starts at byte "
                f"{p} but the chunk has only {size} bytes (SPEC 2.5/1)"
            )
        length = int.from_bytes(raw[p : p + PREFIX_NBYTES], "little")
        end = p + PREFIX_NBYTES + length
        if end > size:
            raise FramingError(
                f"truncated chunk: element {i} of {count} claims {length} bytes at byte "
                f"{p + PREFIX_NBYTES}, running to byte {end} past the chunk's end at {size} "
                "(SPEC 2.5/3)"
            )
        if length % row_nbytes:
            raise FramingError(
                f"element {i} of {count} is {length} bytes, not a whole number of "
                f"{row_nbytes}-byte {what}s (SPEC 2.5/4)"
            )
        p = end
    if p != size:
        raise FramingError(
            f"{size - p} trailing bytes after the last of {count} elements (which ends at byte "
            f"{p} of {size}): a chunk must end with its last element (SPEC 2.5/5)"
        )
