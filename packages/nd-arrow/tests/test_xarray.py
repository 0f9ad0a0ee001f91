from __future__ import annotations

import numpy as np
import pytest

xr = pytest.importorskip("xarray")

from nd_arrow import NdColumn, NdDataset, NdVariable, decode_batches, encode_batches  # noqa: E402
from nd_arrow._storage import fill_nulls  # noqa: E402
from nd_arrow.xarray import array_to_xarray  # noqa: E402


def dataset() -> xr.Dataset:
    return xr.Dataset(
        {"t": (("time", "lat"), np.arange(6.0).reshape(2, 3), {"units": "K"})},
        coords={
            "lat": ("lat", np.array([1.0, 2.0, 3.0]), {"units": "degrees_north"}),
            "time": np.array(["2020-01-01", "2020-01-02"], "M8[ns]"),
            "station": ("lat", np.array(["a", "b", "c"], dtype=object)),
        },
        attrs={"title": "demo", "version": 3},
    )


def test_dataarray_round_trip() -> None:
    da = dataset()["t"]
    arr = NdVariable.from_xarray(da)
    assert arr.sizes == {"time": 2, "lat": 3} and arr.attrs == {"units": "K"}
    back = NdColumn.from_arrays([arr])[0]
    assert back is not None
    xr.testing.assert_identical(back.to_xarray("t"), da.drop_vars(list(da.coords)))


def test_nulls_become_nan() -> None:
    arr = NdVariable(np.array([1, 2, 3]), ["x"], mask=np.array([False, True, False]))
    da = arr.to_xarray()
    assert da.dtype == np.float64
    assert np.isnan(da.values[1])


def test_dataset_round_trip_through_record_batch() -> None:
    ds = dataset()
    batch = NdDataset.from_xarray(ds)
    assert batch.attrs == {"title": "demo", "version": 3}
    decoded = decode_batches(encode_batches([batch, batch]))
    assert len(decoded) == 2
    back = decoded[0].to_xarray(coords=["station"])
    xr.testing.assert_identical(back, ds)


@pytest.mark.parametrize("unit", ["s", "ns"])
@pytest.mark.parametrize("kind", ["M8", "m8"])
def test_fill_nulls_puts_nat_in_times(kind: str, unit: str) -> None:
    dtype = np.dtype(f"{kind}[{unit}]")
    values = np.array([1, 2, 3], "i8").view(dtype)
    out = fill_nulls(values, np.array([True, False, False]))
    assert out.dtype == dtype and np.isnat(out).tolist() == [True, False, False]
    assert not np.isnat(values).any()


@pytest.mark.parametrize("kind", ["M8", "m8"])
def test_null_times_become_nat(kind: str) -> None:
    """The NaT fill: a null time element becomes NaT of the same dtype (not NaN, not object).
    Nanoseconds: xarray before 2025 converts (with a warning) every other unit to them."""
    dtype = np.dtype(f"{kind}[ns]")
    values = np.array([1, 2, 3], "i8").view(dtype)
    arr = NdVariable(values, ["x"], mask=np.array([False, True, False]))
    via_column = NdColumn.from_arrays([arr])[0]
    assert via_column is not None and via_column.mask is not None
    for da in (arr.to_xarray(), array_to_xarray(via_column)):
        assert da.dtype == dtype
        assert np.isnat(da.values).tolist() == [False, True, False]
        assert da.values[0] == values[0] and da.values[2] == values[2]
    ds = NdDataset({"t": arr}).to_xarray()
    assert ds["t"].dtype == dtype
    assert np.isnat(ds["t"].values).tolist() == [False, True, False]
    # The source keeps its values under the mask: the fill works on a copy.
    assert not np.isnat(arr.values).any()


def test_other_nulls_fill_like_xarray() -> None:
    floats = NdVariable(np.array([1.5, 2.5]), ["x"], mask=np.array([True, False])).to_xarray()
    assert floats.dtype == np.float64 and np.isnan(floats.values[0])
    bools = NdVariable(np.array([True, False]), ["x"], mask=np.array([False, True])).to_xarray()
    assert bools.dtype == np.float64 and bools.values[0] == 1.0 and np.isnan(bools.values[1])
    text = NdVariable(np.array(["a", "b"], object), ["x"], mask=np.array([False, True])).to_xarray()
    assert text.values[0] == "a" and text.isnull().values.tolist() == [False, True]
