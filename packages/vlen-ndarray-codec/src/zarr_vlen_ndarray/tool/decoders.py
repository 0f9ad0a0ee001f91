"""Chunk decoders of other codecs, as plug-ins: how the tool reads ``ragged-ndarray`` arrays.

The tool never imports a sibling codec package. A codec package that wants ``info`` and
``verify`` to read its chunks registers a plain function in the entry-point group
:data:`ENTRY_POINT_GROUP` (``zarr_ndarray.chunk_decoders``) under its codec name, e.g. in
zarr-ragged-ndarray's ``pyproject.toml``::

    [project.entry-points."zarr_ndarray.chunk_decoders"]
    ragged-ndarray = "zarr_ragged_ndarray.codec:decode_values"

The function is a :data:`ChunkDecoder`, called as ``decoder(framed, count, dtype, where)``:

* ``framed``: the chunk bytes the codec receives (the stored object after undoing the
  bytes -> bytes codecs such as ``zstd``; for a sharded array, one inner chunk), a 1-D uint8
  numpy array;
* ``count``: the number of cells in the chunk (the product of the (inner) chunk shape);
* ``dtype``: the array's :class:`zarr_ndarray_dtype.NDArray` data type;
* ``where``: a description of the chunk for error messages.

It returns ``(values, shapes, offsets)``: the flat values (element dtype), the ``(count, ndim)``
int64 table of every cell's full shape (chunk C order) and the ``count + 1`` int64 offsets of
the cells into ``values``; a chunk that breaks the codec's rules raises a ValueError naming the
problem.

The tool gets ``framed`` through zarr itself: it opens the array (in memory only) with the
codec's entry replaced by a pass-through that hands each chunk's bytes back unparsed, so zarr
still undoes compression and cuts shards exactly as it does for the real codec. A plug-in that
fails to load is skipped with a warning (:mod:`.plugins`); an array whose codec has no plug-in
is refused with an install hint.
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype import NDArray
from zarr_vlen_ndarray.tool.errors import Refused
from zarr_vlen_ndarray.tool.metadata import SHARDING, codec_chain, element_type
from zarr_vlen_ndarray.tool.plugins import load_plugin, plugin_names
from zarr_vlen_ndarray.tool.scan import Node, sharding_inner_chunks
from zarr_vlen_ndarray.tool.stores import ChunkObject, open_array

__all__ = [
    "ENTRY_POINT_GROUP",
    "INSTALL_HINTS",
    "ChunkDecoder",
    "DecodeFailure",
    "Decoded",
    "FramedChunk",
    "decoded_chunks",
    "framed_chunks",
    "plugin_serializer",
    "require_decoder",
]

#: The entry-point group chunk decoder plug-ins register in (name: the codec name).
ENTRY_POINT_GROUP = "zarr_ndarray.chunk_decoders"
#: What to install for each codec the tool knows a decoder plug-in for.
INSTALL_HINTS = {"ragged-ndarray": "pip install zarr-ragged-ndarray"}

#: ``decoder(framed, count, dtype, where) -> (values, shapes, offsets)`` (see the module doc).
ChunkDecoder = Callable[
    [npt.NDArray[np.uint8], int, NDArray, str],
    tuple[np.ndarray, npt.NDArray[np.int64], npt.NDArray[np.int64]],
]


def _names(codecs: object) -> Iterator[tuple[int, str]]:
    """``(position in its chain, name)`` of every codec entry, sharding chains included."""
    if not isinstance(codecs, list):
        return
    for at, entry in enumerate(codecs):
        if not isinstance(entry, dict):
            continue
        name = entry.get("name")
        if name == SHARDING:
            yield from _names((entry.get("configuration") or {}).get("codecs"))
        elif isinstance(name, str):
            yield at, name


def plugin_serializer(meta: dict[str, Any]) -> str | None:
    """The codec of ``meta`` that a decoder plug-in serves (known or registered), or None."""
    served = set(INSTALL_HINTS) | plugin_names(ENTRY_POINT_GROUP)
    for _, name in _names(meta.get("codecs")):
        if name in served:
            return name
    return None


def require_decoder(meta: dict[str, Any], where: str) -> tuple[str, ChunkDecoder] | None:
    """The codec name and its decoder plug-in when a plug-in serves ``meta``'s codec; else None.

    :class:`Refused` with an install hint when the codec needs a plug-in that none provides.
    """
    name = plugin_serializer(meta)
    if name is None:
        return None
    decoder: ChunkDecoder | None = load_plugin(ENTRY_POINT_GROUP, name, "chunk decoder")
    if decoder is None:
        hint = INSTALL_HINTS.get(
            name, f"install a package that registers it in {ENTRY_POINT_GROUP}"
        )
        raise Refused(
            f"{where}: the array's codec {name!r} ({codec_chain(meta.get('codecs'))}) needs its "
            f"chunk decoder plug-in, and none is installed; {hint}."
        )
    return name, decoder


@dataclass(frozen=True)
class _Framed:
    """One chunk's bytes as the pass-through codec hands them back (never a cell value)."""

    data: npt.NDArray[np.uint8]


