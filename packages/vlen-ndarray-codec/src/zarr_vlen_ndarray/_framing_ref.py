"""The framing kernel in plain Python and numpy: the fallback where the C extension is not
built, and the reference it is tested against (both against numcodecs' ``VLenBytes`` too).

The simplest correct code, element by element; :mod:`zarr_vlen_ndarray.framing` checks the
arguments first. Also the one home of the framing's field sizes.
"""

from __future__ import annotations

import struct

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype.blocks import offsets_of

#: Bytes of the leading element count.
HEADER_NBYTES = 4
#: Bytes of each element's length prefix.
PREFIX_NBYTES = 4

NAME = "python"
_U32LE = struct.Struct("<I")


def scan(
    data: npt.NDArray[np.uint8], count: int, unit: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
    """The byte offset of every length prefix and every length, or None if anything is off."""
    starts, lengths = [], []
    at = HEADER_NBYTES
    for _ in range(count):
        if at + PREFIX_NBYTES > data.size:
            return None
        (length,) = _U32LE.unpack_from(data, at)
        if length % unit:
            return None
        starts.append(at)
        lengths.append(length)
        at += PREFIX_NBYTES + length
    if at != data.size:
        return None
    return np.array(starts, dtype=np.int64), np.array(lengths, dtype=np.int64)


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
        dst = dst + offsets_of(nbytes)[:-1]
    places = list(zip(starts.tolist(), nbytes.tolist(), dst.tolist(), strict=True))
    for start, n, to in places:
        if start < HEADER_NBYTES or n < 0 or start + PREFIX_NBYTES + n > data.size:
            raise ValueError("gather: starts/nbytes do not fit the chunk")
        if to < 0 or to + n > out.size:
            raise ValueError("gather: dst does not fit the output buffer")
    for start, n, to in places:
        out[to : to + n] = data[start + PREFIX_NBYTES : start + PREFIX_NBYTES + n]


def frame(
    payload: npt.NDArray[np.uint8], nbytes: npt.NDArray[np.int64], out: npt.NDArray[np.uint8]
) -> None:
    """Write the count, then each element's length prefix and payload, into ``out``."""
    _U32LE.pack_into(out, 0, nbytes.size)
    at, start = HEADER_NBYTES, 0
    for n in nbytes.tolist():
        _U32LE.pack_into(out, at, n)
        out[at + PREFIX_NBYTES : at + PREFIX_NBYTES + n] = payload[start : start + n]
        at += PREFIX_NBYTES + n
        start += n
