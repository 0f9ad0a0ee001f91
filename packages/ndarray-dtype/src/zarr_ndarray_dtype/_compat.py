"""Shims for differences between zarr-python releases, and the only home of zarr's private
names (ruff's SLF001 and the ban on ``zarr.core`` imports hold everywhere else)."""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from zarr.core.array_spec import ArrayConfig, ArraySpec
from zarr.core.sync import sync

try:  # zarr >= 3.3.0 moved the error here; the old path still works but warns there.
    from zarr.errors import DataTypeValidationError
except ImportError:  # zarr 3.1.x and 3.2.x
    from zarr.core.dtype.common import DataTypeValidationError  # type: ignore[no-redef]
try:  # zarr >= 3.4: the JSON is this data type's, so its registry re-raises, not tries others
    from zarr.core.dtype.registry import _NestedDataTypeValidationError as ClaimedJSONError
except ImportError:  # zarr < 3.4 tries the next data type on any DataTypeValidationError
    ClaimedJSONError = DataTypeValidationError  # type: ignore[assignment,misc]

__all__ = [
    "ClaimedJSONError",
    "DataTypeValidationError",
    "array_config",
    "array_module",
    "array_spec",
    "async_array",
    "basic_box",
    "chain_sync",
    "concurrency",
    "endian_name",
    "metadata_module",
    "run",
]

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine on zarr's event loop thread (where its store sessions live), through
    ``zarr.core.sync.sync`` (every release 3.1.0-3.4.x), and return its result. Interrupted
    while it runs (Ctrl-C, a signal turned into an exception), it is cancelled, and its end
    awaited a moment, so that nothing of it is left running at exit."""
    task: list[asyncio.Task[T]] = []
    started, ended = threading.Event(), threading.Event()

    async def tracked() -> T:
        task.append(asyncio.current_task())  # type: ignore[arg-type]
        started.set()
        try:
            return await coro
        finally:
            ended.set()

    try:
        return sync(tracked())
    except BaseException:
        if started.wait(1.0) and not ended.is_set():  # scheduled: let it start, then cancel
            task[0].get_loop().call_soon_threadsafe(task[0].cancel)
            ended.wait(1.0)
        raise


def endian_name(endian: object) -> str | None:
    """``BytesCodec.endian`` as a string: zarr 3.1.x holds an ``Endian`` enum there."""
    return None if endian is None else str(getattr(endian, "value", endian))


def array_module() -> Any:
    """``zarr.core.array``: ``default_serializer_v3`` and ``create_codec_pipeline`` are module
    globals there in every release 3.1.0-3.4.x."""
    import zarr.core.array

    return zarr.core.array


def metadata_module() -> Any:
    """``zarr.core.metadata.v3``, whose ``validate_codecs`` every release calls by name."""
    import zarr.core.metadata.v3

    return zarr.core.metadata.v3


def batched_pipeline() -> Any:
    """zarr's own default codec pipeline class (``BatchedCodecPipeline``, every release)."""
    from zarr.core.codec_pipeline import BatchedCodecPipeline

    return BatchedCodecPipeline


def async_array(array: Any) -> Any:
    """The ``AsyncArray`` of a ``zarr.Array`` (``Array.async_array`` is public from 3.2)."""
    return getattr(array, "async_array", None) or getattr(array, "_async_array", array)


def array_config(array: Any) -> Any:
    """The ``ArrayConfig`` (order, write_empty_chunks) an array was opened with; zarr 3.1.0-3.1.5
    keep it in the private ``AsyncArray._config`` only."""
    return getattr(array, "config", None) or async_array(array)._config


def array_spec(shape: tuple[int, ...], dtype: Any, fill_value: Any, config: Any = None) -> Any:
    """zarr's ``ArraySpec`` of one chunk (what a codec's ``decode``/``encode`` are given);
    zarr's default ``ArrayConfig`` when ``config`` is None."""
    from zarr.buffer import default_buffer_prototype

    config = ArrayConfig.from_dict({}) if config is None else config
    return ArraySpec(shape, dtype, fill_value, config, default_buffer_prototype())


def concurrency() -> int:
    """zarr's ``async.concurrency``: how many store requests may be in flight at once."""
    import zarr

    return int(zarr.config.get("async.concurrency") or 10)


def chain_sync(codecs: tuple[Any, ...], spec: Any, *, encode: bool) -> Callable[[Any], Any] | None:
    """One buffer through a chain of bytes -> bytes codecs (encoding first to last, decoding
    last to first) with their synchronous methods, where zarr runs every codec of the chain so
    (zarr >= 3.3.0's private ``_codec_supports_sync``); None where it does not."""
    import zarr.abc.codec

    supports = getattr(zarr.abc.codec, "_codec_supports_sync", None)
    if supports is None or not all(supports(codec) for codec in codecs):
        return None
    steps = [c._encode_sync for c in codecs] if encode else [c._decode_sync for c in codecs[::-1]]
    return lambda buffer: functools.reduce(lambda b, step: step(b, spec), steps, buffer)


def basic_box(indexer: Any) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """The ``(starts, stops)`` of the box of cells a zarr ``BasicIndexer`` or
    ``OrthogonalIndexer`` selects when it holds only ints and slices of step 1; None otherwise.
    Their ``dim_indexers``, ``IntDimIndexer.dim_sel`` and ``SliceDimIndexer.start/stop/step``
    are the same in every release 3.1.0-3.4.x."""
    from zarr.core.indexing import BasicIndexer, IntDimIndexer, OrthogonalIndexer, SliceDimIndexer

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
    return tuple(starts), tuple(stops)
