"""zarr_vlen_ndarray.dtype stays importable as in 0.2.0, re-exporting zarr_ndarray_dtype."""

from __future__ import annotations

from zarr_vlen_ndarray import dtype


def test_allowed_scalar_dtypes() -> None:
    assert (
        frozenset(
            [
                "bool",
                "int8",
                "int16",
                "int32",
                "int64",
                "uint8",
                "uint16",
                "uint32",
                "uint64",
                "float16",
                "float32",
                "float64",
                "complex64",
                "complex128",
            ]
        )
        == dtype.ALLOWED_SCALAR_DTYPES
    )
