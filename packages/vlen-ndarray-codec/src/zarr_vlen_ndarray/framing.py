"""The ``vlen-bytes`` chunk framing over whole chunks (pure: no zarr, no cells)::

    u32le count | u32le len_0 | payload_0 | u32le len_1 | payload_1 | ...

identical to numcodecs ``VLenBytes``: payloads as one ``uint8`` buffer plus each element's
byte length. Every check that makes a message is here; the loops are a kernel chosen at import
(:data:`BACKEND`): the compiled ``_framing_ext`` when built, else the reference ``_framing_ref``.
"""

from __future__ import annotations

import importlib
import os
import warnings
from typing import Any

import numpy as np

from zarr_ndarray_dtype.pattern import U32_MAX
from zarr_vlen_ndarray import _framing_ref
from zarr_vlen_ndarray._framing_ref import HEADER_NBYTES, PREFIX_NBYTES, Bytes, Ints

__all__ = [
    "BACKEND", "HEADER_NBYTES", "PREFIX_NBYTES", "U32_MAX", "FramingError", "decode_frames",
    "encode_frames", "gather_into", "scan_frames",
]  # fmt: skip


class FramingError(ValueError):
    """A chunk does not follow the vlen-bytes framing (or cannot be framed)."""

    #: For an element too long to frame: its index (callers name it in their own terms).
    element: int | None = None


#: Set to anything but "" or "0", this environment variable forces the reference kernel.
NO_EXTENSION_ENV = "ZARR_VLEN_NDARRAY_NO_EXTENSION"

# Both kernels: scan(data, count, unit, starts, nbytes) -> bool, gather(data, starts, nbytes,
# out, dst) and frame(payload, nbytes, out), raising ValueError for places outside the buffers.
_kernel: Any = _framing_ref
if os.environ.get(NO_EXTENSION_ENV, "") in ("", "0"):
    try:
        _kernel = importlib.import_module("zarr_vlen_ndarray._framing_ext")
    except ModuleNotFoundError:  # installed without a compiler: the reference, silently
        pass
    except ImportError as exc:  # built, but cannot load here: say so and step aside
        warnings.warn(
            f"zarr_vlen_ndarray: the compiled framing kernel failed to load ({exc}); using the "
            f"reference one (set {NO_EXTENSION_ENV}=1 to silence this)",
            RuntimeWarning,
            stacklevel=2,
        )
#: The framing kernel in use: ``"c"`` (compiled) or ``"python"`` (the reference).
BACKEND = "python" if _kernel is _framing_ref else "c"


def _check_flat(name: str, arr: np.ndarray) -> None:
    if arr.ndim != 1 or arr.dtype != np.uint8 or not arr.flags.c_contiguous:
        raise TypeError(
            f"{name} must be a 1-D C-contiguous uint8 array, got {arr.dtype} with shape {arr.shape}"
        )


def encode_frames(payload: Bytes, nbytes: Ints, *, limit: int = U32_MAX) -> Bytes:
    """The framed chunk (a new ``uint8`` array) of the payloads concatenated in ``payload``,
    ``nbytes[i]`` bytes each. Raises :class:`FramingError` when the count or a length does not
    fit a u32le or ``limit`` (for tests), setting ``element`` to the index of an element too long.
    """
    limit = min(limit, U32_MAX)
    _check_flat("payload", payload)
    nbytes = np.ascontiguousarray(nbytes, dtype=np.int64).reshape(-1)
    count = nbytes.size
    if count > limit:
        raise FramingError(
            f"cannot frame {count} elements: the framed element count is a u32le, so a chunk "
            f"holds at most {limit} elements; use smaller chunks"
        )
    if count and int(np.min(nbytes)) < 0:
        raise FramingError(f"element byte lengths must be >= 0, got {int(np.min(nbytes))}")
    if count and int(np.max(nbytes)) > limit:
        bad = int(np.argmax(nbytes > limit))
        error = FramingError(
            f"cannot frame element {bad} of {int(nbytes[bad])} bytes: each length prefix is a "
            f"u32le, so an element holds at most {limit} bytes; split the element"
        )
        error.element = bad
        raise error
    if int(nbytes.sum()) != payload.size:
        raise FramingError(
            f"element lengths sum to {int(nbytes.sum())} bytes but the payload has {payload.size}"
        )
    out = np.empty(HEADER_NBYTES + PREFIX_NBYTES * count + payload.size, dtype=np.uint8)
    _kernel.frame(payload, nbytes, out)
    return out


