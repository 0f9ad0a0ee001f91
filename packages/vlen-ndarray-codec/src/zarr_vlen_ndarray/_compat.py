"""zarr's private names that 0.2.0's modules exposed as attributes, kept importable there
(``zarr_vlen_ndarray.codec.parse_named_configuration``, ``zarr_vlen_ndarray.dtype``'s
``HasObjectCodec`` and ``DataTypeValidationError``): the same in zarr 3.1.0-3.4.x."""

from __future__ import annotations

from zarr.core.common import parse_named_configuration
from zarr.core.dtype.common import HasObjectCodec

try:  # zarr >= 3.3.0 moved the error here; the old path still works but warns there.
    from zarr.errors import DataTypeValidationError
except ImportError:  # zarr 3.1.x and 3.2.x
    from zarr.core.dtype.common import DataTypeValidationError  # type: ignore[no-redef]

__all__ = ["DataTypeValidationError", "HasObjectCodec", "parse_named_configuration"]
