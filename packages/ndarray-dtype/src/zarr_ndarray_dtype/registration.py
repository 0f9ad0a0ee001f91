"""Registering the data type with zarr-python (idempotent: safe on re-import)."""

from __future__ import annotations

from zarr.dtype import data_type_registry

from zarr_ndarray_dtype import _hooks
from zarr_ndarray_dtype.dtype import DTYPE_NAME, NDArray

__all__ = ["register"]


def register() -> None:
    """Register ``ndarray`` in zarr's data type registry and install the serializer hooks."""
    registered: object = data_type_registry.contents.get(DTYPE_NAME)
    if registered is not NDArray:
        data_type_registry.register(DTYPE_NAME, NDArray)  # type: ignore[arg-type]
    _hooks.install()
