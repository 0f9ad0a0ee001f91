"""Tests for zarr_ndarray_tool._compat and its use of zarr's private members."""

from __future__ import annotations

import zarr

from zarr_ndarray_dtype.testing import assert_zarr_private_only_in_compat
from zarr_ndarray_tool._compat import chunk_key_encoding

#: The private zarr members _compat reaches for, and the releases that need each.
PRIVATE = {"_is_open": "zarr 3.1.0: ZipStore.close fails on a store it never opened"}
#: Names of other libraries that zarr happens to use privately too.
FOREIGN = {"_info": "fsspec's async AsyncFileSystem._info (_remote.py, s3fs)"}


def test_private_zarr_members_only_in_compat() -> None:
    assert_zarr_private_only_in_compat("zarr_ndarray_tool", PRIVATE, FOREIGN)


def test_chunk_key_encoding_on_every_release() -> None:
    assert chunk_key_encoding({"name": "default"}).encode_chunk_key((1, 2)) == "c/1/2"
    v2 = chunk_key_encoding({"name": "v2", "configuration": {"separator": "/"}})
    assert v2.encode_chunk_key((1, 2)) == "1/2"
    assert zarr.__version__  # imported: the shim ran against this release
