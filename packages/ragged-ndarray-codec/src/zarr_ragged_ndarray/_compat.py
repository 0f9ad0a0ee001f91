"""Shims for the zarr-python releases this package supports (3.1.0 .. 3.4.x), in one place.

Each shim names the release that needs it. Everything else in the package uses zarr APIs that
are the same in every supported release.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, TypeVar

from zarr.core.sync import sync

__all__ = ["array_config", "index_location", "run"]

T = TypeVar("T")


def array_config(async_array: Any) -> Any:
    """The ``ArrayConfig`` (order, write_empty_chunks) an array was opened with."""
    # zarr 3.1.0 keeps it in the private attribute ``_config``; later releases call it ``config``.
    config = getattr(async_array, "config", None)
    if config is None:
        config = async_array._config
    return config


def index_location(sharding_codec: Any) -> str:
    """``"start"`` or ``"end"``: where a sharding codec puts the shard index."""
    # zarr 3.1.x and 3.2.x hold an Enum (``ShardingCodecIndexLocation.end``); 3.3.0 made it a
    # plain string literal.
    location = sharding_codec.index_location
    return str(getattr(location, "value", location))


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine on zarr's event loop thread (``zarr.core.sync.sync``, every release)."""
    return sync(coro)
