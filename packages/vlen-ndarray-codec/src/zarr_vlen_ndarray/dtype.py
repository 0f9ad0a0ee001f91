"""``zarr_vlen_ndarray.dtype`` as in 0.2.0: the ``ndarray`` data type of zarr-ndarray-dtype,
the very same objects, so ``isinstance`` checks and registrations agree."""

from __future__ import annotations

from zarr.dtype import ZDType as ZDType

from zarr_ndarray_dtype import DTYPE_NAME, ELEMENT_DTYPES, NDArrayDType, unbox
from zarr_ndarray_dtype import NDArrayDType as NDArray
from zarr_ndarray_dtype.dtype import _FillCell as VlenScalar
from zarr_vlen_ndarray._compat import DataTypeValidationError
from zarr_vlen_ndarray._compat import HasObjectCodec as HasObjectCodec

__all__ = [
    "ALLOWED_SCALAR_DTYPES", "DTYPE_NAME", "DataTypeValidationError", "NDArray", "NDArrayDType",
    "VlenScalar", "unbox",
]  # fmt: skip

#: The 14 element dtype names (0.2.0's spelling of ``zarr_ndarray_dtype.ELEMENT_DTYPES``).
ALLOWED_SCALAR_DTYPES = frozenset(ELEMENT_DTYPES)
