"""The compiled framing kernel: numpy-facing wrappers around the C extension ``_framing_ext``.

Importing this module raises ImportError when the extension was not built (an sdist installed
without a C compiler); :mod:`zarr_vlen_ndarray.framing` then uses
:mod:`zarr_vlen_ndarray._framing_py`. The wrappers allocate the outputs (sized from checks the
caller already made against the bytes present) and hand every array to C through the buffer
protocol; the C loops run without the GIL.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_vlen_ndarray import _framing_ext
from zarr_vlen_ndarray._framing_py import HEADER_NBYTES, PREFIX_NBYTES

NAME = "c"


def scan(
    data: npt.NDArray[np.uint8], count: int, unit: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
    """Byte offsets of every prefix and every length, or None if anything is off."""
    starts = np.empty(count, dtype=np.int64)
    nbytes = np.empty(count, dtype=np.int64)
    if not _framing_ext.scan(data, count, unit, starts, nbytes):
        return None
    return starts, nbytes


#: Copy the payload of each element to its place in out: the extension's function as it is (it
#: takes the arrays the Python kernel's ``gather`` takes).
gather = _framing_ext.gather


def frame(payload: npt.NDArray[np.uint8], nbytes: npt.NDArray[np.int64]) -> npt.NDArray[np.uint8]:
    """Frame the elements whose payloads are concatenated in ``payload``."""
    nbytes = np.ascontiguousarray(nbytes, dtype=np.int64)
    out = np.empty(HEADER_NBYTES + PREFIX_NBYTES * nbytes.size + payload.size, dtype=np.uint8)
    _framing_ext.frame(payload, nbytes, out)
    return out
