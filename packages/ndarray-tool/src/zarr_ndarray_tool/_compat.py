"""Shims for the zarr-python releases the tool supports (3.1.0 .. 3.4.x), each naming the
release that needs it, and the only place the tool touches zarr's private names."""

from __future__ import annotations

from typing import Any

# Every release: zarr has no public way to run a coroutine on its own event loop, the one its
# stores' sessions (aiohttp, obstore) are bound to.
from zarr.core.sync import sync as sync


def open_zip_store_read(path: Any) -> Any:
    """A read-only ``zarr.storage.ZipStore`` over ``path``, opened before first use (zarr
    3.1.0's ZipStore fails on some reads of a store that was not opened explicitly)."""
    from zarr.storage import ZipStore

    return sync(ZipStore.open(path, mode="r"))


def close_store(store: Any) -> None:
    """Close a store the tool opened (zarr 3.1.0's ZipStore.close fails on one never opened)."""
    if getattr(store, "_is_open", True):
        store.close()


def chunk_key_encoding(data: Any) -> Any:
    """zarr's chunk key encoding object for its JSON form."""
    from zarr.core import chunk_key_encodings

    parse = getattr(chunk_key_encodings, "parse_chunk_key_encoding", None)
    if parse is not None:  # zarr >= 3.1.6
        return parse(data)
    return chunk_key_encodings.ChunkKeyEncoding.from_dict(data)  # 3.1.0 .. 3.1.5
