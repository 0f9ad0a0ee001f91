"""Selection boxes over an N-d grid of cells and the chunks they cut (pure numpy; no zarr):
:func:`resolve` (a selection of ints, step-1 slices and ``...`` to a :class:`Box`),
:class:`Grid` (a regular chunk grid), :func:`slabs` (a box in batches of whole chunks, C order),
:func:`whole_chunks` and :func:`untile` (chunks laid out as one array).

>>> resolve((1, slice(None)), (3, 4), "read")
Box(starts=(1, 0), stops=(2, 4), shape=(4,))
>>> [b.slices for b in slabs(resolve(slice(0, 6), (8,), "read"), [(2,)], lambda: 4)]
[(slice(0, 4, None),), (slice(4, 6, None),)]
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import EllipsisType
from typing import NamedTuple

import numpy as np

__all__ = ["Box", "Grid", "Index", "Selection", "resolve", "slabs", "untile", "whole_chunks"]

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
        """The cells of chunk ``index``, clipped to the array."""
        return tuple(
            slice(i * c, min((i + 1) * c, s))
            for i, c, s in zip(index, self.chunks, self.shape, strict=True)
        )

    def padded(self) -> Grid:
        """The grid whose shape is a whole number of chunks (edge chunks whole)."""
        return Grid(
            tuple(n * c for n, c in zip(self.grid_shape, self.chunks, strict=True)), self.chunks
        )

    def indices(self) -> Iterator[tuple[int, ...]]:
        """Every chunk index, in C order."""
        return itertools.product(*(range(n) for n in self.grid_shape))


def slabs(
    box: Box, units: Sequence[tuple[int, ...]], limit: Callable[[], int], stretch: int = 1
) -> Iterator[Box]:
    """``box`` cut into slabs of about ``limit()`` cells (``limit`` is asked again before every
    slab, so a caller can size the next slab from the last), along its first axis longer than
    one cell. ``units`` are nested chunk shapes, coarsest first (a shard's, then its inner
    chunks'): a slab ends on a boundary of the coarsest unit one row of which fits the limit,
    else of the finest (at least one row of it); the first slab of a box more than one cell
    across may take up to ``stretch`` times its limit to end on a coarser boundary. The slabs
    follow one another in C order of the box, so their cells do too. A box whose first such
    axis lies in one chunk is one slab."""
    total = math.prod(box.extents)
    axis = next((a for a, n in enumerate(box.extents) if n > 1), None)
    if axis is None or total <= limit():
        yield box
        return
    lo, hi = box.starts[axis], box.stops[axis]
    across = total // (hi - lo)  # cells in one layer of the box along the axis
    first = True
    while lo < hi:
        cells = limit()
        fits = cells * stretch if first and across > 1 else cells
        c = next((u[axis] for u in units if across * u[axis] <= fits), units[-1][axis])
        stop = min(hi, (lo // c + max(1, cells // (across * c))) * c)
        yield Box(
            (*box.starts[:axis], lo, *box.starts[axis + 1 :]),
            (*box.stops[:axis], stop, *box.stops[axis + 1 :]),
            (),
        )
        lo, first = stop, False


def whole_chunks(box: Box, chunks: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """Whether ``box`` is made of whole chunks of a regular grid over an array of ``shape``
    (a chunk at the array's edge counts whole when the box takes all of it that is in the
    array)."""
    return all(
        a % c == 0 and (b % c == 0 or b == n)
        for a, b, c, n in zip(box.starts, box.stops, chunks, shape, strict=True)
    )


def untile(tiles: np.ndarray) -> np.ndarray:
    """Equal tiles laid out as one array: ``tiles`` of shape ``(tiles along each axis...,
    the tile's shape...)`` to the array of their cells, in C order of the cells."""
    k = tiles.ndim // 2
    order = [a for axis in range(k) for a in (axis, k + axis)]
    shape = tuple(n * t for n, t in zip(tiles.shape[:k], tiles.shape[k:], strict=True))
    return tiles.transpose(order).reshape(shape)
