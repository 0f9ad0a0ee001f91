"""xarray support (the ``xarray`` extra): ``DataArray`` <-> :class:`NdArray`, ``Dataset`` <->
:class:`NdRecordBatch`.

A Dataset's data variables and coordinates all become arrays of the nd batch and ``Dataset.attrs``
its global attributes. The format does not record which arrays were coordinates; on the way back
an array named like its only dimension becomes an (index) coordinate, and ``coords=`` names more.
Element nulls become NaN (integers and booleans turn float64), NaT or None, as xarray does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import xarray as xr

from nd_arrow.array import NdArray
from nd_arrow.batch import NdRecordBatch
from nd_arrow.errors import InvalidArgumentError

__all__ = ["array_from_xarray", "array_to_xarray", "batch_from_xarray", "batch_to_xarray"]


def _str_dims(dims: Sequence[Any], where: str) -> list[str]:
    out = []
    for d in dims:
        if not isinstance(d, str):
            raise InvalidArgumentError(
                f"{where}: dimension {d!r} is not a string; nd arrays name dimensions with strings"
            )
        out.append(d)
    return out


def array_from_xarray(data_array: xr.DataArray | xr.Variable) -> NdArray:
    """An :class:`NdArray` with the DataArray's dims, values and attrs (NaN stays a value)."""
    return NdArray(
        np.asarray(data_array.values),
        _str_dims(data_array.dims, "DataArray"),
        dict(data_array.attrs),
    )


def _filled(arr: NdArray) -> npt.NDArray[Any]:
    values = arr.values
    if arr.mask is None:
        return values
    kind = values.dtype.kind
    if kind in "iub":
        out = values.astype(np.float64)
        out[arr.mask] = np.nan
    elif kind == "f":
        out = values.copy()
        out[arr.mask] = np.nan
    elif kind in "mM":
        out = values.copy()
        out[arr.mask] = np.array("NaT", dtype=values.dtype)
    else:
        out = values.astype(object)
        out[arr.mask] = None
    return out


def array_to_xarray(arr: NdArray, name: str | None = None) -> xr.DataArray:
    """An ``xarray.DataArray`` of an :class:`NdArray` (nulls filled, see the module docs)."""
    return xr.DataArray(_filled(arr), dims=arr.dims, attrs=dict(arr.attrs), name=name)


def batch_from_xarray(dataset: xr.Dataset) -> NdRecordBatch:
    """An :class:`NdRecordBatch` of a Dataset: every variable (data and coordinates) and attrs."""
    arrays = {}
    for name, var in dataset.variables.items():
        if not isinstance(name, str):
            raise InvalidArgumentError(f"Dataset variable {name!r} is not named by a string")
        arrays[name] = array_from_xarray(var)
    return NdRecordBatch(arrays, dict(dataset.attrs))


def batch_to_xarray(batch: NdRecordBatch, coords: Sequence[str] | None = None) -> xr.Dataset:
    """An ``xarray.Dataset``: arrays named like their only dimension, and those in ``coords``,
    become coordinates; the rest data variables; global attributes become ``attrs``."""
    wanted = set(coords or ())
    missing = wanted - set(batch.arrays)
    if missing:
        raise InvalidArgumentError(f"coords {sorted(missing)} are not arrays of the batch")
    data_vars: dict[str, xr.Variable] = {}
    coord_vars: dict[str, xr.Variable] = {}
    for name, arr in batch.arrays.items():
        var = xr.Variable(arr.dims, _filled(arr), attrs=dict(arr.attrs))
        if name in wanted or arr.dims == (name,):
            coord_vars[name] = var
        else:
            data_vars[name] = var
    return xr.Dataset(data_vars, coords=coord_vars, attrs=dict(batch.attrs))
