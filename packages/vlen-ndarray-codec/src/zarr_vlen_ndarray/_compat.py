"""Shims for the zarr-python releases this package supports (3.1.0 .. 3.4.x), in one place.

Each shim names the release that needs it. Everything else in the package uses zarr APIs that
are the same in every supported release.
"""

from __future__ import annotations

from typing import Any

from zarr.core.sync import sync

# The shims the codec packages share live once in the data type package (below both codecs);
# they stay importable from here.
from zarr_ndarray_dtype._compat import array_config as array_config
from zarr_ndarray_dtype._compat import bytes_codec_endian as bytes_codec_endian
from zarr_ndarray_dtype._compat import index_location as index_location
from zarr_ndarray_dtype._compat import regular_chunk_shape as regular_chunk_shape
from zarr_ndarray_dtype._compat import run as run
from zarr_ndarray_dtype._compat import shard_index_nbytes as shard_index_nbytes
from zarr_ndarray_dtype._compat import shard_index_spec as shard_index_spec

__all__ = ["close_store", "open_zip_store_read"]


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
