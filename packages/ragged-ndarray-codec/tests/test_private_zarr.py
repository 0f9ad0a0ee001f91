"""No private member of zarr in this package: it uses zarr's public API only."""

from __future__ import annotations

from zarr_ndarray_dtype.testing import assert_zarr_private_only_in_compat


def test_no_private_zarr_members() -> None:
    assert_zarr_private_only_in_compat("zarr_ragged_ndarray", {})
