"""The compiled framing kernel: the C extension ``_framing_ext`` (built where a compiler was),
its arrays handed over through the buffer protocol; long loops run without the GIL.

Importing this module raises ImportError where the extension was not built;
:mod:`zarr_vlen_ndarray.framing` then uses :mod:`zarr_vlen_ndarray._framing_ref`.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_vlen_ndarray import _framing_ext

NAME = "c"
#: ``gather(data, starts, nbytes, out, dst)`` and ``frame(payload, nbytes, out)`` as they are.
gather = _framing_ext.gather
frame = _framing_ext.frame


def scan(
    data: npt.NDArray[np.uint8], count: int, unit: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
    """The byte offset of every length prefix and every length, or None if anything is off."""
    starts = np.empty(count, dtype=np.int64)
    nbytes = np.empty(count, dtype=np.int64)
    return (starts, nbytes) if _framing_ext.scan(data, count, unit, starts, nbytes) else None
