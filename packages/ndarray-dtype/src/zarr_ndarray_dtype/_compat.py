"""Shims for differences between zarr-python releases, and the only home of zarr's private
names (ruff's SLF001 and the ban on ``zarr.core`` imports hold everywhere else)."""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import numpy as np
import zarr
import zarr.abc.codec
from zarr.buffer import default_buffer_prototype
from zarr.core.array_spec import ArrayConfig, ArraySpec
from zarr.core.codec_pipeline import BatchedCodecPipeline
from zarr.core.indexing import BasicIndexer, IntDimIndexer, OrthogonalIndexer, SliceDimIndexer
from zarr.core.sync import sync

from zarr_ndarray_dtype._grid import Box, Shape

try:  # zarr >= 3.3.0 moved the error here; the old path still works but warns there.
    from zarr.errors import DataTypeValidationError
except ImportError:  # zarr 3.1.x and 3.2.x
    from zarr.core.dtype.common import DataTypeValidationError  # type: ignore[no-redef]
try:  # zarr >= 3.4: the JSON is this data type's, so its registry re-raises, not tries others
    from zarr.core.dtype.registry import _NestedDataTypeValidationError as ClaimedJSONError
except ImportError:  # zarr < 3.4 tries the next data type on any DataTypeValidationError
    ClaimedJSONError = DataTypeValidationError  # type: ignore[assignment,misc]

#: zarr's names passed on (the default codec pipeline: other projects' cannot run our codecs)
__all__ = ["BatchedCodecPipeline", "ClaimedJSONError", "DataTypeValidationError"]

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine on zarr's event loop thread (where its store sessions live); cancelled
    when interrupted (Ctrl-C, a signal), its end awaited a moment, so none of it runs on."""
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


def async_array(array: Any) -> Any:
    """The ``AsyncArray`` of a ``zarr.Array`` (``Array.async_array`` is public from 3.2)."""
    return getattr(array, "async_array", None) or getattr(array, "_async_array", array)


def array_config(array: Any) -> Any:
    """The ``ArrayConfig`` an array was opened with (zarr < 3.1.6: ``AsyncArray._config``)."""
    return getattr(array, "config", None) or async_array(array)._config


def array_spec(shape: Shape, dtype: Any, fill_value: Any, config: Any = None) -> Any:
    """zarr's ``ArraySpec`` of one chunk (zarr's default ``ArrayConfig`` when ``config`` is
    None), what a codec's ``decode``/``encode`` are given."""
    config = ArrayConfig.from_dict({}) if config is None else config
    return ArraySpec(shape, dtype, fill_value, config, default_buffer_prototype())


def concurrency() -> int:
    """zarr's ``async.concurrency``: how many store requests may be in flight at once."""
    return int(zarr.config.get("async.concurrency") or 10)


def chain_sync(codecs: tuple[Any, ...], spec: Any, *, encode: bool) -> Callable[[Any], Any] | None:
    """One buffer through a chain of bytes -> bytes codecs with their synchronous methods, where
    zarr runs every codec of the chain so (zarr >= 3.3's ``_codec_supports_sync``), else None."""
    supports = getattr(zarr.abc.codec, "_codec_supports_sync", None)
    if supports is None or not all(supports(codec) for codec in codecs):
        return None
    steps = [c._encode_sync for c in codecs] if encode else [c._decode_sync for c in codecs[::-1]]
    return lambda buffer: functools.reduce(lambda b, step: step(b, spec), steps, buffer)


# Indexers, the same in every release 3.1.0-3.4.x: the ``dim_indexers`` of basic and orthogonal
# ones, and the ``(chunk_coords, chunk_selection, out_selection, ...)`` any one iterates over.


def basic_box(indexer: Any) -> Box | None:
    """The box of cells an indexer selects when it holds only ints and slices of step 1."""
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


def chunk_boxes(indexer: Any, chunks: Shape) -> list[tuple[Box, tuple[Any, ...], Any]]:
    """For every chunk of a regular grid an indexer touches: the smallest box of the cells it
    picks there, its selection relative to that box, and where they go in its output."""
    found = []
    for coords, chunk_selection, out_selection, *_ in indexer:
        starts, stops, local = [], [], []
        for item, c, g in zip(chunk_selection, coords, chunks, strict=True):
            picked = np.arange(g)[item]  # a mask is as long as a whole chunk
            a, b = (int(picked.min()), int(picked.max()) + 1) if picked.size else (0, 0)
            if isinstance(item, slice):
                item = slice(item.start - a, item.stop - a, item.step)
            else:
                item = item[a:b] if np.asarray(item).dtype == np.bool_ else np.asarray(item) - a
            starts.append(c * g + a)
            stops.append(c * g + b)
            local.append(item)
        found.append((Box(tuple(starts), tuple(stops), ()), tuple(local), out_selection))
    return found
