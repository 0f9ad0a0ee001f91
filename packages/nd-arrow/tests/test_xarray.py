from __future__ import annotations

import numpy as np
import pytest

xr = pytest.importorskip("xarray")

from nd_arrow import NdArray, NdColumn  # noqa: E402
from nd_arrow.batch import NdRecordBatch, decode_batches, encode_batches  # noqa: E402


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
    arr = NdArray.from_xarray(da)
    assert arr.sizes == {"time": 2, "lat": 3} and arr.attrs == {"units": "K"}
    back = NdColumn.from_arrays([arr])[0]
    assert back is not None
    xr.testing.assert_identical(back.to_xarray("t"), da.drop_vars(list(da.coords)))


def test_nulls_become_nan() -> None:
    arr = NdArray(np.array([1, 2, 3]), ["x"], mask=np.array([False, True, False]))
    da = arr.to_xarray()
    assert da.dtype == np.float64
    assert np.isnan(da.values[1])


def test_dataset_round_trip_through_record_batch() -> None:
    ds = dataset()
    batch = NdRecordBatch.from_xarray(ds)
    assert batch.attrs == {"title": "demo", "version": 3}
    decoded = decode_batches(encode_batches([batch, batch]))
    assert len(decoded) == 2
    back = decoded[0].to_xarray(coords=["station"])
    xr.testing.assert_identical(back, ds)
