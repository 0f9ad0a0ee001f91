"""Cells through zarr's own codec pipeline, as cell ids (the zarr glue of the columnar engine).

The engine never rebuilds what zarr does to chunks. It opens the array a second time, in memory
only, with the ``ndarray`` serializer replaced by :class:`CellIds` and the data type by uint64;
everything else (chunk grid and keys, bytes -> bytes codecs, sharding, array -> array codecs,
``write_empty_chunks``) stays the array's own. Reading a selection through that view makes zarr
fetch, decompress and cut the chunks it needs and hand each one's bytes to CellIds, which
registers them and answers with one id per cell: the chunk's base id plus the cell's place in it
(id 0 is the fill cell). Writing ids makes zarr merge them into chunks exactly as it merges
cells, and CellIds turns each chunk of ids into the codec's bytes (None: an empty chunk zarr
then deletes).

A read of whole shards goes through a second view, whose sharding codec is replaced by
:class:`ShardIds`: zarr fetches each shard in one request and hands over its bytes, which
zarr's shard index cuts and zarr's codecs decode, all inner chunks of the shard at once.
"""

from __future__ import annotations

import asyncio
import math
import os
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt
import zarr
from zarr.abc.codec import ArrayBytesCodec, BytesBytesCodec
from zarr.abc.store import RangeByteRequest, SuffixByteRequest
from zarr.codecs import ShardingCodec
from zarr.dtype import UInt64
from zarr.storage import StorePath, WrapperStore

from zarr_ndarray_dtype import _compat
from zarr_ndarray_dtype._grid import untile
from zarr_ndarray_dtype.blocks import BlockCodec
from zarr_ndarray_dtype.dtype import NDArrayDType as NDArray

__all__ = [
    "CellIds",
    "DiscardWrites",
    "KeepIndex",
    "ReadView",
    "ShardIds",
    "chunk_name",
    "keep_index",
    "no_writes",
    "read_view",
    "serializer_of",
    "sharding_of",
    "view",
    "whole_shards",
]

_NAME = "zarr-ndarray.cell-ids"

#: ``(chunk bytes, cells) -> the chunk's base id`` (its cells get ids base .. base + cells - 1).
OnDecode = Callable[[npt.NDArray[np.uint8], int], int]
#: ``(the chunk's ids in C order, write_empty_chunks) -> chunk bytes, or None for no chunk``.
OnEncode = Callable[[npt.NDArray[np.uint64], bool], npt.NDArray[np.uint8] | None]


class _Ids(ArrayBytesCodec):
    """What the serializers of views share: in memory only, never validated or sized."""

    is_fixed_size = False

    def to_dict(self) -> dict[str, Any]:
        return {"name": _NAME}

    def evolve_from_array_spec(self, array_spec: Any) -> Any:
        return self

    def validate(self, *, shape: Any, dtype: Any, chunk_grid: Any) -> None:
        return None

    def compute_encoded_size(self, input_byte_length: int, _chunk_spec: Any) -> int:
        raise NotImplementedError("cell ids have no fixed encoded size")


def _raw(chunk_bytes: Any) -> npt.NDArray[np.uint8]:
    return np.asarray(chunk_bytes.as_numpy_array()).reshape(-1).view(np.uint8)


@dataclass(frozen=True, eq=False)  # identity equality: a view's codec is never shared
class CellIds(_Ids):
    """The serializer of a cells view: chunk bytes <-> the ids of their cells."""

    on_decode: OnDecode
    on_encode: OnEncode

    def _decode_sync(self, chunk_bytes: Any, chunk_spec: Any) -> Any:
        shape = tuple(int(n) for n in chunk_spec.shape)
        count = math.prod(shape)
        ids = np.arange(count, dtype=np.uint64)
        ids += np.uint64(self.on_decode(_raw(chunk_bytes), count))
        return chunk_spec.prototype.nd_buffer.from_numpy_array(ids.reshape(shape))

    def _encode_sync(self, chunk_array: Any, chunk_spec: Any) -> Any:
        ids = np.asarray(chunk_array.as_numpy_array()).ravel(order="C")
        out = self.on_encode(ids, bool(chunk_spec.config.write_empty_chunks))
        return None if out is None else chunk_spec.prototype.buffer.from_array_like(out)

    async def _decode_single(self, chunk_bytes: Any, chunk_spec: Any) -> Any:
        return self._decode_sync(chunk_bytes, chunk_spec)

    async def _encode_single(self, chunk_array: Any, chunk_spec: Any) -> Any:
        # In a worker thread, as zarr runs its compressors: the chunks of a shard are encoded
        # (framed, then compressed) on every core instead of one after another on zarr's loop.
        return await asyncio.to_thread(self._encode_sync, chunk_array, chunk_spec)


