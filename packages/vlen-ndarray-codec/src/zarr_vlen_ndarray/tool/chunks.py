"""The tool's one call into the codec's chunk decoder (for chunks it reads itself, e.g. zarr v2).

Every place in the tool that unframes a chunk calls :func:`decode_cells`, which goes through the
codec's one chunk decoder (``zarr_vlen_ndarray.block.decode_block``, via ``codec.decode_chunk``).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype import NDArray
from zarr_vlen_ndarray.codec import decode_chunk

__all__ = ["decode_cells"]


def decode_cells(framed: npt.NDArray[np.uint8], count: int, dtype: NDArray) -> np.ndarray:
    """Unframe ``count`` cells of ``dtype`` from a decompressed chunk: an object array (count,).

    Raises the codec's ValueError naming what is wrong (a short, long or misframed chunk, an
    element that is not a whole number of rows, bool bytes other than 0/1).
    """
    return decode_chunk(framed, (count,), dtype)
