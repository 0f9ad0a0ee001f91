"""xarray support (the ``xarray`` extra): ``DataArray`` <-> :class:`NdVariable` and ``Dataset``
<-> :class:`NdDataset` as functions, the classes' ``from_xarray`` / ``to_xarray``.

The format does not record which arrays were coordinates: on the way back an array named like its
only dimension becomes an (index) coordinate, and ``coords=`` names more. Element nulls become
NaN (integers and booleans turn float64), NaT or None, as xarray does.
"""

from __future__ import annotations

import xarray  # noqa: F401  (the extra: importing this module without it fails here)

from nd_arrow._dataset import NdDataset
from nd_arrow._variable import NdVariable

__all__ = ["array_from_xarray", "array_to_xarray", "batch_from_xarray", "batch_to_xarray"]

array_from_xarray = NdVariable.from_xarray
array_to_xarray = NdVariable.to_xarray
batch_from_xarray = NdDataset.from_xarray
batch_to_xarray = NdDataset.to_xarray
