"""``NdVariable``: one N-d array with named dimensions, attributes and element nulls as a mask
(one row of an nd column, one variable of a dataset)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from nd_arrow import _format as fmt
from nd_arrow import errors
from nd_arrow._format import Mask
from nd_arrow._storage import (
    arrow_type_for_dtype,
    attrs_equal,
    checked_attrs,
    fill_nulls,
    is_string_dtype,
)

if TYPE_CHECKING:
    import xarray


class NdVariable:
    """One array: values, one name per axis, attributes ``{str: scalar | str | 1-D array}``, and
    element nulls as a ``mask`` (True = null; NaT counts as null). Strings are held as ``str``
    objects.

    >>> import numpy as np
    >>> a = NdVariable.from_numpy(np.zeros((2, 3)), dims=["time", "lat"], attrs={"units": "K"})
    >>> a.sizes
    {'time': 2, 'lat': 3}
    """

    __slots__ = ("_attrs", "_dims", "_mask", "_values")

    def __init__(
        self,
        values: npt.ArrayLike,
        dims: Sequence[str] | None = None,
        attrs: Mapping[str, Any] | None = None,
        *,
        mask: npt.ArrayLike | None = None,
    ) -> None:
        where = type(self).__name__
        if isinstance(values, np.ma.MaskedArray):
            mask = np.ma.getmaskarray(values) if mask is None else mask
            values = np.ma.getdata(values)
        arr = np.asarray(values)
        arr = arr.astype(object) if arr.dtype.kind in "UT" else arr  # strings as str objects
        arrow_type_for_dtype(arr.dtype, f"{where} values")
        fmt.check_dim_size(max(arr.shape, default=0), f"{where} (shape {arr.shape})")
        m = None if mask is None else np.asarray(mask, dtype=np.bool_)
        if m is not None and m.shape != arr.shape:
            raise errors.InvalidArgumentError(
                f"{where}: mask shape {m.shape} differs from values shape {arr.shape}; the mask "
                "has one flag per value"
            )
        if arr.dtype.kind in "mM" and (nat := np.isnat(arr)).any():
            m = nat if m is None else (m | nat)
        self._values: npt.NDArray[Any] = arr
        self._mask: Mask | None = m if m is not None and m.any() else None
        self._dims = fmt.check_dim_names(dims, arr.ndim, where)
        self._attrs = checked_attrs(attrs, where)

    @classmethod
    def from_numpy(
        cls,
        arr: npt.ArrayLike,
        dims: Sequence[str] | None = None,
        attrs: Mapping[str, Any] | None = None,
    ) -> NdVariable:
        """A variable of a numpy (or masked) array; ``dims`` default to ``dim_0, dim_1, ...``."""
        return cls(arr, dims, attrs)

    @classmethod
    def from_xarray(cls, data_array: xarray.DataArray | xarray.Variable) -> NdVariable:
        """A variable of an ``xarray.DataArray`` or ``Variable``: its dims, values and attrs (NaN
        stays a value)."""
        return cls(np.asarray(data_array.values), list(data_array.dims), dict(data_array.attrs))  # type: ignore[arg-type]

    def to_xarray(self, name: str | None = None) -> xarray.DataArray:
        """An ``xarray.DataArray``; nulls become NaN / NaT / None (ints and bools turn float)."""
        import xarray as xr  # the optional extra, imported only here

        values = fill_nulls(self._values, self._mask)
        return xr.DataArray(values, dims=self._dims, attrs=dict(self._attrs), name=name)

    @property
    def values(self) -> npt.NDArray[Any]:
        """The values as stored (positions under the mask hold a filler)."""
        return self._values

    @property
    def mask(self) -> Mask | None:
        """Null flags (True = null), or None when no element is null."""
        return self._mask

    @property
    def dims(self) -> tuple[str, ...]:
        return self._dims

    @property
    def attrs(self) -> dict[str, Any]:
        return self._attrs

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._values.shape)

    @property
    def ndim(self) -> int:
        return int(self._values.ndim)

    @property
    def dtype(self) -> np.dtype[Any]:
        return self._values.dtype

    @property
    def sizes(self) -> dict[str, int]:
        return dict(zip(self._dims, self._values.shape, strict=True))

    def to_numpy(self) -> npt.NDArray[Any]:
        """Plain ndarray without nulls, ``numpy.ma.MaskedArray`` with nulls."""
        return self._values if self._mask is None else np.ma.MaskedArray(self._values, self._mask)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NdVariable):
            return NotImplemented
        a, b = self._values, other._values
        strings = is_string_dtype(a.dtype) and is_string_dtype(b.dtype)
        if self._dims != other._dims or a.shape != b.shape or (a.dtype != b.dtype and not strings):
            return False
        ma = np.zeros(a.shape, np.bool_) if self._mask is None else self._mask
        mb = np.zeros(b.shape, np.bool_) if other._mask is None else other._mask
        if not np.array_equal(ma, mb):
            return False
        x, y = a[~ma], b[~ma]
        if a.dtype.kind in "mM":
            x, y = x.view(np.int64), y.view(np.int64)
        same = np.array_equal(x, y, equal_nan=a.dtype.kind == "f")
        return bool(same) and attrs_equal(self._attrs, other._attrs)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        sizes = ", ".join(f"{d}={s}" for d, s in self.sizes.items())
        nulls = "" if self._mask is None else f", nulls={int(self._mask.sum())}"
        return f"NdVariable<{self.dtype}>({sizes}{nulls}, attrs={sorted(self._attrs)})"


def trusted_variable(
    values: npt.NDArray[Any], mask: Mask | None, dims: tuple[str, ...], attrs: dict[str, Any]
) -> NdVariable:
    """A variable without checks, of storage that was decoded and checked already."""
    out = NdVariable.__new__(NdVariable)
    out._values, out._mask, out._dims, out._attrs = values, mask, dims, attrs
    return out
