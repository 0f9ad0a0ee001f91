"""The ``vlen-bytes`` chunk framing, vectorized over whole chunks.

Layout (identical to numcodecs ``VLenBytes`` and zarr's ``vlen-bytes`` codec)::

    u32le count | u32le len_0 | payload_0 | u32le len_1 | payload_1 | ...

This module is pure: it knows nothing about zarr or about cells. Encoding takes all payloads
concatenated into one ``uint8`` buffer plus the per-element byte lengths; decoding returns the
payloads concatenated into one contiguous ``uint8`` buffer plus the per-element byte lengths.

Both directions move the payload with one boolean-mask copy over "slots" of ``g`` bytes, where
``g`` is 4, 2 or 1 (the largest of those dividing every element length): with ``g == 4`` a chunk
is a sequence of 32-bit words in which every length prefix is one word, which is 4x fewer mask
entries than a byte mask.

Decoding has one inherently sequential step: element ``i + 1`` starts where element ``i`` ends,
so each start depends on the previous length. That scan is a tight loop over at most ``count``
elements (``count`` is checked against the bytes present first, so it cannot hang or
over-allocate); everything else (gathering lengths, checks, payload extraction) is vectorized.
The loop stores one integer per element and does no other work; a failed fast scan defers to a
careful scan that names the first problem.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "HEADER_NBYTES",
    "PREFIX_NBYTES",
    "U32_MAX",
    "FramingError",
    "decode_frames",
    "encode_frames",
]

#: Largest value a u32le field can hold: the limit on the element count and on each length.
U32_MAX = 0xFFFF_FFFF
#: Bytes of the leading element count.
HEADER_NBYTES = 4
#: Bytes of each element's length prefix.
PREFIX_NBYTES = 4

_SLOT_DTYPES: dict[int, np.dtype[Any]] = {4: np.dtype("<u4"), 2: np.dtype("<u2"), 1: np.dtype("u1")}


class FramingError(ValueError):
    """A chunk does not follow the vlen-bytes framing (or cannot be framed)."""

    #: For an element too long to frame: its index (callers name it in their own terms).
    element: int | None = None


def _slot_size(unit: int) -> int:
    """The slot width for element lengths that are all multiples of ``unit``."""
    return math.gcd(PREFIX_NBYTES, unit)


def encode_frames(
    payload: npt.NDArray[np.uint8], nbytes: npt.NDArray[np.int64]
) -> npt.NDArray[np.uint8]:
    """Frame ``len(nbytes)`` elements whose payloads are concatenated in ``payload``.

    ``payload`` is a 1-D C-contiguous ``uint8`` array, ``nbytes`` the byte length of each
    element (non-negative, summing to ``payload.size``). Returns the framed chunk as a new
    1-D ``uint8`` array. Raises :class:`FramingError` when the element count or an element's
    length does not fit the u32le fields (this module is the one home of those limits; the
    error's ``element`` attribute is the index of an element that is too long).
    """
    if payload.ndim != 1 or payload.dtype != np.uint8 or not payload.flags.c_contiguous:
        raise TypeError(
            f"payload must be a 1-D C-contiguous uint8 array, got {payload.dtype} with shape "
            f"{payload.shape}"
        )
    nbytes = np.asarray(nbytes, dtype=np.int64).reshape(-1)
    count = nbytes.size
    if count > U32_MAX:
        raise FramingError(
            f"cannot frame {count} elements: the element count is a u32le, so a chunk holds at "
            f"most {U32_MAX} elements; use smaller chunks"
        )
    if count:
        lo = int(np.min(nbytes))
        hi = int(np.max(nbytes))
        if lo < 0:
            raise FramingError(f"element byte lengths must be >= 0, got {lo}")
        if hi > U32_MAX:
            bad = int(np.argmax(nbytes > U32_MAX))
            error = FramingError(
                f"cannot frame element {bad} of {int(nbytes[bad])} bytes: each length prefix is "
                f"a u32le, so an element holds at most {U32_MAX} bytes; split the element"
            )
            error.element = bad
            raise error
    total = int(nbytes.sum())
    if total != payload.size:
        raise FramingError(
            f"element lengths sum to {total} bytes but the payload has {payload.size} bytes"
        )

    # Slot width: the largest of 4, 2, 1 dividing every length (and hence every offset).
    g = 4
    if count and (nbytes & 3).any():
        g = 1 if (nbytes & 1).any() else 2
    slot = _SLOT_DTYPES[g]
    per_prefix = PREFIX_NBYTES // g
    nslots = (HEADER_NBYTES + PREFIX_NBYTES * count + total) // g

    out = np.empty(nslots * g, dtype=np.uint8)
    out[:HEADER_NBYTES] = np.frombuffer(np.uint32(count).astype("<u4").tobytes(), np.uint8)
    if count == 0:
        return out
    slots = out.view(slot)
    # Slot index of element i's length prefix: header, i earlier prefixes, earlier payloads.
    prefix_at = np.empty(count, dtype=np.int64)
    prefix_at[0] = 0
    np.cumsum(nbytes[:-1] // g + per_prefix, out=prefix_at[1:])
    prefix_at += HEADER_NBYTES // g
    keep = np.ones(nslots, dtype=bool)
    keep[: HEADER_NBYTES // g] = False
    prefix_slots = nbytes.astype("<u4").view(slot).reshape(count, per_prefix)
    for j in range(per_prefix):
        slots[prefix_at + j] = prefix_slots[:, j]
        keep[prefix_at + j] = False
    slots[keep] = payload.view(slot)
    return out


def decode_frames(
    data: npt.NDArray[np.uint8], count: int, unit: int = 1, *, what: str = "element"
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """Parse a framed chunk that must hold exactly ``count`` elements.

    ``data`` is the chunk as a 1-D ``uint8`` array. Every element length must be a multiple
    of ``unit`` bytes (``what`` describes one unit for error messages, e.g.
    ``"8-byte item (float32 x (2,))"``). Returns ``(payload, nbytes)``: all payloads
    concatenated into a new contiguous ``uint8`` array, and each element's byte length.

    Raises :class:`FramingError` naming the first problem: a chunk shorter than its
    header, an element count other than ``count``, a truncated length prefix, a length
    running past the end, a length that is not a whole number of units, or trailing bytes.
    Nothing is allocated in proportion to the header before it is checked against
    ``data.size``.
    """
    data = np.ascontiguousarray(data, dtype=np.uint8).reshape(-1)
    if unit < 1:
        raise ValueError(f"unit must be >= 1, got {unit}")
    size = data.size
    if size < HEADER_NBYTES:
        raise FramingError(
            f"truncated chunk: {size} bytes is shorter than the {HEADER_NBYTES}-byte element "
            "count header"
        )
    claimed = int(data[:HEADER_NBYTES].view("<u4")[0])
    if claimed != count:
        raise FramingError(
            f"the chunk header claims {claimed} elements but the chunk holds {count}: the "
            "u32le element count must equal the number of elements in the chunk"
        )
    if HEADER_NBYTES + PREFIX_NBYTES * count > size:
        raise FramingError(
            f"truncated chunk: {count} elements need at least "
            f"{HEADER_NBYTES + PREFIX_NBYTES * count} bytes of count and length prefixes, "
            f"but the chunk has {size} bytes"
        )
    g = _slot_size(unit)
    result = _fast_scan(data, count, unit, g)
    if result is None:
        _diagnose(data, count, unit, what)
        raise AssertionError("unreachable: the careful scan accepted a chunk the fast scan refused")
    starts, nbytes = result
    return _extract(data, starts, g), nbytes


def _fast_scan(
    data: npt.NDArray[np.uint8], count: int, unit: int, g: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
    """Byte offsets of every prefix and every length, or None if anything is off."""
    size = data.size
    if count == 0:
        return (np.empty(0, np.int64), np.empty(0, np.int64)) if size == HEADER_NBYTES else None
    if (size - HEADER_NBYTES) % g:
        return None
    if g == 4:
        # Valid chunks have every prefix on a word boundary: walk words.
        words = data[HEADER_NBYTES:].view("<u4")
        mv = _u32_memoryview(data[HEADER_NBYTES:])
        at = [0] * count
        w = 0
        try:
            for i in range(count):
                at[i] = w
                w += 1 + (mv[w] >> 2)
        except IndexError:
            return None
        if w != words.size:
            return None
        starts = np.fromiter(at, dtype=np.int64, count=count)
        nbytes = words[starts].astype(np.int64)
        starts = starts * 4 + HEADER_NBYTES
    else:
        # Four u32 views shifted by 0..3 bytes read a prefix at any byte offset.
        views = []
        mvs = []
        for r in range(4):
            usable = (size - r) // 4 * 4
            views.append(data[r : r + usable].view("<u4"))
            mvs.append(_u32_memoryview(data[r : r + usable]))
        at = [0] * count
        p = HEADER_NBYTES
        try:
            for i in range(count):
                at[i] = p
                p += PREFIX_NBYTES + mvs[p & 3][p >> 2]
        except IndexError:
            return None
        if p != size:
            return None
        starts = np.fromiter(at, dtype=np.int64, count=count)
        nbytes = np.empty(count, dtype=np.int64)
        for r in range(4):
            sel = (starts & 3) == r
            nbytes[sel] = views[r][starts[sel] >> 2]
    if unit > 1 and (nbytes % unit).any():
        return None
    return starts, nbytes


def _u32_memoryview(raw: npt.NDArray[np.uint8]) -> memoryview:
    """A memoryview reading ``raw`` (length a multiple of 4) as little-endian u32 integers.

    Indexing it yields Python ints directly, which is what the sequential scan needs; CPython
    unpacks memoryview items with memcpy, so ``raw`` need not be aligned.
    """
    if sys.byteorder != "little":
        raw = raw.view("<u4").astype("=u4").view(np.uint8)
    return memoryview(raw).cast("I")


def _extract(
    data: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64], g: int
) -> npt.NDArray[np.uint8]:
    """Copy out the payload bytes: everything but the header and the prefixes."""
    slot = _SLOT_DTYPES[g]
    slots = data.view(slot)
    keep = np.ones(slots.size, dtype=bool)
    keep[: HEADER_NBYTES // g] = False
    first = starts // g
    for j in range(PREFIX_NBYTES // g):
        keep[first + j] = False
    return np.ascontiguousarray(slots[keep]).view(np.uint8)


def _diagnose(data: npt.NDArray[np.uint8], count: int, unit: int, what: str) -> None:
    """Walk the chunk carefully and raise FramingError for the first problem found."""
    raw = data.tobytes()
    size = len(raw)
    p = HEADER_NBYTES
    for i in range(count):
        if p + PREFIX_NBYTES > size:
            raise FramingError(
                f"truncated chunk: the length prefix of element {i} of {count} starts at byte "
                f"{p} but the chunk has only {size} bytes"
            )
        length = int.from_bytes(raw[p : p + PREFIX_NBYTES], "little")
        end = p + PREFIX_NBYTES + length
        if end > size:
            raise FramingError(
                f"truncated chunk: element {i} of {count} claims {length} bytes at byte "
                f"{p + PREFIX_NBYTES}, running to byte {end} past the chunk's end at {size}"
            )
        if length % unit:
            raise FramingError(
                f"element {i} of {count} is {length} bytes, not a whole number of {unit}-byte "
                f"{what}s"
            )
        p = end
    if p != size:
        raise FramingError(
            f"{size - p} trailing bytes after the last of {count} elements (which ends at byte "
            f"{p} of {size}): a chunk must end with its last element"
        )