def scan_frames(
    data: Bytes, count: int, row_nbytes: int = 1, *, what: str = "element"
) -> tuple[Ints, Ints]:
    """Check a framed chunk of exactly ``count`` elements, each a whole number of ``row_nbytes``
    bytes (``what`` names such a row); return ``(starts, nbytes)``, each element's prefix offset
    and byte length. Nothing is copied. Raises :class:`FramingError` naming the first problem.
    """
    _check_flat("data", data)
    if row_nbytes < 1:
        raise ValueError(f"row_nbytes must be >= 1, got {row_nbytes}")
    # The header first: nothing is allocated for a count the bytes present cannot hold.
    if (
        data.size >= HEADER_NBYTES + PREFIX_NBYTES * count
        and data[:HEADER_NBYTES].view("<u4")[0] == count
    ):
        starts, nbytes = np.empty(count, np.int64), np.empty(count, np.int64)
        if _kernel.scan(data, count, row_nbytes, starts, nbytes):
            return starts, nbytes
    raise _problem(memoryview(data), count, row_nbytes, what)


def _problem(raw: memoryview, count: int, row_nbytes: int, what: str) -> FramingError:
    """The first problem of a chunk the checks refused, found by walking it element by element."""
    size, at = len(raw), HEADER_NBYTES
    if size < HEADER_NBYTES:
        return FramingError(
            f"truncated chunk: {size} bytes, too short for the {HEADER_NBYTES}-byte element count "
            "(SPEC 2.5/1)"
        )
    if (claimed := int.from_bytes(raw[:HEADER_NBYTES], "little")) != count:
        return FramingError(
            f"the chunk header claims {claimed} elements but the chunk holds {count}: the u32le "
            "element count must equal the product of the chunk shape (SPEC 2.5/2)"
        )
    for i in range(count):
        if at + PREFIX_NBYTES > size:
            return FramingError(
                f"truncated chunk: the length prefix of element {i} of {count} starts at byte "
                f"{at} but the chunk has only {size} bytes (SPEC 2.5/1)"
            )
        length = int.from_bytes(raw[at : at + PREFIX_NBYTES], "little")
        at += PREFIX_NBYTES + length
        if at > size:
            return FramingError(
                f"truncated chunk: element {i} of {count} claims {length} bytes at byte "
                f"{at - length}, running to byte {at} past the chunk's end at {size} (SPEC 2.5/3)"
            )
        if length % row_nbytes:
            return FramingError(
                f"element {i} of {count} is {length} bytes, not a whole number of "
                f"{row_nbytes}-byte {what}s (SPEC 2.5/4)"
            )
    return FramingError(
        f"{size - at} trailing bytes after the last of {count} elements (SPEC 2.5/5)"
    )


def gather_into(data: Bytes, starts: Ints, nbytes: Ints, out: Bytes, dst: Ints | int) -> None:
    """Copy the payload of element ``i`` (any of what :func:`scan_frames` returned, in any order)
    to ``out[dst[i]:dst[i] + nbytes[i]]``; an int ``dst``: back to back from there. ValueError
    for segments outside ``data`` or ``out`` (the C kernel may have copied those before)."""
    _check_flat("data", data)
    _check_flat("out", out)
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
    data: Bytes, count: int, row_nbytes: int = 1, *, what: str = "element"
) -> tuple[Bytes, Ints]:
    """``(payload, nbytes)`` of a framed chunk of ``count`` elements: the payloads back to back
    in a new ``uint8`` array, and their byte lengths (:func:`scan_frames`, then a gather)."""
    data = np.ascontiguousarray(data, dtype=np.uint8).reshape(-1)
    starts, nbytes = scan_frames(data, count, row_nbytes, what=what)
    payload = np.empty(data.size - HEADER_NBYTES - PREFIX_NBYTES * count, dtype=np.uint8)
    _kernel.gather(data, starts, nbytes, payload, 0)
    return payload, nbytes
