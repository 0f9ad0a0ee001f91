"""0.2.0's ``zarr_vlen_ndarray.dtype``: zarr-ndarray-dtype's data type, the very same objects."""

from zarr.dtype import ZDType as ZDType

from zarr_ndarray_dtype import DTYPE_NAME, ELEMENT_DTYPES, NDArrayDType, unbox
from zarr_ndarray_dtype import NDArrayDType as NDArray
from zarr_ndarray_dtype.dtype import _FillCell as VlenScalar
from zarr_vlen_ndarray._compat import DataTypeValidationError, HasObjectCodec

__all__ = [
    "ALLOWED_SCALAR_DTYPES", "DTYPE_NAME", "DataTypeValidationError", "HasObjectCodec", "NDArray",
    "NDArrayDType", "VlenScalar", "ZDType", "unbox",
]  # fmt: skip

ALLOWED_SCALAR_DTYPES = frozenset(ELEMENT_DTYPES)  # 0.2.0's name of the 14 element dtypes
