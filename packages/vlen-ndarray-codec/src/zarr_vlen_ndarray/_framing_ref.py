"""The numpy framing kernel: the fallback where the compiled one is not built, and the oracle
the tests hold it to. Also the one home of the wire constants.
"""

from __future__ import annotations

import functools
import struct
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype.blocks import copy_segments, offsets_of, ranges

#: Largest value a u32le field can hold: the limit on the element count and on each length.
U32_MAX = 0xFFFF_FFFF
#: Bytes of the leading element count.
HEADER_NBYTES = 4
#: Bytes of each element's length prefix.
PREFIX_NBYTES = 4

NAME = "python"


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


def scan(
    data: npt.NDArray[np.uint8], count: int, unit: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
    """Byte offsets of every prefix and every length, or None if anything is off."""
    size, read = data.size, struct.Struct("<I").unpack_from
    starts = [0] * count
    at = HEADER_NBYTES
    try:
        for i in range(count):  # each element starts where the one before it ends: sequential
            starts[i] = at
            at += PREFIX_NBYTES + read(data, at)[0]
    except struct.error:  # a prefix past the end
        return None
    if at != size:
        return None
    first = np.array(starts, dtype=np.int64)
    nbytes = np.diff(np.append(first, size)) - PREFIX_NBYTES
    if unit > 1 and (nbytes % unit).any():
        return None
    return first, nbytes


def gather(
    data: npt.NDArray[np.uint8],
    starts: npt.NDArray[np.int64],
    nbytes: npt.NDArray[np.int64],
    out: npt.NDArray[np.uint8],
    dst: npt.NDArray[np.int64] | int,
) -> None:
    """Copy the payload of element ``i`` to ``out[dst[i]:dst[i] + nbytes[i]]`` (an int ``dst``:
    back to back from there); ValueError, nothing written, for places outside the buffers."""
    if not starts.size:
        return
    if isinstance(dst, int):
        dst = dst + offsets_of(nbytes)[:-1]
    ends = starts + PREFIX_NBYTES + nbytes
    if (
        int(np.min(starts)) < HEADER_NBYTES
        or int(np.min(nbytes)) < 0
        or int(np.max(ends)) > data.size
        or int(np.min(dst)) < 0
        or int(np.max(dst + nbytes)) > out.size
    ):
        raise ValueError("gather: starts/nbytes/dst do not fit the chunk or the output buffer")
    if np.array_equal(starts[1:], ends[:-1]) and np.array_equal(dst[1:], dst[:-1] + nbytes[:-1]):
        # Elements in order, back to back in both buffers (a whole chunk): the payloads are the
        # bytes between them, less the length prefixes, which one boolean mask drops.
        lo, hi, at = int(starts[0]), int(ends[-1]), int(dst[0])
        word = _word(nbytes, lo, at)
        keep = np.ones((hi - lo) // word.itemsize, dtype=bool)
        keep[_prefix_words(starts - lo, word)] = False
        size = hi - lo - PREFIX_NBYTES * starts.size
        out[at : at + size].view(word)[...] = data[lo:hi].view(word)[keep]
        return
    copy_segments(data, starts + PREFIX_NBYTES, nbytes, out, dst)


def frame(payload: npt.NDArray[np.uint8], nbytes: npt.NDArray[np.int64]) -> npt.NDArray[np.uint8]:
    """Frame the elements whose payloads are concatenated in ``payload``."""
    count = nbytes.size
    out = np.empty(HEADER_NBYTES + PREFIX_NBYTES * count + payload.size, dtype=np.uint8)
    out[:HEADER_NBYTES] = np.array([count], "<u4").view(np.uint8)
    prefixes = HEADER_NBYTES + offsets_of(nbytes + PREFIX_NBYTES)[:-1]
    word = _word(nbytes)
    at = _prefix_words(prefixes, word)
    words = out.view(word)
    words[at] = nbytes.astype("<u4").view(word)
    keep = np.ones(words.size, dtype=bool)
    keep[: HEADER_NBYTES // word.itemsize] = False
    keep[at] = False
    words[keep] = payload.view(word)  # the payloads, in order, where the prefixes leave room
    return out


def _word(nbytes: npt.NDArray[np.int64], *offsets: int) -> np.dtype[np.unsignedinteger[Any]]:
    """The widest of u4, u2, u1 dividing every length and offset: masks over words, not bytes."""
    low = int((nbytes & 1).any()) | 2 * int((nbytes & 2).any())  # the lengths' two low bits
    bits = functools.reduce(int.__or__, offsets, low)
    return np.dtype("<u4" if not bits & 3 else "<u2" if not bits & 1 else "u1")


def _prefix_words(prefixes: npt.NDArray[np.int64], word: np.dtype[Any]) -> npt.NDArray[np.int64]:
    """The index of every word of every length prefix starting at the byte offsets given."""
    per = PREFIX_NBYTES // word.itemsize
    return ranges(np.full(prefixes.size, per), prefixes // word.itemsize)[0]
