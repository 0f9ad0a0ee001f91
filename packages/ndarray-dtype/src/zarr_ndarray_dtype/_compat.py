"""Shims for differences between zarr-python releases (the only place that knows about them)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import numpy as np
from zarr.core.sync import sync

from zarr_ndarray_dtype._grid import Box

try:  # zarr >= 3.3.0 moved the error here; the old path still works but warns there.
    from zarr.errors import DataTypeValidationError
except ImportError:  # zarr 3.1.x and 3.2.x
    from zarr.core.dtype.common import DataTypeValidationError  # type: ignore[no-redef]

__all__ = [
    "DataTypeValidationError",
    "array_config",
    "array_module",
    "basic_box",
    "cut_shard",
    "cut_shard_sync",
    "cuts_shards_in_sync",
    "decode_bytes",
    "decode_chain",
    "endian_name",
    "metadata_class",
    "metadata_module",
    "on_zarr_loop",
    "regular_chunk_shape",
    "run",
    "selected_index",
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


# ------------------------------------------------------------------ what _hooks wraps


def array_module() -> Any:
    """``zarr.core.array``, whose ``default_serializer_v3`` every release 3.1.0-3.4.x looks up
    as a module global."""
    import zarr.core.array

    return zarr.core.array


def metadata_module() -> Any:
    """``zarr.core.metadata.v3``, whose ``validate_codecs`` every release calls by name."""
    import zarr.core.metadata.v3

    return zarr.core.metadata.v3


def metadata_class() -> Any:
    """``ArrayV3Metadata``, whose ``from_dict`` reads every stored Zarr v3 array document."""
    return metadata_module().ArrayV3Metadata


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


async def cut_shard(sharding: Any, shard: Any, shard_spec: Any) -> tuple[np.ndarray, Any]:
    """The stored inner chunks of a whole shard's bytes as cut by zarr's shard index (an
    object array shaped as the shard's grid of inner chunks; None where the index marks
    none), and their chunk spec.

    zarr's private ``_ShardReader.from_bytes(bytes, codec, chunks_per_shard)`` (which decodes
    the index with the codec's index codecs, checksum included; a Mapping of inner chunk
    coordinates to bytes) and ``ShardingCodec._get_chunk_spec`` are the same in every release
    3.1.0-3.4.x."""
    from zarr.codecs.sharding import _ShardReader

    per = _inner_grid(sharding, shard_spec)
    reader = await _ShardReader.from_bytes(shard, sharding, per)
    return _inner_chunks(reader, per), sharding._get_chunk_spec(shard_spec)


def cut_shard_sync(sharding: Any, shard: Any, shard_spec: Any) -> tuple[np.ndarray, Any]:
    """:func:`cut_shard` without an event loop, through zarr >= 3.3.0's private
    ``ShardingCodec._shard_reader_from_bytes_sync`` (its index codecs run synchronously; see
    :func:`cuts_shards_in_sync`)."""
    per = _inner_grid(sharding, shard_spec)
    reader = sharding._shard_reader_from_bytes_sync(shard, per)
    return _inner_chunks(reader, per), sharding._get_chunk_spec(shard_spec)


def cuts_shards_in_sync(sharding: Any) -> bool:
    """Whether :func:`cut_shard_sync` and :func:`decode_chain` run without an event loop for
    a shard of ``sharding``: zarr >= 3.3.0, whose ``_codec_supports_sync`` holds for the index
    codecs and the bytes -> bytes codecs inside."""
    codecs = (*sharding.index_codecs, *tuple(sharding.codecs)[1:])
    return hasattr(sharding, "_shard_reader_from_bytes_sync") and all(
        _decodes_in_sync(codec) for codec in codecs
    )


def _inner_grid(sharding: Any, shard_spec: Any) -> tuple[int, ...]:
    inner = tuple(int(n) for n in sharding.chunk_shape)
    return tuple(int(s) // i for s, i in zip(shard_spec.shape, inner, strict=True))


def _inner_chunks(reader: Any, per: tuple[int, ...]) -> np.ndarray:
    chunks = np.empty(per, dtype=object)
    for coords in np.ndindex(per):
        chunks[coords] = reader.get(coords)  # None where not stored
    return chunks


def decode_chain(codecs: Any, spec: Any) -> Callable[[Any], Any] | None:
    """One chunk (or None) decoded by a chain of bytes -> bytes codecs (the last codec first)
    through their ``_decode_sync``, where zarr runs every codec of it so (zarr >= 3.3.0); None
    where it does not."""
    chain = tuple(reversed(tuple(codecs)))
    if not all(_decodes_in_sync(codec) for codec in chain):
        return None

    def decode(chunk: Any) -> Any:
        if chunk is None:
            return None
        for codec in chain:
            chunk = codec._decode_sync(chunk, spec)
        return chunk

    return decode


async def decode_bytes(codecs: Any, chunks: list[Any], spec: Any, parts: int) -> list[Any]:
    """The chunks decoded by a chain of bytes -> bytes codecs (the last codec first): in
    ``parts`` threads through :func:`decode_chain` where zarr runs the chain synchronously;
    else codec by codec through their batched ``decode`` (a task, and for compressors a
    thread, per chunk). None stays None."""
    import asyncio

    decode = decode_chain(codecs, spec)
    if decode is None:
        for codec in reversed(tuple(codecs)):
            chunks = list(await codec.decode([(chunk, spec) for chunk in chunks]))
        return chunks

    def decode_all(part: list[Any]) -> list[Any]:
        return [decode(chunk) for chunk in part]

    size = -(-len(chunks) // max(1, parts))
    groups = [chunks[i : i + size] for i in range(0, len(chunks), size)]
    done = await asyncio.gather(*(asyncio.to_thread(decode_all, g) for g in groups))
    return [chunk for group in done for chunk in group]


def _decodes_in_sync(codec: Any) -> bool:
    """Whether zarr runs ``codec`` synchronously (zarr >= 3.3.0's private test; before it, no
    codec has a synchronous decode)."""
    import zarr.abc.codec

    supports = getattr(zarr.abc.codec, "_codec_supports_sync", None)
    return bool(supports is not None and supports(codec))


# ------------------------------------------------------------------- object writes (_hooks)


def basic_box(indexer: Any) -> Box | None:
    """The box of cells a zarr ``BasicIndexer`` or ``OrthogonalIndexer`` (``array[i] = ...``
    takes the latter) selects when it holds only ints and slices of step 1; None otherwise.
    Their ``dim_indexers``, ``IntDimIndexer.dim_sel`` and ``SliceDimIndexer.start/stop/step``
    are the same in every release 3.1.0-3.4.x."""
    from zarr.core.indexing import (
        BasicIndexer,
        IntDimIndexer,
        OrthogonalIndexer,
        SliceDimIndexer,
    )

    if type(indexer) not in (BasicIndexer, OrthogonalIndexer):
        return None
    starts, stops = [], []
    for dim in indexer.dim_indexers:
        if isinstance(dim, IntDimIndexer):
            starts.append(int(dim.dim_sel))
            stops.append(int(dim.dim_sel) + 1)
        elif isinstance(dim, SliceDimIndexer) and dim.step == 1:
            starts.append(int(dim.start))
            stops.append(max(int(dim.start), int(dim.stop)))
        else:
            return None
    return Box(tuple(starts), tuple(stops), tuple(int(n) for n in indexer.shape))


def on_zarr_loop() -> bool:
    """Whether the running event loop is the one zarr's synchronous API runs its work on
    (``zarr.core.sync.loop``, the same in every release 3.1.0-3.4.x)."""
    import asyncio

    from zarr.core import sync as zarr_sync

    return zarr_sync.loop[0] is asyncio.get_running_loop()


def selected_index(indexer: Any, metadata: Any, position: int) -> tuple[int, ...] | None:
    """The array index of the ``position``-th cell (C order of the selection) that a zarr
    indexer selects; None for a grid that is not regular. Slow: for error messages only.

    Every indexer iterates ``(chunk_coords, chunk_selection, out_selection, ...)``, which zarr
    applies as ``chunk[chunk_selection] = value[out_selection]`` (every release 3.1.0-3.4.x).
    """
    box = basic_box(indexer)
    if box is not None:
        local = np.unravel_index(position, box.extents) if box.extents else ()
        return tuple(a + int(i) for a, i in zip(box.starts, local, strict=True))
    grid = regular_chunk_shape(metadata)
    if grid is None:
        return None
    shape = tuple(int(n) for n in metadata.shape)
    where = np.zeros(tuple(int(n) for n in indexer.shape), dtype=np.int64)
    for projection in indexer:
        coords, chunk_selection, out_selection = projection[0], projection[1], projection[2]
        origin = np.array(coords, dtype=np.int64) * np.array(grid, dtype=np.int64)
        cells = np.indices(grid, dtype=np.int64) + origin.reshape(-1, *([1] * len(grid)))
        ids = np.ravel_multi_index(tuple(cells), shape, mode="clip") if shape else np.zeros(())
        target = where[out_selection]
        where[out_selection] = np.reshape(ids[chunk_selection], np.shape(target))
    flat = int(where.reshape(-1)[position])
    return tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()
