"""The ``ndarray`` Zarr v3 data type: array elements that are typed N-dimensional arrays.

Importing this package registers the data type with zarr-python (idempotently); zarr >= 3.4.1
also finds it through the ``zarr.data_type`` entry point.

>>> from zarr_ndarray_dtype import NDArrayDType
>>> NDArrayDType(dtype="float32", shape=(None, 2))
NDArrayDType(dtype='float32', shape=(None, 2))
"""

from __future__ import annotations

import warnings
from importlib.metadata import PackageNotFoundError, version

from zarr_ndarray_dtype import _hooks, errors
from zarr_ndarray_dtype._columns import readonly_cells as _readonly_cells
from zarr_ndarray_dtype.cells import unbox
from zarr_ndarray_dtype.codecs import FixedCellBytesCodec as _FixedCellBytesCodec
from zarr_ndarray_dtype.columnar import (
    Columnar,
    iter_columnar,
    read_aligned,
    read_columnar,
    write_aligned,
    write_columnar,
)
from zarr_ndarray_dtype.dtype import DTYPE_NAME, NDArrayDType, _FillCell
from zarr_ndarray_dtype.errors import *  # noqa: F403  (every exception: errors.__all__)
from zarr_ndarray_dtype.pattern import ELEMENT_DTYPES, ShapePattern

try:
    __version__ = version("zarr-ndarray-dtype")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0+unknown"

__all__ = [
    "DTYPE_NAME", "ELEMENT_DTYPES", "NDArrayDType", "ShapePattern", "Columnar", "read_columnar",
    "write_columnar", "iter_columnar", "read_aligned", "write_aligned", "unbox", "register",
]  # fmt: skip
__all__ += errors.__all__


def register() -> None:
    """Register ``ndarray`` with zarr and install the hooks (idempotent). zarr >= 3.4.1 imports
    this package to resolve ANY data type: a failure warns, so plain zarr keeps working."""
    try:
        from zarr.dtype import data_type_registry

        registered: object = data_type_registry.contents.get(DTYPE_NAME)
        if registered is not NDArrayDType:
            data_type_registry.register(DTYPE_NAME, NDArrayDType)  # type: ignore[arg-type]
    except Exception as exc:
        import zarr

        warnings.warn(
            f"zarr-ndarray-dtype could not register the 'ndarray' data type with zarr "
            f"{getattr(zarr, '__version__', '?')} ({type(exc).__name__}: {exc}): arrays of that "
            "data type cannot be created or opened; pip install -U zarr-ndarray-dtype.",
            HookWarning,  # noqa: F405
            stacklevel=2,
        )
    _hooks.install()


__getattr__ = errors.deprecated(
    __name__,
    {
        "NDArray": (NDArrayDType, "use NDArrayDType (the same class)"),
        "VlenScalar": (_FillCell, "the fill cell's class is private; reads give arrays"),
        "readonly_cells": (_readonly_cells, "use Columnar.cells()"),
        "FixedCellBytesCodec": (_FixedCellBytesCodec, "pass BytesCodec(endian='little')"),
    },
)

register()
