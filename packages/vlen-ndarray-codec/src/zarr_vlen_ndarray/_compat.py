"""zarr's private names that 0.2.0's modules exposed as attributes, kept importable there
(``zarr_vlen_ndarray.codec.parse_named_configuration``, ``zarr_vlen_ndarray.dtype.HasObjectCodec``):
the same in every zarr release 3.1.0-3.4.x."""

from __future__ import annotations

from zarr.core.common import parse_named_configuration
from zarr.core.dtype.common import HasObjectCodec

__all__ = ["HasObjectCodec", "parse_named_configuration"]
