"""xarray support (the ``xarray`` extra): ``DataArray`` <-> :class:`NdVariable` and ``Dataset``
<-> :class:`NdDataset` as functions, the same as the classes' ``from_xarray`` / ``to_xarray``.

The format does not record which arrays were coordinates: on the way back an array named like its
only dimension becomes an (index) coordinate, and ``coords=`` names more. Element nulls become
NaN (integers and booleans turn float64), NaT or None, as xarray does.
"""

from __future__ import annotations

from collections.abc import Sequence

import xarray as xr

from nd_arrow._dataset import NdDataset
from nd_arrow._variable import NdVariable

__all__ = ["array_from_xarray", "array_to_xarray", "batch_from_xarray", "batch_to_xarray"]


def array_from_xarray(data_array: xr.DataArray | xr.Variable) -> NdVariable:
    """An :class:`NdVariable` with the DataArray's dims, values and attrs (NaN stays a value)."""
    return NdVariable.from_xarray(data_array)


def array_to_xarray(arr: NdVariable, name: str | None = None) -> xr.DataArray:
    """An ``xarray.DataArray`` of an :class:`NdVariable` (nulls filled, see the module docs)."""
    return arr.to_xarray(name)


def batch_from_xarray(dataset: xr.Dataset) -> NdDataset:
    """An :class:`NdDataset` of a Dataset: every variable (data and coordinates) and attrs."""
    return NdDataset.from_xarray(dataset)


def batch_to_xarray(batch: NdDataset, coords: Sequence[str] | None = None) -> xr.Dataset:
    """An ``xarray.Dataset``: arrays named like their only dimension, and those in ``coords``,
    become coordinates; the rest data variables; global attributes become ``attrs``."""
    return batch.to_xarray(coords)
