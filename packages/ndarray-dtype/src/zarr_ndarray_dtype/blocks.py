"""Decoded chunks as the columnar engine sees them, and what a codec contributes (pure numpy).

A codec of the ``ndarray`` data type gives the engine one :class:`BlockCodec`: the bytes of a
chunk (after the bytes -> bytes codecs) to a :class:`Block` and cells to bytes. A block knows
the size (and, for patterns with several variable dimensions, the shape) of each of its cells
and copies any of them anywhere, so the engine moves cells from chunks into one output, and
from the caller's columns and stored chunks into new chunks, without a Python object per cell.
The engine's other sources of cells, the caller's columns and the fill cell, are blocks too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype._segments import copy_segments, offsets_of, ranges
from zarr_ndarray_dtype.cells import check_bool_bytes
from zarr_ndarray_dtype.pattern import ShapePattern

if TYPE_CHECKING:
    from zarr_ndarray_dtype.dtype import NDArray

__all__ = [
    "Block",
    "BlockCodec",
    "Cells",
    "ColumnsBlock",
    "cell_shapes",
    "check_bool_bytes",
    "copy_segments",
    "needs_shapes",
    "offsets_of",
    "ranges",
]


class Cells(NamedTuple):
    """``count`` cells: flat ``values``, item ``offsets`` (count + 1, from 0), ``shapes``."""

    values: np.ndarray
    offsets: npt.NDArray[np.int64]
    shapes: npt.NDArray[np.int64] | None

    @property
    def sizes(self) -> npt.NDArray[np.int64]:
        """The item count of every cell."""
        return np.diff(self.offsets)


def needs_shapes(pattern: ShapePattern) -> bool:
    """Whether cells of ``pattern`` need a shape table (two or more variable dimensions)."""
    return len(pattern.variable_axes) >= 2


def cell_shapes(cells: Cells, pattern: ShapePattern) -> npt.NDArray[np.int64]:
    """The ``(count, ndim)`` full shapes of ``cells``: their table, or derived from the sizes."""
    if cells.shapes is not None:
        return cells.shapes
    return pattern.shapes_for_items(cells.sizes)


class Block(Protocol):
    """One decoded chunk (or another source of cells), cells in the chunk's C order."""

    #: The item count of every cell.
    sizes: npt.NDArray[np.int64]
    #: The ``(count, ndim)`` full shapes when the pattern has several variable dimensions.
    shapes: npt.NDArray[np.int64] | None

    def copy(
        self, cells: npt.NDArray[np.intp] | slice, out: npt.NDArray[np.uint8], dst: Any
    ) -> None:
        """Copy the items of ``cells`` to ``out`` (a flat uint8 view of values of the element
        dtype): for an index array (into this block), to the byte offsets of the array ``dst``;
        for a slice of consecutive cells, back to back from the byte offset ``dst`` (an int)."""

    def cells(self) -> Cells:
        """Every cell, values back to back (a view of the chunk where it allows)."""


class BlockCodec(Protocol):
    """What a codec gives the columnar engine: its chunk bytes <-> cells."""

    #: The codec's name in zarr metadata (for error messages).
    name: str

    def decode(self, raw: npt.NDArray[np.uint8], count: int, dtype: NDArray, where: str) -> Block:
        """Check the ``count``-cell chunk ``raw`` exactly as the codec's decoder does (nothing
        copied); raise the codec's ValueError naming ``where`` for a chunk that breaks a rule
        (the same for the same arguments: the engine names a failing chunk by decoding it
        again)."""

    def encode(self, cells: Cells, dtype: NDArray, where: str) -> npt.NDArray[np.uint8]:
        """The chunk the codec's encoder writes for ``cells`` (valid cells of ``dtype``)."""


class ColumnsBlock:
    """Cells whose values lie back to back (:class:`Cells`) as a block."""

    def __init__(self, cells: Cells) -> None:
        self._cells = cells
        self.sizes = cells.sizes
        self.shapes = cells.shapes
        self._raw = cells.values.reshape(-1).view(np.uint8)
        self._itemsize = cells.values.dtype.itemsize

    def copy(
        self, cells: npt.NDArray[np.intp] | slice, out: npt.NDArray[np.uint8], dst: Any
    ) -> None:
        unit = self._itemsize
        if isinstance(cells, slice):  # consecutive cells back to back: one copy
            offsets = self._cells.offsets
            a, b = int(offsets[cells.start]) * unit, int(offsets[cells.stop]) * unit
            out[dst : dst + b - a] = self._raw[a:b]
            return
        starts = self._cells.offsets[cells] * unit
        copy_segments(self._raw, starts, self.sizes[cells] * unit, out, dst)

    def cells(self) -> Cells:
        return self._cells
