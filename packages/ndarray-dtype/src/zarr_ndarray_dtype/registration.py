"""Registering the data type with zarr-python (idempotent: safe on re-import; never raises).

zarr >= 3.4.1 imports this package through the ``zarr.data_type`` entry point while resolving
ANY data type, so a failure here would break every zarr user: on a surprise (a zarr release
without the registry API used here) it warns and steps aside.
"""

from __future__ import annotations

import warnings

from zarr_ndarray_dtype import _hooks
from zarr_ndarray_dtype.dtype import DTYPE_NAME, NDArray
from zarr_ndarray_dtype.errors import HookWarning

__all__ = ["register"]


def register() -> None:
    """Register ``ndarray`` in zarr's data type registry and install the serializer hooks."""
    try:
        from zarr.dtype import data_type_registry

        registered: object = data_type_registry.contents.get(DTYPE_NAME)
        if registered is not NDArray:
            data_type_registry.register(DTYPE_NAME, NDArray)  # type: ignore[arg-type]
    except Exception as exc:
        import zarr

        warnings.warn(
            f"zarr-ndarray-dtype could not register the 'ndarray' data type with zarr "
            f"{getattr(zarr, '__version__', '?')} ({type(exc).__name__}: {exc}); arrays of that "
            "data type cannot be created or opened with this zarr release. Plain zarr is "
            "unaffected; pip install -U zarr-ndarray-dtype for a release that supports it.",
            HookWarning,
            stacklevel=2,
        )
    _hooks.install()