@dataclass(frozen=True, eq=False)
class ShardIds(_Ids):
    """The serializer of a shard view, in place of the array's sharding codec: a whole
    shard's bytes -> the ids of its cells. zarr's shard index cuts the shard, zarr's bytes ->
    bytes codecs decode its inner chunks in one call per core, and ``on_decode`` registers
    each inner chunk (zarr's sharding codec runs every inner chunk through tasks of its own,
    which costs more than decoding it). zarr >= 3.3's FusedCodecPipeline runs it synchronously,
    a shard per thread of its own."""

    sharding: ShardingCodec  # the array's own: [serializer, bytes -> bytes codecs...] inside
    on_decode: OnDecode

    async def _decode_single(self, shard: Any, shard_spec: Any) -> Any:
        cut, spec = await _compat.cut_shard(self.sharding, shard, shard_spec)
        codecs = tuple(self.sharding.codecs)[1:]
        chunks = await _compat.decode_bytes(codecs, list(cut.flat), spec, os.cpu_count() or 1)
        return self._ids(cut.shape, chunks, spec, shard_spec)

    @property
    def _sync_capable(self) -> bool:  # zarr >= 3.3.0 asks before it calls _decode_sync
        return _compat.cuts_shards_in_sync(self.sharding)

    def _decode_sync(self, shard: Any, shard_spec: Any) -> Any:
        cut, spec = _compat.cut_shard_sync(self.sharding, shard, shard_spec)
        decode = _compat.decode_chain(tuple(self.sharding.codecs)[1:], spec)
        assert decode is not None, "zarr decodes synchronously only what _sync_capable allows"
        return self._ids(cut.shape, [decode(c) for c in cut.flat], spec, shard_spec)

    def _ids(self, grid: tuple[int, ...], chunks: list[Any], spec: Any, shard_spec: Any) -> Any:
        """The shard's ids: each decoded inner chunk registered, laid out in the shard."""
        inner = tuple(int(n) for n in spec.shape)
        count = math.prod(inner)
        bases = np.array(
            [0 if c is None else self.on_decode(_raw(c), count) for c in chunks], np.uint64
        ).reshape(grid + (1,) * len(inner))
        tiles = np.arange(count, dtype=np.uint64).reshape(inner) + bases
        tiles *= bases != 0  # inner chunks not stored: the fill cell's id
        return shard_spec.prototype.nd_buffer.from_numpy_array(untile(tiles))

    async def _encode_single(self, chunk_array: Any, chunk_spec: Any) -> Any:
        raise AssertionError("a shard view only reads")

    def _encode_sync(self, chunk_array: Any, chunk_spec: Any) -> Any:
        raise AssertionError("a shard view only reads")


def sharding_of(metadata: Any) -> ShardingCodec | None:
    """The sharding codec of a sharded array: its only codec (None for any other array; the
    engine reads chunks with other codecs around sharding as zarr cuts them)."""
    codecs = tuple(metadata.codecs)
    return codecs[0] if len(codecs) == 1 and isinstance(codecs[0], ShardingCodec) else None


def whole_shards(metadata: Any) -> ShardingCodec | None:
    """The sharding codec of an array whose shards a :class:`ShardIds` view reads: holding a
    serializer and bytes -> bytes codecs (None for other arrays)."""
    sharding = sharding_of(metadata)
    if sharding is None:
        return None
    inner = tuple(sharding.codecs)
    if isinstance(inner[0], ShardingCodec) or not all(
        isinstance(c, BytesBytesCodec) for c in inner[1:]
    ):
        return None
    return sharding


class DiscardWrites(WrapperStore[Any]):
    """A store that reads from another and drops every write (a write's dry run)."""

    async def set(self, key: str, value: Any) -> None:
        return None

    async def set_if_not_exists(self, key: str, value: Any) -> None:
        return None

    async def delete(self, key: str) -> None:
        return None

    def set_sync(self, key: str, value: Any) -> None:  # the sync IO of zarr >= 3.3
        return None

    def delete_sync(self, key: str) -> None:
        return None


