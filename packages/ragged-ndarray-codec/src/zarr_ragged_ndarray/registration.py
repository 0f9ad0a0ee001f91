"""Registering the codec (and, through zarr-ndarray-dtype, the data type) with zarr-python."""

from __future__ import annotations

from zarr.registry import register_codec

import zarr_ndarray_dtype
from zarr_ragged_ndarray.codec import CODEC_NAME, RaggedNDArrayCodec

__all__ = ["register"]


def register() -> None:
    """Register ``ragged-ndarray`` and ``ndarray`` with zarr; calling it again is a no-op."""
    zarr_ndarray_dtype.register()
    register_codec(CODEC_NAME, RaggedNDArrayCodec)
