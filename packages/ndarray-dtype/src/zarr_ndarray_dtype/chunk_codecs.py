"""Run the bytes -> bytes codecs of a stored chunk or shard index (thin zarr glue).

The codec packages read and write chunk bytes below zarr's codec pipeline (columnar access);
these coroutines apply or undo a chain of zarr ``BytesBytesCodec`` objects (e.g. ``zstd``,
``crc32c``) the way the pipeline does, with errors that name the stored object.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from zarr.abc.codec import BytesBytesCodec
from zarr.codecs import BytesCodec
from zarr.core.buffer import default_buffer_prototype

from zarr_ndarray_dtype._compat import bytes_codec_endian
from zarr_ndarray_dtype.shard_index import ShardIndexError, parse_index_pairs

__all__ = [
    "as_bytes",
    "bytes_codecs_after",
    "decode_shard_index",
    "encode_shard_index",
    "fetch",
    "index_is_plain",
    "store_chunks",
    "unwrap_bytes",
    "wrap_bytes",
]


def bytes_codecs_after(
    codecs: Sequence[Any], serializer: type[Any]
) -> tuple[BytesBytesCodec, ...] | None:
    """The bytes -> bytes codecs after a leading ``serializer``; None for any other chain."""
    if not codecs or not isinstance(codecs[0], serializer):
        return None
    rest = tuple(codecs[1:])
    if not all(isinstance(c, BytesBytesCodec) for c in rest):
        return None
    return rest  # type: ignore[return-value]


def index_is_plain(sharding_codec: Any) -> bool:
    """True when a sharding codec's index codecs are ``bytes`` then bytes -> bytes codecs only."""
    index_codecs = tuple(sharding_codec.index_codecs)
    return (
        bool(index_codecs)
        and isinstance(index_codecs[0], BytesCodec)
        and all(isinstance(c, BytesBytesCodec) for c in index_codecs[1:])
    )


def as_bytes(buf: Any) -> npt.NDArray[np.uint8]:
    """A zarr ``Buffer`` as a flat uint8 array."""
    return np.asarray(buf.as_numpy_array(), dtype=np.uint8).reshape(-1)


async def unwrap_bytes(
    codecs: Sequence[Any], spec: Any, raw: Any, where: str
) -> npt.NDArray[np.uint8]:
    """Undo ``codecs`` (bytes -> bytes, in encode order) on the stored bytes ``raw``.

    ``raw`` is a zarr ``Buffer`` or a uint8 array.
    """
    buf = spec.prototype.buffer.from_array_like(raw) if isinstance(raw, np.ndarray) else raw
    for codec in reversed(codecs):
        try:
            buf = await codec._decode_single(buf, spec)
        except (ValueError, RuntimeError, TypeError) as exc:
            name = codec.to_dict().get("name", type(codec).__name__)
            raise ValueError(
                f"{where}: the {name!r} codec cannot decode the stored bytes ({exc}); the chunk "
                "is corrupt or was written with other codecs"
            ) from exc
    return as_bytes(buf)


async def wrap_bytes(codecs: Sequence[Any], spec: Any, data: npt.NDArray[np.uint8]) -> Any:
    """Apply ``codecs`` (bytes -> bytes, in encode order) to ``data``; the stored buffer."""
    buf: Any = spec.prototype.buffer.from_array_like(data)
    for codec in codecs:
        buf = await codec._encode_single(buf, spec)
    return buf


async def decode_shard_index(
    index_codecs: Sequence[Any],
    index_spec: Any,
    raw: npt.NDArray[np.uint8],
    count: int,
    key: str,
    size: int | None,
) -> npt.NDArray[np.uint64]:
    """The ``(count, 2)`` pairs of a stored shard index (``bytes`` codec then bytes codecs).

    ``size`` is the shard's size when known (every range is checked against it).
    """
    buf: Any = index_spec.prototype.buffer.from_array_like(raw)
    for codec in reversed(index_codecs[1:]):
        try:
            buf = await codec._decode_single(buf, index_spec)
        except (ValueError, RuntimeError, TypeError) as exc:
            raise ShardIndexError(f"shard {key!r}: its index does not decode ({exc})") from exc
    big = bytes_codec_endian(index_codecs[0]) == "big"
    return parse_index_pairs(as_bytes(buf), count, big, key, size)


async def encode_shard_index(
    index_codecs: Sequence[Any], index_spec: Any, pairs: npt.NDArray[np.uint64], nbytes: int
) -> npt.NDArray[np.uint8]:
    """The stored bytes of a shard index: ``pairs`` in the ``bytes`` codec's byte order, then
    through the bytes -> bytes codecs; refused unless it is the ``nbytes`` the codecs promise."""
    big = bytes_codec_endian(index_codecs[0]) == "big"
    raw = pairs.astype(">u8" if big else "<u8").tobytes()
    buf: Any = index_spec.prototype.buffer.from_bytes(raw)
    for codec in index_codecs[1:]:
        buf = await codec._encode_single(buf, index_spec)
    index = as_bytes(buf)
    if index.size != nbytes:
        raise ShardIndexError(
            f"the shard index encodes to {index.size} bytes, not the {nbytes} its codecs "
            "promise; this index codec chain is not supported"
        )
    return index


async def fetch(store_path: Any, key: str) -> npt.NDArray[np.uint8] | None:
    """The stored bytes under ``key`` below a zarr ``StorePath``; None when nothing is stored."""
    buf = await (store_path / key).get(prototype=default_buffer_prototype())
    return None if buf is None else as_bytes(buf)


async def store_chunks(
    store_path: Any,
    codecs: Sequence[Any],
    spec: Any,
    items: Sequence[tuple[str, npt.NDArray[np.uint8] | None]],
) -> None:
    """Store each ``(key, bytes)`` through ``codecs`` concurrently; None deletes the key."""

    async def put(key: str, data: npt.NDArray[np.uint8] | None) -> None:
        target = store_path / key
        if data is None:
            await target.delete()
        else:
            await target.set(await wrap_bytes(codecs, spec, data))

    await asyncio.gather(*(put(key, data) for key, data in items))