class KeepIndex(WrapperStore[Any]):
    """A store that fetches a shard's index once: the batches of one read each ask zarr for
    some inner chunks of a shard, and zarr fetches the shard's index for every one of them.

    The index is the one request of a suffix (index at the end) or of a range from byte 0
    (index at the start, where no inner chunk begins); other requests pass through.
    """

    def __init__(self, store: Any, *, at_start: bool = False) -> None:
        super().__init__(store)
        self._at_start = at_start
        # keyed by the request's repr: zarr 3.1.0's SuffixByteRequest is not hashable
        self._kept: dict[tuple[str, str], Any] = {}

    def forget(self) -> None:
        """Drop the indexes kept (a read is over: the next one fetches them again)."""
        self._kept.clear()

    def _is_index(self, byte_range: Any) -> bool:
        if isinstance(byte_range, SuffixByteRequest):
            return not self._at_start
        return self._at_start and isinstance(byte_range, RangeByteRequest) and not byte_range.start

    async def get(self, key: str, prototype: Any, byte_range: Any = None) -> Any:
        if not self._is_index(byte_range):
            return await self._store.get(key, prototype, byte_range)
        slot = (key, repr(byte_range))
        if slot not in self._kept:
            self._kept[slot] = await self._store.get(key, prototype, byte_range)
        return self._kept[slot]

    def get_sync(self, key: str, *, prototype: Any = None, byte_range: Any = None) -> Any:
        # the synchronous surface of zarr >= 3.3 (its FusedCodecPipeline reads through it)
        fetch = self._store.get_sync
        if not self._is_index(byte_range):
            return fetch(key, prototype=prototype, byte_range=byte_range)
        slot = (key, repr(byte_range))
        if slot not in self._kept:
            self._kept[slot] = fetch(key, prototype=prototype, byte_range=byte_range)
        return self._kept[slot]


def keep_index(metadata: Any) -> Callable[[Any], KeepIndex] | None:
    """The :class:`KeepIndex` wrapper for a sharded array's store (None when not sharded)."""
    sharding = sharding_of(metadata)
    if sharding is None:
        return None
    where = sharding.index_location
    return partial(KeepIndex, at_start=str(getattr(where, "value", where)) == "start")


class Route:
    """Where a reusable read view's chunks go: to the ``on_decode`` of the read holding it."""

    def __init__(self) -> None:
        self.on_decode: OnDecode | None = None

    def decode(self, raw: npt.NDArray[np.uint8], count: int) -> int:
        assert self.on_decode is not None, "a read view is used only while a read holds it"
        return self.on_decode(raw, count)


_UNBUILT = object()


class ReadView:
    """The views one read fetches through, each built when first used, their chunks routed to
    the read's ``on_decode``: :meth:`cells` for any selection, :meth:`shards` for a selection
    of whole shards. Both take the array the views are of (kept in :data:`_VIEWS` under it),
    which the views do not hold: :data:`_VIEWS` lets go of them when the array goes."""

    def __init__(self) -> None:
        self.route = Route()
        self.kept: KeepIndex | None = None  # the cells view's store, when sharded
        self._cells: Any = None
        self._shards: Any = _UNBUILT

    def cells(self, array: Any) -> Any:
        """The view of the chunks (inner chunks when sharded) a selection of ``array``
        touches, each shard's index fetched once (:class:`KeepIndex`)."""
        if self._cells is None:
            codec = CellIds(self.route.decode, no_writes)
            wrap = keep_index(array.metadata)
            if wrap is None:
                self._cells = view(array, codec)
            else:
                self.kept = kept = wrap(array.store_path.store)
                self._cells = view(array, codec, store=lambda _: kept)
        return self._cells

    def shards(self, array: Any) -> Any:
        """The view of ``array``'s whole shards (:class:`ShardIds`); None for arrays
        :func:`whole_shards` refuses (unsharded ones among them)."""
        if self._shards is _UNBUILT:
            sharding = whole_shards(array.metadata)
            self._shards = None
            if sharding is not None:
                codec = ShardIds(sharding, self.route.decode)
                self._shards = view(array, codec, replacing=sharding)
        return self._shards


#: Read views kept per array object: ``id(array) -> (the array's metadata they serve, the
#: views not in use)``; an entry goes when its array does.
_VIEWS: dict[int, tuple[Any, list[ReadView]]] = {}
_VIEWS_LOCK = threading.Lock()
#: Views kept for one array beyond those in use (concurrent reads of it each take one).
_VIEWS_KEPT = 4


@contextmanager
def read_view(array: Any, on_decode: OnDecode) -> Iterator[ReadView]:
    """The views of ``array`` for one read (:class:`ReadView`), their chunks registered by
    ``on_decode``.

    Views are reused, per array object: building one validates the whole metadata again,
    the most of a one-cell read's own time. A view serves one read at a time (concurrent
    reads take one each), is rebuilt when the array's metadata changed (a resize), and is
    dropped when its read fails (zarr may still be decoding that read's chunks into it)."""
    metadata = array.metadata
    with _VIEWS_LOCK:
        entry = _VIEWS.get(id(array))
        free = entry[1] if entry is not None and entry[0] is metadata else []
        taken = free.pop() if free else ReadView()
    taken.route.on_decode = on_decode
    yield taken  # an error raised here ends the view with its read
    taken.route.on_decode = None
    if taken.kept is not None:
        taken.kept.forget()
    _give_back(array, metadata, taken)


