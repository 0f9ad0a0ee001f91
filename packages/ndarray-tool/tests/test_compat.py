"""Tests for zarr_ndarray_tool._compat, the one home of zarr's private names in the tool."""

from __future__ import annotations

import re
from pathlib import Path

import zarr

import zarr_ndarray_tool
from zarr_ndarray_tool._compat import chunk_key_encoding


def test_private_zarr_names_only_in_compat() -> None:
    """No module but _compat imports zarr.core or reaches for a private attribute (``x._y``)."""
    for path in Path(zarr_ndarray_tool.__file__).parent.glob("*.py"):
        if path.name != "_compat.py":
            text = path.read_text()
            owners = set(re.findall(r"(\w+)\._[a-z]", text)) - {"zarr_ndarray_tool"}
            assert "zarr.core" not in text and not owners, (path.name, owners)


def test_chunk_keys_on_every_release() -> None:
    assert chunk_key_encoding({"name": "default"}).encode_chunk_key((1, 2)) == "c/1/2"
    v2 = chunk_key_encoding({"name": "v2", "configuration": {"separator": "/"}})
    assert v2.encode_chunk_key((1, 2)) == "1/2"
    assert zarr.__version__  # imported: the shim ran against this release
