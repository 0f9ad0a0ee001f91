"""Shims for differences between zarr-python releases (the only place that knows about them)."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, TypeVar

from zarr.core.sync import sync

try:  # zarr >= 3.3.0 moved the error here; the old path still works but warns there.
    from zarr.errors import DataTypeValidationError
except ImportError:  # zarr 3.1.x and 3.2.x
    from zarr.core.dtype.common import DataTypeValidationError  # type: ignore[no-redef]

__all__ = ["DataTypeValidationError", "array_config", "endian_name", "regular_chunk_shape", "run"]

T = TypeVar("T")


def endian_name(endian: object) -> str | None:
    """The BytesCodec ``endian`` setting as a string.

    zarr 3.1.x stores an ``Endian`` enum on ``BytesCodec.endian``; later releases may store the
    plain literal. Both are read here.
    """
    if endian is None:
        return None
    return str(getattr(endian, "value", endian))


# ------------------------------------------------------------------ the columnar engine


def array_config(array: Any) -> Any:
    """The ``ArrayConfig`` (order, write_empty_chunks) a ``zarr.Array`` or ``AsyncArray`` was
    opened with."""
    config = getattr(array, "config", None)
    if config is None:
        # zarr 3.1.0 .. 3.1.5 keep it in the private AsyncArray._config (Array has no .config).
        config = getattr(array, "_async_array", array)._config
    return config


def regular_chunk_shape(metadata: Any) -> tuple[int, ...] | None:
    """The chunk shape of an array with a regular chunk grid; None for any other grid."""
    # zarr 3.1.x keeps a ``RegularChunkGrid`` in ``metadata.chunk_grid``; 3.2.0 keeps a
    # ``RegularChunkGridMetadata`` there and adds rectilinear grids, whose metadata has
    # ``chunk_shapes`` but no ``chunk_shape``. Both regular forms have ``chunk_shape``.
    shape = getattr(metadata.chunk_grid, "chunk_shape", None)
    return None if shape is None else tuple(int(n) for n in shape)


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine on zarr's event loop thread and return its result.

    ``zarr.core.sync.sync`` exists in every supported release (3.2.0 re-spelled its generic
    signature with PEP 695 syntax, which does not change how it is called).
    """
    return sync(coro)
