"""nd-arrow: the ``nd_arrow.array`` Arrow extension type for named N-dimensional arrays.

Importing it registers :class:`NdArrayType` with pyarrow; xarray and zarr (the extras) are
imported only when a function needs them.

>>> import numpy as np
>>> col = NdColumn.from_arrays([NdArray(np.zeros((2, 3)), ["time", "lat"], {"units": "K"})])
>>> col[0].sizes
{'time': 2, 'lat': 3}
"""

from __future__ import annotations

from nd_arrow._array import NdArray
from nd_arrow._batch import NdRecordBatch, decode_batches, encode_batches
from nd_arrow._column import NdArrayScalar, NdColumn, NdExtensionArray
from nd_arrow._extension import (
    NdArrayType,
    encoded_field,
    encoded_schema,
    global_attributes_field,
    is_global_attributes_field,
    is_nd_field,
    logical_field,
    logical_schema,
    register,
)
from nd_arrow._format import (
    ATTRS_FIELD,
    DIM_NAMES_FIELD,
    DIM_SIZES_FIELD,
    ENCODING_VERSION,
    EXTENSION_NAME,
    GLOBAL_ATTRIBUTES_EXTENSION,
    GLOBAL_ATTRIBUTES_FIELD,
    ITEM_FIELD,
    VALUES_FIELD,
)
from nd_arrow._io import read_ipc, read_parquet, rewrap, write_ipc, write_parquet
from nd_arrow._tensor import (
    from_fixed_shape_tensor,
    from_variable_shape_tensor,
    to_fixed_shape_tensor,
    to_variable_shape_tensor,
    variable_shape_tensor_storage,
)
from nd_arrow.errors import (
    InvalidArgumentError,
    InvalidAttributeError,
    InvalidDimensionsError,
    InvalidEncodingError,
    NdArrowError,
    NotSupportedError,
    SchemaMismatchError,
    ShapeMismatchError,
)
from nd_arrow.zarr_bridge import (
    from_zarr,
    to_zarr,
    variable_shape_tensor_to_zarr,
    zarr_to_variable_shape_tensor,
)

__all__ = [
    "ATTRS_FIELD",
    "DIM_NAMES_FIELD",
    "DIM_SIZES_FIELD",
    "ENCODING_VERSION",
    "EXTENSION_NAME",
    "GLOBAL_ATTRIBUTES_EXTENSION",
    "GLOBAL_ATTRIBUTES_FIELD",
    "ITEM_FIELD",
    "VALUES_FIELD",
    "InvalidArgumentError",
    "InvalidAttributeError",
    "InvalidDimensionsError",
    "InvalidEncodingError",
    "NdArray",
    "NdArrayScalar",
    "NdArrayType",
    "NdArrowError",
    "NdColumn",
    "NdExtensionArray",
    "NdRecordBatch",
    "NotSupportedError",
    "SchemaMismatchError",
    "ShapeMismatchError",
    "decode_batches",
    "encode_batches",
    "encoded_field",
    "encoded_schema",
    "from_fixed_shape_tensor",
    "from_variable_shape_tensor",
    "from_zarr",
    "global_attributes_field",
    "is_global_attributes_field",
    "is_nd_field",
    "logical_field",
    "logical_schema",
    "read_ipc",
    "read_parquet",
    "register",
    "rewrap",
    "to_fixed_shape_tensor",
    "to_variable_shape_tensor",
    "to_zarr",
    "variable_shape_tensor_storage",
    "variable_shape_tensor_to_zarr",
    "zarr_to_variable_shape_tensor",
    "write_ipc",
    "write_parquet",
]
