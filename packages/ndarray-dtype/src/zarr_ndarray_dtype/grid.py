"""Selection boxes over an N-d grid of cells and the chunks they cut (pure numpy; no zarr).

The codec packages' columnar access takes a selection of an N-d array (an int, a slice with step
1, ``...`` or a tuple of those, one per axis) and moves the cells of that box chunk by chunk, in
C order of the selection. This module holds that arithmetic once:

* :func:`resolve` turns a selection into a :class:`Box` (start and stop per axis, and the shape
  numpy would give the selection: int axes dropped);
* :func:`chunk_boxes` lists the chunks of a regular grid the box overlaps, with the part of each
  chunk inside the box (:class:`Piece`);
* :func:`grid_indices` gives the flat C-order indices of a sub-box of a grid, to move a piece's
  cells between a chunk and the selection in one vectorized step.

>>> box = resolve((1, slice(None)), (3, 4), "read")
>>> box
Box(starts=(1, 0), stops=(2, 4), shape=(4,))
>>> [p.coords for p in chunk_boxes((2, 3), box)]
[(0, 0), (0, 1)]
>>> grid_indices((1, 1), (1, 2), (3, 4)).tolist()
[5, 6]
"""

from __future__ import annotations

import itertools
from types import EllipsisType
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

__all__ = ["Box", "Index", "Piece", "Selection", "chunk_boxes", "grid_indices", "resolve"]

Index = int | slice | EllipsisType
Selection = Index | tuple[Index, ...]


class Box(NamedTuple):
    """A contiguous box of cells: ``starts`` / ``stops`` per axis of the array."""

    starts: tuple[int, ...]
    stops: tuple[int, ...]
    shape: tuple[int, ...]  # the selection's shape (int axes dropped, as numpy does)

    @property
    def extents(self) -> tuple[int, ...]:
        """The box's size along every axis of the array (int axes count 1)."""
        return tuple(b - a for a, b in zip(self.starts, self.stops, strict=True))

    @property
    def slices(self) -> tuple[slice, ...]:
        """The box as one slice per axis (for zarr's own indexing)."""
        return tuple(slice(a, b) for a, b in zip(self.starts, self.stops, strict=True))


def resolve(selection: Selection, shape: tuple[int, ...], what: str) -> Box:
    """The :class:`Box` of ``selection`` in an array of ``shape``.

    Raises IndexError for a selection with too many entries, two ``...`` or an int out of
    bounds; TypeError for entries that are not an int, a slice or ``...``; ValueError for a
    slice whose step is not 1. ``what`` (e.g. the calling function) starts every message.
    """
    items = list(selection) if isinstance(selection, tuple) else [selection]
    if sum(1 for s in items if s is Ellipsis) > 1:
        raise IndexError(f"{what}: a selection can hold only one '...'")
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items[at : at + 1] = [slice(None)] * (len(shape) - len(items) + 1)
    if len(items) > len(shape):
        raise IndexError(
            f"{what}: the array has {len(shape)} dimensions, got a selection of {len(items)}"
        )
    items += [slice(None)] * (len(shape) - len(items))
    starts, stops, out = [], [], []
    for axis, (item, n) in enumerate(zip(items, shape, strict=True)):
        if isinstance(item, int | np.integer) and not isinstance(item, bool):
            i = int(item)
            if not -n <= i < n:
                raise IndexError(f"{what}: index {i} is out of bounds for axis {axis} of size {n}")
            i %= n
            starts.append(i)
            stops.append(i + 1)
            continue
        if not isinstance(item, slice):
            raise TypeError(
                f"{what}: each selection entry must be an int, a slice or '...', got "
                f"{type(item).__name__}"
            )
        a, b, step = item.indices(n)
        if step != 1:
            raise ValueError(
                f"{what}: only contiguous selections (step 1) are supported, got step {step} on "
                f"axis {axis}; read the covering range and subsample the cells"
            )
        b = max(a, b)
        starts.append(a)
        stops.append(b)
        out.append(b - a)
    return Box(tuple(starts), tuple(stops), tuple(out))


class Piece(NamedTuple):
    """The part of one chunk inside a box."""

    coords: tuple[int, ...]  # the chunk's position in the chunk grid
    lo: tuple[int, ...]  # first cell of the part, within the chunk
    extents: tuple[int, ...]  # size of the part along every axis
    at: tuple[int, ...]  # first cell of the part, within the box


def chunk_boxes(chunk_shape: tuple[int, ...], box: Box) -> list[Piece]:
    """Every chunk of a regular grid of ``chunk_shape`` chunks that ``box`` overlaps, in C
    order of the chunk grid (an empty box overlaps none)."""
    if any(a >= b for a, b in zip(box.starts, box.stops, strict=True)):
        return []
    ranges = [
        range(a // c, (b - 1) // c + 1)
        for a, b, c in zip(box.starts, box.stops, chunk_shape, strict=True)
    ]
    out: list[Piece] = []
    for coords in itertools.product(*ranges):
        first = [i * c for i, c in zip(coords, chunk_shape, strict=True)]
        lo = [max(a, f) for a, f in zip(box.starts, first, strict=True)]
        hi = [min(b, f + c) for b, f, c in zip(box.stops, first, chunk_shape, strict=True)]
        out.append(
            Piece(
                tuple(coords),
                tuple(x - f for x, f in zip(lo, first, strict=True)),
                tuple(h - x for h, x in zip(hi, lo, strict=True)),
                tuple(x - a for x, a in zip(lo, box.starts, strict=True)),
            )
        )
    return out


def grid_indices(
    lo: tuple[int, ...], extents: tuple[int, ...], shape: tuple[int, ...]
) -> npt.NDArray[np.intp]:
    """Flat C-order indices into a grid of ``shape`` of the sub-box ``lo + [0, extents)``,
    themselves in C order of the sub-box (a 0-d grid has the one index 0)."""
    if not shape:
        return np.zeros(1, dtype=np.intp)
    index = np.zeros(extents, dtype=np.intp)
    stride = 1
    for axis in range(len(shape) - 1, -1, -1):
        view = [1] * len(shape)
        view[axis] = extents[axis]
        index += np.arange(lo[axis], lo[axis] + extents[axis], dtype=np.intp).reshape(view) * stride
        stride *= shape[axis]
    return index.reshape(-1)
