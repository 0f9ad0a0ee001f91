"""The ``ndarray`` Zarr v3 data type: array elements that are typed N-dimensional arrays.

Importing this package registers the data type with zarr-python (idempotently); zarr >= 3.4.1
also finds it through the ``zarr.data_type`` entry point.

>>> from zarr_ndarray_dtype import NDArrayDType
>>> NDArrayDType(dtype="float32", shape=(None, 2))
NDArrayDType(dtype='float32', shape=(None, 2))
"""

from __future__ import annotations

import importlib
import warnings
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from zarr_ndarray_dtype import _hooks, errors
from zarr_ndarray_dtype.cells import unbox
from zarr_ndarray_dtype.columnar import (
    Columnar,
    iter_columnar,
    read_aligned,
    read_columnar,
    write_aligned,
    write_columnar,
)
from zarr_ndarray_dtype.dtype import DTYPE_NAME, NDArrayDType
from zarr_ndarray_dtype.errors import *  # noqa: F403  (every exception: errors.__all__)
from zarr_ndarray_dtype.pattern import ELEMENT_DTYPES, ShapePattern

try:
    __version__ = version("zarr-ndarray-dtype")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0+unknown"

__all__ = [
    "DTYPE_NAME", "ELEMENT_DTYPES", "NDArrayDType", "ShapePattern", "Columnar", "read_columnar",
    "write_columnar", "iter_columnar", "read_aligned", "write_aligned", "unbox", "register",
    "__version__",
]  # fmt: skip
__all__ += errors.__all__


def register() -> None:
    """Register ``ndarray`` in zarr's data type registry and install the hooks (idempotent).

    zarr >= 3.4.1 imports this package while resolving ANY data type, so a zarr release without
    this registry API gets a warning, never an error: plain zarr keeps working.
    """
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


#: Names renamed or made private: where each is now, and what to use (one release, warning).
_DEPRECATED = {
    "NDArray": ("dtype", "NDArrayDType", "use NDArrayDType (the same class)"),
    "VlenScalar": ("dtype", "_FillCell", "the fill cell's class is private; reads give arrays"),
    "readonly_cells": ("_columns", "readonly_cells", "use Columnar.cells()"),
    "FixedCellBytesCodec": ("codecs", "FixedCellBytesCodec", "pass BytesCodec(endian='little')"),
}


def __getattr__(name: str) -> Any:
    if name not in _DEPRECATED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute, instead = _DEPRECATED[name]
    warnings.warn(
        f"zarr_ndarray_dtype.{name} is deprecated: {instead}", DeprecationWarning, stacklevel=2
    )
    return getattr(importlib.import_module(f"{__name__}.{module}"), attribute)


register()