def _give_back(array: Any, metadata: Any, taken: ReadView) -> None:
    """Keep a read view for the next read of ``array`` (unless enough are kept, or the
    array's metadata changed during the read)."""
    with _VIEWS_LOCK:
        if array.metadata is not metadata:
            return
        entry = _VIEWS.get(id(array))
        if entry is None:
            try:
                weakref.finalize(array, _VIEWS.pop, id(array), None)
            except TypeError:  # not weakly referenceable: its views are not kept
                return
        if entry is None or entry[0] is not metadata:
            entry = _VIEWS[id(array)] = (metadata, [])
        if len(entry[1]) < _VIEWS_KEPT:
            entry[1].append(taken)


def no_writes(ids: npt.NDArray[np.uint64], write_empty: bool) -> None:
    """The ``on_encode`` of a view that only reads."""
    raise AssertionError("a read view never encodes")


def serializer_of(metadata: Any) -> Any:
    """The array -> bytes codec of an array (inside sharding when sharded)."""
    codecs = tuple(metadata.codecs)
    while True:
        serializer = next(c for c in codecs if isinstance(c, ArrayBytesCodec))
        if not isinstance(serializer, ShardingCodec):
            return serializer
        codecs = tuple(serializer.codecs)


def view(array: Any, codec: _Ids, *, store: Any = None, replacing: Any = None) -> Any:
    """The array (a ``zarr.Array`` or ``AsyncArray``) with ``codec`` for its serializer (or
    for the codec ``replacing``) and uint64 for its data type, optionally over a store wrapping
    its own. Its metadata is the array's own with those fields replaced (not written out and
    parsed again: a read of one cell pays for this view)."""
    metadata = array.metadata
    old = serializer_of(metadata) if replacing is None else replacing
    codecs = _replace(tuple(metadata.codecs), old, codec)
    doc = replace(metadata, codecs=tuple(codecs), data_type=UInt64(), fill_value=np.uint64(0))
    path = array.store_path
    if store is not None:
        path = StorePath(store(path.store), path.path)
    return zarr.Array(zarr.AsyncArray(doc, path, config=_compat.array_config(array)))


def _replace(codecs: tuple[Any, ...], old: Any, codec: _Ids) -> list[Any]:
    """The codec objects with ``old`` replaced (inside sharding too; ``replace`` keeps a
    sharding codec's settings that are not metadata, such as its inner chunk order)."""
    out: list[Any] = []
    for entry in codecs:
        if entry is old:
            out.append(codec)
        elif isinstance(entry, ShardingCodec):
            out.append(replace(entry, codecs=tuple(_replace(tuple(entry.codecs), old, codec))))
        else:
            out.append(entry)
    return out


def chunk_name(metadata: Any, cell: tuple[int, ...], *, inner: bool = True) -> str:
    """The stored chunk that holds the array's ``cell``, for messages: ``chunk 'c/3'``, or
    ``inner chunk 5 of shard 'c/0'`` (its place in the shard index; ``shard 'c/0'`` when not
    ``inner``)."""
    grid = _compat.regular_chunk_shape(metadata)
    if grid is None:
        return f"the chunk holding cell {list(cell)}"
    key = metadata.chunk_key_encoding.encode_chunk_key(
        tuple(c // g for c, g in zip(cell, grid, strict=True))
    )
    sharding = sharding_of(metadata)
    if sharding is None:
        return f"chunk {key!r}"
    if not inner:
        return f"shard {key!r}"
    shape = tuple(int(n) for n in sharding.chunk_shape)
    per = tuple(g // i for g, i in zip(grid, shape, strict=True))
    local = tuple((c % g) // i for c, g, i in zip(cell, grid, shape, strict=True))
    place = int(np.ravel_multi_index(local, per)) if per else 0
    return f"inner chunk {place} of shard {key!r}"


def data_type_and_codec(array: Any, what: str) -> tuple[NDArray, BlockCodec]:
    """The ``NDArray`` of an ``ndarray`` array and the block codec of its serializer; an error
    naming ``what`` (the caller) for any other array, or a serializer without block codec."""
    metadata = getattr(array, "metadata", None)
    dtype = getattr(metadata, "data_type", None)
    if not isinstance(dtype, NDArray):
        raise TypeError(
            f"{what} needs a zarr array of the 'ndarray' data type, got data type {dtype!r}; "
            "create it with dtype=zarr_ndarray_dtype.NDArray(dtype=..., shape=(...))"
        )
    serializer = serializer_of(metadata)
    codec: BlockCodec | None = getattr(serializer, "block_codec", None)
    if codec is None:
        name = serializer.to_dict().get("name")
        raise ValueError(
            f"{what} reads and writes cells stored by the 'vlen-ndarray', 'ragged-ndarray' or "
            f"'bytes' codec; this {list(dtype.shape)} array is stored by {name!r}, which gives "
            "no columnar access: read it as a plain zarr array"
        )
    return dtype, codec
