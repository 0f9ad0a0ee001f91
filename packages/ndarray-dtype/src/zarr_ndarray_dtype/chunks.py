"""Deprecated: what the store tool took from the engine before ``iter_columnar``; goes with the
tool's move to the public API."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from zarr_ndarray_dtype._grid import Box, Selection, resolve, slabs

__all__ = ["Box", "Grid", "Selection", "chunk_name", "resolve", "serializer_of", "slabs"]


@dataclass(frozen=True)
class Grid:
    """A regular chunk grid: an array of ``shape`` cut into chunks of ``chunks`` cells."""

    shape: tuple[int, ...]
    chunks: tuple[int, ...]

    @property
    def grid_shape(self) -> tuple[int, ...]:
        return tuple(-(-s // c) for s, c in zip(self.shape, self.chunks, strict=True))

    @property
    def nchunks(self) -> int:
        return math.prod(self.grid_shape)

    @property
    def ncells(self) -> int:
        return math.prod(self.shape)

    def region(self, index: tuple[int, ...]) -> tuple[slice, ...]:
        return tuple(
            slice(i * c, min((i + 1) * c, s))
            for i, c, s in zip(index, self.chunks, self.shape, strict=True)
        )

    def padded(self) -> Grid:
        return Grid(
            tuple(n * c for n, c in zip(self.grid_shape, self.chunks, strict=True)), self.chunks
        )

    def indices(self) -> Iterator[tuple[int, ...]]:
        return itertools.product(*(range(n) for n in self.grid_shape))


def serializer_of(metadata: Any) -> Any:
    from zarr_ndarray_dtype.columnar import _serializer

    return _serializer(metadata.codecs)


def chunk_name(metadata: Any, cell: tuple[int, ...], *, inner: bool = True) -> str:
    """The stored chunk holding ``cell``: ``chunk 'c/3'``, ``shard 'c/0'`` (not ``inner``)."""
    from zarr.codecs import ShardingCodec

    grid = tuple(int(n) for n in metadata.chunk_grid.chunk_shape)
    key = metadata.chunk_key_encoding.encode_chunk_key(
        tuple(c // g for c, g in zip(cell, grid, strict=True))
    )
    sharded = isinstance(next(iter(metadata.codecs)), ShardingCodec)
    return f"{'shard' if sharded else 'chunk'} {key!r}"
