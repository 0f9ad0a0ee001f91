"""zarr's private names that 0.2.0's modules exposed (``codec.parse_named_configuration``,
``dtype.HasObjectCodec``, ``dtype.DataTypeValidationError``): the same in zarr 3.1.0-3.4.x."""

from zarr.core.common import parse_named_configuration as parse_named_configuration
from zarr.core.dtype.common import HasObjectCodec as HasObjectCodec

try:  # zarr >= 3.3.0 moved the error here; the old path still works but warns there.
    from zarr.errors import DataTypeValidationError as DataTypeValidationError
except ImportError:  # zarr 3.1.x and 3.2.x
    from zarr.core.dtype.common import (  # type: ignore[no-redef]
        DataTypeValidationError as DataTypeValidationError,
    )
