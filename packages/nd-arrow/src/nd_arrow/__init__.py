"""nd-arrow: the ``nd_arrow.array`` Arrow extension type for named N-dimensional arrays.

Importing this package registers :class:`NdArrayType` with pyarrow.
"""

from __future__ import annotations

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
from nd_arrow.array import NdArray
from nd_arrow.column import NdColumn
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
from nd_arrow.extension import (
    NdArrayScalar,
    NdArrayType,
    NdExtensionArray,
    encoded_field,
    encoded_schema,
    global_attributes_field,
    is_global_attributes_field,
    is_nd_field,
    logical_field,
    logical_schema,
    register,
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
    "NotSupportedError",
    "SchemaMismatchError",
    "ShapeMismatchError",
    "encoded_field",
    "encoded_schema",
    "global_attributes_field",
    "is_global_attributes_field",
    "is_nd_field",
    "logical_field",
    "logical_schema",
    "register",
]
