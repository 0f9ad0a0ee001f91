"""nd-arrow: the ``nd_arrow.array`` Arrow extension type for named N-dimensional arrays.

Importing it registers :class:`NdType` with pyarrow; xarray and zarr (the extras) are imported
only when a function needs them.

>>> import numpy as np
>>> col = NdColumn.from_arrays([NdVariable(np.zeros((2, 3)), ["time", "lat"], {"units": "K"})])
>>> col[0].sizes
{'time': 2, 'lat': 3}
"""

from __future__ import annotations

import warnings
from typing import Any

from nd_arrow import errors
from nd_arrow._column import (
    NdColumn,
    NdExtensionArray,
    NdScalar,
    NdType,
    encoded_field,
    encoded_schema,
    global_attributes_field,
    is_global_attributes_field,
    is_nd_field,
    logical_field,
    logical_schema,
    register,
)
from nd_arrow._dataset import NdDataset, decode_batches, encode_batches
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
from nd_arrow._variable import NdVariable
from nd_arrow.errors import *  # noqa: F403  (every exception: errors.__all__)
from nd_arrow.zarr_bridge import (
    from_zarr,
    to_zarr,
    variable_shape_tensor_to_zarr,
    zarr_to_variable_shape_tensor,
)

__all__ = ["NdColumn", "NdDataset", "NdExtensionArray", "NdScalar", "NdType", "NdVariable"]
__all__ += ["decode_batches", "encode_batches", "read_ipc", "read_parquet", "rewrap"]
__all__ += ["write_ipc", "write_parquet", "register", "from_zarr", "to_zarr"]
__all__ += ["encoded_field", "encoded_schema", "logical_field", "logical_schema", "is_nd_field"]
__all__ += ["global_attributes_field", "is_global_attributes_field"]
__all__ += ["from_fixed_shape_tensor", "to_fixed_shape_tensor", "from_variable_shape_tensor"]
__all__ += ["to_variable_shape_tensor", "variable_shape_tensor_storage"]
__all__ += ["variable_shape_tensor_to_zarr", "zarr_to_variable_shape_tensor"]
__all__ += ["ATTRS_FIELD", "DIM_NAMES_FIELD", "DIM_SIZES_FIELD", "ITEM_FIELD", "VALUES_FIELD"]
__all__ += ["ENCODING_VERSION", "EXTENSION_NAME", "GLOBAL_ATTRIBUTES_EXTENSION"]
__all__ += ["GLOBAL_ATTRIBUTES_FIELD"]
__all__ += errors.__all__

# The names before the renames, kept for one release: importing one warns.
_OLD = dict(NdArray=NdVariable, NdRecordBatch=NdDataset, NdArrayType=NdType, NdArrayScalar=NdScalar)


def __getattr__(name: str) -> Any:
    if name not in _OLD:
        raise AttributeError(f"module 'nd_arrow' has no attribute {name!r}")
    message = f"nd_arrow.{name} is deprecated: use nd_arrow.{_OLD[name].__name__}"
    warnings.warn(message, DeprecationWarning, stacklevel=2)
    return _OLD[name]
