"""xarray (the ``xarray`` extra): ``DataArray`` <-> :class:`NdVariable` and ``Dataset`` <->
:class:`NdDataset` as functions, the classes' ``from_xarray`` / ``to_xarray`` (the format does
not record coordinates: :meth:`NdDataset.to_xarray` says which variables become ones)."""

from __future__ import annotations

import xarray  # noqa: F401  (the extra: importing this module without it fails here)

from nd_arrow._dataset import NdDataset
from nd_arrow._variable import NdVariable

__all__ = ["array_from_xarray", "array_to_xarray", "batch_from_xarray", "batch_to_xarray"]

array_from_xarray = NdVariable.from_xarray
array_to_xarray = NdVariable.to_xarray
batch_from_xarray = NdDataset.from_xarray
batch_to_xarray = NdDataset.to_xarray
