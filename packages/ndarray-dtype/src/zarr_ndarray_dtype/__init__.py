"""The ``ndarray`` Zarr v3 data type: array elements that are typed N-dimensional arrays.

Importing this package registers the data type with zarr-python (idempotently). zarr >= 3.4.1
also finds it through the ``zarr.data_type`` entry point without the import.

>>> from zarr_ndarray_dtype import NDArray
>>> NDArray(dtype="float32", shape=(None, 2))
NDArray(dtype='float32', shape=(None, 2))
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from zarr_ndarray_dtype._views import readonly_cells
from zarr_ndarray_dtype.bytes_codec import FixedCellBytesCodec
from zarr_ndarray_dtype.cells import VlenScalar, unbox
from zarr_ndarray_dtype.columnar import (
    Columnar,
    iter_columnar,
    read_aligned,
    read_columnar,
    write_aligned,
    write_columnar,
)
from zarr_ndarray_dtype.dtype import DTYPE_NAME, NDArray, NDArrayDType
from zarr_ndarray_dtype.errors import (
    AlignmentError,
    BlockAlignmentError,
    CellError,
    CellTypeError,
    ElementDTypeError,
    FillValueError,
    FillValueTypeError,
    HookWarning,
    MetadataError,
    NDArrayDTypeError,
    ShapePatternError,
)
from zarr_ndarray_dtype.pattern import ELEMENT_DTYPES, ShapePattern
from zarr_ndarray_dtype.registration import register

try:
    __version__ = version("zarr-ndarray-dtype")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0+unknown"

__all__ = [
    "AlignmentError",
    "DTYPE_NAME",
    "ELEMENT_DTYPES",
    "BlockAlignmentError",
    "CellError",
    "CellTypeError",
    "Columnar",
    "ElementDTypeError",
    "FillValueError",
    "FillValueTypeError",
    "FixedCellBytesCodec",
    "HookWarning",
    "MetadataError",
    "NDArray",
    "NDArrayDType",
    "NDArrayDTypeError",
    "ShapePattern",
    "ShapePatternError",
    "VlenScalar",
    "__version__",
    "iter_columnar",
    "read_aligned",
    "read_columnar",
    "readonly_cells",
    "register",
    "unbox",
    "write_aligned",
    "write_columnar",
]

register()
