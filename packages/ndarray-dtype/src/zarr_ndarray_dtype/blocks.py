"""What a codec of the ``ndarray`` data type gives the columnar engine (pure numpy): a
:class:`BlockCodec` turns chunk bytes into a :class:`Block`, whose cells it copies anywhere with
no Python object per cell, and :class:`FlatCells` into chunk bytes."""

from __future__ import annotations

import functools
import operator
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype.cells import check_bool_bytes
from zarr_ndarray_dtype.errors import deprecated
from zarr_ndarray_dtype.pattern import ShapePattern

if TYPE_CHECKING:
    from zarr_ndarray_dtype.dtype import NDArrayDType

Ints = npt.NDArray[np.int64]
Bytes = npt.NDArray[np.uint8]

# copy_segments is the engine's (importable, not listed).
__all__ = [
    "Block", "BlockCodec", "ColumnsBlock", "FlatCells", "cell_shapes", "check_bool_bytes",
    "offsets_of",
]  # fmt: skip

# Runs at most this many, or of this many bytes on average, are copied by slices.
_SLICE_RUNS = 64
_SLICE_RUN_BYTES = 512


def offsets_of(sizes: Ints) -> Ints:
    """``[0, sizes[0], sizes[0] + sizes[1], ...]`` (int64, one entry more than ``sizes``)."""
    offsets = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return offsets


def copy_segments(src: Bytes, starts: Ints, nbytes: Ints, out: Bytes, dst: Ints) -> None:
    """``out[dst[i]:dst[i] + nbytes[i]] = src[starts[i]:starts[i] + nbytes[i]]`` for every i:
    runs of adjacent segments, by slices if few or long, else as one gather of wide words."""
    if not nbytes.size:
        return
    joined = (starts[1:] == starts[:-1] + nbytes[:-1]) & (dst[1:] == dst[:-1] + nbytes[:-1])
    first = np.flatnonzero(np.concatenate(([True], ~joined)))
    length = np.add.reduceat(nbytes, first)
    keep = length > 0
    begin, into, length = starts[first][keep], dst[first][keep], length[keep]
    if length.size <= _SLICE_RUNS or int(length.sum()) >= length.size * _SLICE_RUN_BYTES:
        for s, d, n in zip(begin.tolist(), into.tolist(), length.tolist(), strict=True):
            out[d : d + n] = src[s : s + n]
        return
    every = np.concatenate((begin, into, length, [src.size, out.size]))
    bits = functools.reduce(operator.or_, every.tolist(), 0)
    width = next(w for w in (8, 4, 2, 1) if not bits % w)
    step = np.arange(int(length.sum()) // width, dtype=np.int64)
    step -= np.repeat(offsets_of(length // width)[:-1], length // width)
    word = np.dtype(f"u{width}")
    take, put = (np.repeat(a // width, length // width) + step for a in (begin, into))
    out.view(word)[put] = src.view(word)[take]


class FlatCells(NamedTuple):
    """Cells: flat ``values``, item ``offsets`` (one more, from 0) and the ``(count, ndim)``
    ``shapes`` with several variable dimensions (else None: the sizes give the shapes)."""

    values: np.ndarray
    offsets: Ints
    shapes: Ints | None

    @property
    def sizes(self) -> Ints:
        """The item count of every cell."""
        return np.diff(self.offsets)


def cell_shapes(cells: FlatCells, pattern: ShapePattern) -> Ints:
    """The ``(count, ndim)`` full shapes of ``cells``: their table, or derived from the sizes."""
    return pattern.shapes_for_items(cells.sizes) if cells.shapes is None else cells.shapes


class Block(Protocol):
    """One decoded chunk (or another source of cells), cells in the chunk's C order."""

    #: The item count of every cell.
    sizes: Ints
    #: The ``(count, ndim)`` full shapes when the pattern has several variable dimensions.
    shapes: Ints | None

    def copy(self, cells: npt.NDArray[np.intp] | slice, out: Bytes, dst: Any) -> None:
        """Copy the items of ``cells`` to ``out`` (a flat uint8 view of values of the element
        dtype): for an index array (into this block), to the byte offsets of the array ``dst``;
        for a slice of consecutive cells, back to back from the byte offset ``dst`` (an int)."""

    def cells(self) -> FlatCells:
        """Every cell, values back to back (a view of the chunk where it allows)."""


class BlockCodec(Protocol):
    """What a codec gives the columnar engine: its chunk bytes <-> cells."""

    #: The codec's name in zarr metadata (for error messages).
    name: str

    def decode(self, raw: Bytes, count: int, dtype: NDArrayDType, where: str) -> Block:
        """Check the ``count``-cell chunk ``raw`` exactly as the codec's decoder does (nothing
        copied); raise the codec's ValueError naming ``where`` for a chunk that breaks a rule."""

    def encode(self, cells: FlatCells, dtype: NDArrayDType, where: str) -> Bytes:
        """The chunk the codec's encoder writes for ``cells`` (valid cells of ``dtype``)."""


class ColumnsBlock:
    """Cells whose values lie back to back (:class:`FlatCells`) as a block."""

    def __init__(self, cells: FlatCells) -> None:
        self._cells, self.sizes, self.shapes = cells, cells.sizes, cells.shapes
        self._raw = cells.values.reshape(-1).view(np.uint8)

    def copy(self, cells: npt.NDArray[np.intp] | slice, out: Bytes, dst: Any) -> None:
        offsets, unit = self._cells.offsets, self._cells.values.itemsize
        if isinstance(cells, slice):  # consecutive cells back to back: one copy
            a, b = int(offsets[cells.start]) * unit, int(offsets[cells.stop]) * unit
            out[dst : dst + b - a] = self._raw[a:b]
        else:
            copy_segments(self._raw, offsets[cells] * unit, self.sizes[cells] * unit, out, dst)

    def cells(self) -> FlatCells:
        return self._cells


# Cells: renamed, as flat values and item offsets are unlike Columnar.
__getattr__ = deprecated(__name__, {"Cells": (FlatCells, "use FlatCells (the same class)")})
