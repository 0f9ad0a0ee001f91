"""The framing kernel in plain Python: the fallback where the C extension ``_framing_ext`` is not
built, and the reference it is tested against (both against numcodecs' ``VLenBytes`` too).

The simplest correct code, element by element, with the C kernel's signatures;
:mod:`zarr_vlen_ndarray.framing` checks the arguments first. The home of the field sizes.
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

_U32LE = struct.Struct("<I")
Bytes = npt.NDArray[np.uint8]
Ints = npt.NDArray[np.int64]


def scan(data: Bytes, count: int, unit: int, starts: Ints, nbytes: Ints) -> bool:
    """Fill in the offset of every length prefix and every length; False if a prefix or payload
    runs past the end, a length is not a multiple of ``unit``, or bytes follow the last element."""
    at = HEADER_NBYTES
    for i in range(count):
        if at + PREFIX_NBYTES > data.size:
            return False
        (length,) = _U32LE.unpack_from(data, at)
        if length % unit:
            return False
        starts[i], nbytes[i] = at, length
        at += PREFIX_NBYTES + length
    return at == data.size


def gather(data: Bytes, starts: Ints, nbytes: Ints, out: Bytes, dst: Ints | int) -> None:
    """Copy the payload of element ``i`` to ``out[dst[i]:dst[i] + nbytes[i]]`` (an int ``dst``:
    back to back from there); ValueError at the first place outside the buffers."""
    if isinstance(dst, int):
        dst = dst + offsets_of(nbytes)[:-1]
    source, target = memoryview(data), memoryview(out)
    for start, n, to in zip(starts, nbytes, dst, strict=True):  # no lists as long as the chunk
        at = start + PREFIX_NBYTES
        if start < HEADER_NBYTES or n < 0 or at + n > data.size or to < 0 or to + n > out.size:
            raise ValueError("gather: starts, nbytes or dst do not fit the buffers")
        target[to : to + n] = source[at : at + n]


def frame(payload: Bytes, nbytes: Ints, out: Bytes) -> None:
    """Write the count, then each element's length prefix and payload, into ``out``."""
    _U32LE.pack_into(out, 0, nbytes.size)
    at, start = HEADER_NBYTES, 0
    for n in nbytes.tolist():
        _U32LE.pack_into(out, at, n)
        out[at + PREFIX_NBYTES : at + PREFIX_NBYTES + n] = payload[start : start + n]
        at += PREFIX_NBYTES + n
        start += n
