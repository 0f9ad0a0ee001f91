"""Loading an array node: its document, chunk grid and stored chunk objects."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype.chunks import Grid
from zarr_ndarray_tool._metadata import SHARDING, check_array_document
from zarr_ndarray_tool._remote import Version
from zarr_ndarray_tool._stores import (
    ChunkObject,
    Location,
    chunk_objects,
    grid_of,
    read_document,
    read_versioned,
)


@dataclass(frozen=True)
class Node:
    """One array: where it is, its document (parsed and as text), grid and stored objects."""

    loc: Location
    meta: dict[str, Any]
    text: str
    grid: Grid
    objects: list[ChunkObject]
    #: ``zarr.json`` as read: a rewrite is conditional on it (see :func:`._stores.write_key`).
    version: Version | None = None

    @property
    def where(self) -> str:
        return str(self.loc)


def load_location(loc: Location) -> Node:
    """Read the array at ``loc``; :class:`~zarr_ndarray_tool.errors.Refused` if unusable."""
    version = read_versioned(loc)
    meta, text = read_document(loc, version)
    check_array_document(meta, str(loc))
    grid = grid_of(meta, str(loc))
    return Node(loc, meta, text, grid, chunk_objects(loc, meta, grid), version)


def sharding_inner_chunks(meta: dict[str, Any]) -> tuple[int, ...] | None:
    """The inner chunk shape when the array is sharded (``sharding_indexed`` first), else None."""
    codecs = meta.get("codecs")
    first = codecs[0] if isinstance(codecs, list) and codecs else None
    if isinstance(first, dict) and first.get("name") == SHARDING:
        shape = (first.get("configuration") or {}).get("chunk_shape")
        if isinstance(shape, list) and all(isinstance(s, int) and s >= 1 for s in shape):
            return tuple(shape)
    return None


def payload_lengths(cells: np.ndarray) -> npt.NDArray[np.int64]:
    """Byte length of every ``bytes`` cell of a region read as raw bytes, in C order."""
    flat = np.asarray(cells, dtype=object).reshape(-1)  # a 0-d array may come back as bytes
    return np.fromiter(map(len, flat), dtype=np.int64, count=flat.size)


def sample(objects: list[ChunkObject], count: int) -> list[ChunkObject]:
    """``count`` objects spread evenly over the list (first and last included); all if fewer."""
    if count >= len(objects):
        return list(objects)
    if count <= 0:
        return []
    picks = np.unique(np.linspace(0, len(objects) - 1, count).round().astype(np.int64))
    return [objects[int(i)] for i in picks]