@cache
def _pass_through_class() -> type:
    from zarr.abc.codec import ArrayBytesCodec

    @dataclass(frozen=True)
    class PassThrough(ArrayBytesCodec):  # type: ignore[misc]
        """Decodes a chunk into cells that are all None but the first: the chunk's bytes."""

        name: str
        is_fixed_size = False

        def to_dict(self) -> dict[str, Any]:
            return {"name": self.name, "configuration": {}}

        def evolve_from_array_spec(self, array_spec: Any) -> PassThrough:
            return self

        def validate(self, *, shape: Any, dtype: Any, chunk_grid: Any) -> None:
            return None

        def compute_encoded_size(self, input_byte_length: int, _chunk_spec: Any) -> int:
            raise NotImplementedError("the tool's pass-through codec only reads")

        def _decode_sync(self, chunk_bytes: Any, chunk_spec: Any) -> Any:
            out = np.empty(tuple(chunk_spec.shape), dtype=object)
            out.reshape(-1)[0] = _Framed(np.array(chunk_bytes.as_numpy_array(), dtype=np.uint8))
            return chunk_spec.prototype.nd_buffer.from_numpy_array(out)

        async def _decode_single(self, chunk_bytes: Any, chunk_spec: Any) -> Any:
            return self._decode_sync(chunk_bytes, chunk_spec)

    return PassThrough


def _framed_view(meta: dict[str, Any], name: str, shape: tuple[int, ...], where: str) -> dict:
    """``meta`` (deep-copied) with array shape ``shape`` and the ``name`` codec passed through."""
    out = copy.deepcopy(meta)
    out["shape"] = list(shape)
    codec = _pass_through_class()(name)

    def swap(codecs: list[Any]) -> list[Any]:
        chain: list[Any] = []
        for at, entry in enumerate(codecs):
            if isinstance(entry, dict) and entry.get("name") == name:
                if at:
                    raise Refused(
                        f"{where}: the codec chain {codec_chain(meta.get('codecs'))} has "
                        f"array -> array codecs before {name!r}; the tool reads its chunks only "
                        "without them."
                    )
                chain.append(codec)
            elif isinstance(entry, dict) and entry.get("name") == SHARDING:
                config = dict(entry.get("configuration") or {})
                config["codecs"] = swap(list(config.get("codecs") or []))
                chain.append({**entry, "configuration": config})
            else:
                chain.append(entry)
        return chain

    out["codecs"] = swap(list(meta["codecs"]))
    return out


@dataclass(frozen=True)
class FramedChunk:
    """One (inner) chunk read as the bytes its codec receives."""

    #: Coordinates of the chunk's first cell in the array.
    origin: tuple[int, ...]
    #: The (inner) chunk shape; the chunk holds ``prod(shape)`` cells.
    shape: tuple[int, ...]
    framed: npt.NDArray[np.uint8]

    @property
    def count(self) -> int:
        return math.prod(self.shape)


def framed_chunks(
    node: Node, name: str, objects: list[ChunkObject]
) -> Iterator[tuple[ChunkObject, list[FramedChunk] | Exception]]:
    """Per stored object, its written (inner) chunks as framed bytes, or the error reading it.

    Edge chunks are read whole (cells beyond the array's shape too), as the codec decodes them.
    """
    padded = node.grid.padded()
    chunk = sharding_inner_chunks(node.meta) or node.grid.chunks
    view = _framed_view(node.meta, name, padded.shape, node.where)
    with open_array(node.loc, view) as array:
        for obj in objects:
            region = padded.region(obj.index)
            try:
                cells = np.asarray(array[region], dtype=object)
            except Exception as exc:  # a store or bytes -> bytes codec failure marks it bad
                yield obj, exc
                continue
            # Only the first cell of each (inner) chunk can hold its bytes: look there alone.
            out = []
            firsts = itertools.product(
                *(range(0, r.stop - r.start, c) for r, c in zip(region, chunk, strict=True))
            )
            for local in firsts:
                cell = cells[local]
                if isinstance(cell, _Framed):  # else unwritten: zarr filled in the fill cell
                    origin = tuple(r.start + x for r, x in zip(region, local, strict=True))
                    out.append(FramedChunk(origin, tuple(chunk), cell.data))
            yield obj, out


@dataclass(frozen=True)
class Decoded:
    """One decoded (inner) chunk: where it is and its columns."""

    chunk: FramedChunk
    values: np.ndarray
    shapes: npt.NDArray[np.int64]
    offsets: npt.NDArray[np.int64]


class DecodeFailure(Exception):
    """A chunk its decoder refused: the stored object, the inner chunk and the error."""

    def __init__(self, obj: ChunkObject, chunk: FramedChunk | None, error: Exception) -> None:
        super().__init__(str(error))
        self.obj = obj
        self.chunk = chunk
        self.error = error


def decoded_chunks(
    node: Node, name: str, decoder: ChunkDecoder, objects: list[ChunkObject]
) -> Iterator[tuple[ChunkObject, list[Decoded]]]:
    """Per stored object, every written (inner) chunk decoded by ``decoder``.

    Raises :class:`DecodeFailure` at the first chunk that cannot be read or decoded.
    """
    etype = element_type(node.meta)
    if etype is None:
        raise Refused(f"{node.where}: the {name!r} codec serves the ndarray data type only.")
    dtype = NDArray(dtype=etype.dtype, shape=tuple(etype.shape))
    for obj, framed in framed_chunks(node, name, objects):
        if isinstance(framed, Exception):
            raise DecodeFailure(obj, None, framed)
        out = []
        for chunk in framed:
            where = f"the {name!r} chunk at {list(chunk.origin)} of {node.where}"
            try:
                values, shapes, offsets = decoder(chunk.framed, chunk.count, dtype, where)
            except Exception as exc:  # any failure to decode marks the chunk bad
                raise DecodeFailure(obj, chunk, exc) from exc
            out.append(Decoded(chunk, values, np.asarray(shapes), np.asarray(offsets)))
        yield obj, out
