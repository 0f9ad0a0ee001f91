"""Tests for zarr_ndarray_tool._compat (private zarr names stay there: ruff SLF001, TID251)."""

from __future__ import annotations

import zarr

from zarr_ndarray_tool._compat import chunk_key_encoding


def test_chunk_key_encoding_on_every_release() -> None:
    assert chunk_key_encoding({"name": "default"}).encode_chunk_key((1, 2)) == "c/1/2"
    v2 = chunk_key_encoding({"name": "v2", "configuration": {"separator": "/"}})
    assert v2.encode_chunk_key((1, 2)) == "1/2"
    assert zarr.__version__  # imported: the shim ran against this release
