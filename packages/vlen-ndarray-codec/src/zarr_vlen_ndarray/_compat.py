"""Shims for the zarr-python releases this package supports (3.1.0 .. 3.4.x), in one place.

Each shim names the release that needs it. Everything else in the package uses zarr APIs that
are the same in every supported release.
"""

from __future__ import annotations

from typing import Any

from zarr.core.sync import sync

# The shims the codec packages share live once in the data type package (below both codecs).
from zarr_ndarray_dtype._compat import (
    array_config,
    bytes_codec_endian,
    index_location,
    regular_chunk_shape,
    run,
    shard_index_nbytes,
    shard_index_spec,
)

__all__ = [
    "array_config",
    "bytes_codec_endian",
    "close_store",
    "index_location",
    "open_zip_store_read",
    "regular_chunk_shape",
    "run",
    "shard_index_nbytes",
    "shard_index_spec",
]


# ------------------------------------------------------------------------------ store tool


def open_zip_store_read(path: Any) -> Any:
    """A read-only ``zarr.storage.ZipStore`` over ``path``, opened before first use."""
    from zarr.storage import ZipStore

    # zarr 3.1.0's ZipStore fails on some reads of a store that was not opened explicitly.
    return sync(ZipStore.open(path, mode="r"))


def close_store(store: Any) -> None:
    """Close a store the tool opened (a no-op for one that never opened)."""
    # zarr 3.1.0's ZipStore.close fails on a store it never opened.
    if getattr(store, "_is_open", True):
        store.close()
