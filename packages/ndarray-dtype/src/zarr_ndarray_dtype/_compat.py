"""Shims for differences between zarr-python releases (the only place that knows about them)."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, TypeVar

from zarr.core.sync import sync

try:  # zarr >= 3.3.0 moved the error here; the old path still works but warns there.
    from zarr.errors import DataTypeValidationError
except ImportError:  # zarr 3.1.x and 3.2.x
    from zarr.core.dtype.common import DataTypeValidationError  # type: ignore[no-redef]

__all__ = [
    "DataTypeValidationError",
    "array_config",
    "bytes_codec_endian",
    "endian_name",
    "index_location",
    "regular_chunk_shape",
    "run",
    "shard_index_nbytes",
    "shard_index_spec",
    "subchunk_write_order",
]

T = TypeVar("T")


def endian_name(endian: object) -> str | None:
    """The BytesCodec ``endian`` setting as a string.

    zarr 3.1.x stores an ``Endian`` enum on ``BytesCodec.endian``; later releases may store the
    plain literal. Both are read here.
    """
    if endian is None:
        return None
    return str(getattr(endian, "value", endian))


# ------------------------------------------------------------------ shared by the codec packages
#
# The codec packages (zarr-vlen-ndarray, zarr-ragged-ndarray) read and write chunk bytes below
# the codec pipeline; the shims they both need live here, once, and their own ``_compat``
# modules re-export them.


def array_config(async_array: Any) -> Any:
    """The ``ArrayConfig`` (order, write_empty_chunks) an array was opened with."""
    # zarr 3.1.0 keeps it in the private attribute ``_config``; by 3.1.6 it is ``config``.
    config = getattr(async_array, "config", None)
    if config is None:
        config = async_array._config
    return config


def bytes_codec_endian(codec: Any) -> str | None:
    """``"little"``, ``"big"`` or None (single-byte data): the byte order of a ``bytes`` codec."""
    # zarr 3.1.x and 3.2.x hold an Enum (``Endian.big``); 3.3.0 made it a plain string literal.
    return endian_name(getattr(codec, "endian", None))


def regular_chunk_shape(metadata: Any) -> tuple[int, ...] | None:
    """The chunk shape of an array with a regular chunk grid; None for any other grid."""
    # zarr 3.1.x keeps a ``RegularChunkGrid`` in ``metadata.chunk_grid``; 3.2.0 keeps a
    # ``RegularChunkGridMetadata`` there and adds rectilinear grids, whose metadata has
    # ``chunk_shapes`` but no ``chunk_shape``. Both regular forms have ``chunk_shape``.
    shape = getattr(metadata.chunk_grid, "chunk_shape", None)
    return None if shape is None else tuple(int(n) for n in shape)


def shard_index_nbytes(sharding_codec: Any, chunks_per_shard: tuple[int, ...]) -> int:
    """Bytes of a shard's encoded index (through its index codecs)."""
    # A private method of ShardingCodec, with this name and signature in 3.1.0 .. 3.4.x.
    return int(sharding_codec._shard_index_size(chunks_per_shard))


def shard_index_spec(sharding_codec: Any, chunks_per_shard: tuple[int, ...]) -> Any:
    """The ``ArraySpec`` a sharding codec hands to its index codecs."""
    # A private method of ShardingCodec, with this name and signature in 3.1.0 .. 3.4.x.
    return sharding_codec._get_index_chunk_spec(chunks_per_shard)


def index_location(sharding_codec: Any) -> str:
    """``"start"`` or ``"end"``: where a sharding codec puts the shard index."""
    # zarr 3.1.x and 3.2.x hold an Enum (``ShardingCodecIndexLocation.end``); 3.3.0 made it a
    # plain string literal.
    location = sharding_codec.index_location
    return str(getattr(location, "value", location))


def subchunk_write_order(sharding_codec: Any) -> str:
    """The order a sharding codec lays its inner chunks out in (see ``shard_index.write_order``)."""
    # zarr 3.3.0 added the per-instance ``subchunk_write_order`` (default "morton"; it is not part
    # of the metadata); 3.1.x and 3.2.x always write Morton order.
    return str(getattr(sharding_codec, "subchunk_write_order", "morton"))


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine on zarr's event loop thread and return its result.

    ``zarr.core.sync.sync`` exists in every supported release (3.2.0 re-spelled its generic
    signature with PEP 695 syntax, which does not change how it is called).
    """
    return sync(coro)
