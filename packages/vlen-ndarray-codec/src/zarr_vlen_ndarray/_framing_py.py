"""The numpy framing kernel: the fallback where the compiled one is not built, and the oracle
the tests hold it to. Also the one home of the wire constants.
"""

from __future__ import annotations

import math
import sys
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype.blocks import copy_segments

#: Largest value a u32le field can hold: the limit on the element count and on each length.
U32_MAX = 0xFFFF_FFFF
#: Bytes of the leading element count.
HEADER_NBYTES = 4
#: Bytes of each element's length prefix.
PREFIX_NBYTES = 4

NAME = "python"

_SLOT_DTYPES: dict[int, np.dtype[Any]] = {4: np.dtype("<u4"), 2: np.dtype("<u2"), 1: np.dtype("u1")}


class FramingKernel(Protocol):
    """What ``framing`` needs from a kernel. Inputs are 1-D C-contiguous arrays.

    The caller has already checked what the kernel relies on: for ``scan``, ``data.size >=
    HEADER_NBYTES + PREFIX_NBYTES * count`` (so outputs sized by ``count`` are bounded by the
    bytes present) and ``unit >= 1``; for ``gather``, that ``starts``/``nbytes`` are elements
    :func:`scan` found in ``data`` and that each ``dst`` segment lies inside ``out``; for
    ``frame``, every length in ``0..U32_MAX``, at most
    ``U32_MAX`` elements, and lengths summing to ``payload.size``.
    """

    NAME: str

    def scan(
        self, data: npt.NDArray[np.uint8], count: int, unit: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
        """Byte offset of every length prefix and every length, or None if anything is off."""

    def gather(
        self,
        data: npt.NDArray[np.uint8],
        starts: npt.NDArray[np.int64],
        nbytes: npt.NDArray[np.int64],
        out: npt.NDArray[np.uint8],
        dst: npt.NDArray[np.int64] | int,
    ) -> None:
        """Copy the payload of element ``i`` to ``out[dst[i]:dst[i] + nbytes[i]]`` (an int
        ``dst``: back to back from there); ValueError for places outside the buffers."""

    def frame(
        self, payload: npt.NDArray[np.uint8], nbytes: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.uint8]:
        """The framed chunk (count, then prefix and payload of each element) as a new array."""


def slot_size(unit: int) -> int:
    """The slot width for element lengths that are all multiples of ``unit``."""
    return math.gcd(PREFIX_NBYTES, unit)


def scan(
    data: npt.NDArray[np.uint8], count: int, unit: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
    """Byte offsets of every prefix and every length, or None if anything is off."""
    size = data.size
    g = slot_size(unit)
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


def gather(
    data: npt.NDArray[np.uint8],
    starts: npt.NDArray[np.int64],
    nbytes: npt.NDArray[np.int64],
    out: npt.NDArray[np.uint8],
    dst: npt.NDArray[np.int64] | int,
) -> None:
    """Copy the payload of element ``i`` to ``out[dst[i]:dst[i] + nbytes[i]]`` (an int ``dst``:
    back to back from there); ValueError, nothing written, for places outside the buffers."""
    if isinstance(dst, int):
        dst = dst + np.concatenate(([0], np.cumsum(nbytes[:-1]))).astype(np.int64)
    if starts.size and (
        int(np.min(starts)) < HEADER_NBYTES
        or int(np.min(nbytes)) < 0
        or int(np.max(starts + PREFIX_NBYTES + nbytes)) > data.size
        or int(np.min(dst)) < 0
        or int(np.max(dst + nbytes)) > out.size
    ):
        raise ValueError("gather: starts/nbytes/dst do not fit the chunk or the output buffer")
    if starts.size == 0:
        return
    payloads = starts + PREFIX_NBYTES
    ends = payloads + nbytes
    if not (
        np.array_equal(payloads[1:], ends[:-1] + PREFIX_NBYTES)
        and np.array_equal(dst[1:], dst[:-1] + nbytes[:-1])
    ):
        copy_segments(data, payloads, nbytes, out, dst)
        return
    # Consecutive elements copied back to back (a whole chunk): one boolean mask over slots of
    # the largest of 4, 2, 1 bytes dividing every length and the first offset.
    lo, hi = int(starts[0]), int(ends[-1])
    g = 4
    if (nbytes & 3).any() or lo & 3:
        g = 1 if (nbytes & 1).any() or lo & 1 else 2
    slots = data[lo:hi].view(_SLOT_DTYPES[g])
    keep = np.ones(slots.size, dtype=bool)
    first = (starts - lo) // g
    for j in range(PREFIX_NBYTES // g):
        keep[first + j] = False
    at = int(dst[0])
    size = hi - lo - PREFIX_NBYTES * starts.size
    out[at : at + size].view(_SLOT_DTYPES[g])[...] = slots[keep]


def frame(payload: npt.NDArray[np.uint8], nbytes: npt.NDArray[np.int64]) -> npt.NDArray[np.uint8]:
    """Frame the elements whose payloads are concatenated in ``payload``."""
    count = nbytes.size
    total = payload.size
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
