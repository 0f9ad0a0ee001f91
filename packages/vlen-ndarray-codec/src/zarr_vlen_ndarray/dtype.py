"""Compatibility module: ``zarr_vlen_ndarray.dtype`` as in 0.2.0.

The ``ndarray`` data type moved to the ``zarr-ndarray-dtype`` package; these are the very same
objects, so ``isinstance`` checks and registrations agree whichever module they come from.
"""

from __future__ import annotations

from zarr.dtype import ZDType as ZDType

from zarr_ndarray_dtype import (
    DTYPE_NAME,
    ELEMENT_DTYPES,
    NDArray,
    NDArrayDType,
    VlenScalar,
    unbox,
)
from zarr_vlen_ndarray._compat import DataTypeValidationError
from zarr_vlen_ndarray._compat import HasObjectCodec as HasObjectCodec

__all__ = [
    "ALLOWED_SCALAR_DTYPES",
    "DTYPE_NAME",
    "DataTypeValidationError",
    "NDArray",
    "NDArrayDType",
    "VlenScalar",
    "unbox",
]

#: The 14 element dtype names (0.2.0 spelling of ``zarr_ndarray_dtype.ELEMENT_DTYPES``).
ALLOWED_SCALAR_DTYPES = frozenset(ELEMENT_DTYPES)
