"""Shims for the zarr-python releases this package supports (3.1.0 .. 3.4.x), in one place.

Each shim names the release that needs it. Everything else in the package uses zarr APIs that
are the same in every supported release.
"""

from __future__ import annotations

from typing import Any

from zarr.core.sync import sync

# The shims both codec packages need (chunk layouts, shard indexes, running coroutines on zarr's
# loop) live once in zarr_ndarray_dtype._compat; ``run`` is re-exported for the store tool.
from zarr_ndarray_dtype._compat import run as run

__all__ = ["close_store", "open_zip_store_read", "run"]


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
