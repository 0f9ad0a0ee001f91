"""Boxes of cells on a regular chunk grid (pure numpy): a selection as a :class:`Box`, the
chunks a box touches, where a chunk's cells go in a box, a box cut into batches of whole chunks,
and the Morton order of shards' inner chunks."""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from types import EllipsisType
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

__all__ = ["Box", "Index", "Selection", "cell_at", "morton", "origins", "project", "resolve"]

Index = int | slice | EllipsisType
Selection = Index | tuple[Index, ...]
Shape = tuple[int, ...]
#: Where a chunk's cells are (in the chunk) and go (in a box): slices for one run, else indices.
Places = tuple[slice, slice] | tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]


class Box(NamedTuple):
    """A contiguous box of cells: ``starts`` / ``stops`` per axis of the array, and ``shape``
    the selection's (int axes dropped, as numpy does)."""

    starts: Shape
    stops: Shape
    shape: Shape

    @property
    def extents(self) -> Shape:  # along every axis of the array (int axes count 1)
        return tuple(b - a for a, b in zip(self.starts, self.stops, strict=True))

    @property
    def slices(self) -> tuple[slice, ...]:
        return tuple(slice(a, b) for a, b in zip(self.starts, self.stops, strict=True))


def resolve(selection: Selection, shape: Shape, what: str) -> Box:
    """The :class:`Box` of ``selection`` (ints, slices of step 1 and one ``...``) in an array
    of ``shape``; IndexError, TypeError or ValueError otherwise, starting with ``what``."""
    items = list(selection) if isinstance(selection, tuple) else [selection]
    if len(dots := [i for i, item in enumerate(items) if item is Ellipsis]) > 1:
        raise IndexError(f"{what}: a selection can hold only one '...'")
    if dots:
        items[dots[0] : dots[0] + 1] = [slice(None)] * (len(shape) - len(items) + 1)
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
            starts.append(i % n)
            stops.append(i % n + 1)
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
        starts.append(a)
        stops.append(max(a, b))
        out.append(max(a, b) - a)
    return Box(tuple(starts), tuple(stops), tuple(out))


def origins(box: Box, chunk: Shape) -> list[Shape]:
    """The first cell of every chunk of a regular grid ``box`` touches (C order)."""
    axes = [range(a - a % c, b, c) for a, b, c in zip(box.starts, box.stops, chunk, strict=True)]
    return list(itertools.product(*axes)) if all(n > 0 for n in box.extents) else []


def cell_at(box: Box, position: int) -> Shape:
    """The array coordinates of the ``position``-th cell (C order) of ``box``."""
    local = np.unravel_index(position, box.extents) if box.extents else ()
    return tuple(s + int(i) for s, i in zip(box.starts, local, strict=True))


def _contiguous(extents: Shape, full: Shape) -> bool:
    """Whether a sub-box of these extents is one run in C order of an array of shape ``full``."""
    long = next((a for a, n in enumerate(extents) if n > 1), len(extents))
    return extents[long + 1 :] == full[long + 1 :]


def _flat(starts: Shape, extents: Shape, full: Shape) -> npt.NDArray[np.int64]:
    """The C-order flat indices in an array of shape ``full`` of the sub-box at ``starts``."""
    return _at_origin(extents, full) + int(np.ravel_multi_index(starts, full))


@functools.lru_cache(maxsize=256)
def _at_origin(extents: Shape, full: Shape) -> npt.NDArray[np.int64]:
    """:func:`_flat` of the sub-box at the origin (cached: a read asks it once per chunk)."""
    index = np.zeros((), np.int64)
    for n, size in zip(extents, full, strict=True):
        index = np.add.outer(index * size, np.arange(n, dtype=np.int64))
    return index.reshape(-1)


def project(origin: Shape, chunk: Shape, box: Box) -> Places | None:
    """Where the cells of the chunk at ``origin`` that lie in ``box`` are: their indices in
    the chunk and their positions in the box, both C order; None when it has none there."""
    lo = [max(o, a) for o, a in zip(origin, box.starts, strict=True)]
    hi = [min(o + c, b) for o, c, b in zip(origin, chunk, box.stops, strict=True)]
    extents = tuple(h - low for low, h in zip(lo, hi, strict=True))
    if any(n <= 0 for n in extents):
        return None
    inner = tuple(low - o for low, o in zip(lo, origin, strict=True))
    outer = tuple(low - a for low, a in zip(lo, box.starts, strict=True))
    if _contiguous(extents, chunk) and _contiguous(extents, box.extents):
        first = int(np.ravel_multi_index(inner, chunk)) if chunk else 0
        at = int(np.ravel_multi_index(outer, box.extents)) if chunk else 0
        count = math.prod(extents)
        return slice(first, first + count), slice(at, at + count)
    return _flat(inner, extents, chunk), _flat(outer, extents, box.extents)


def morton(shape: Shape) -> list[Shape]:
    """Every index of a grid of ``shape`` in Morton (Z) order, zarr's default order of a shard's
    inner chunks: bits interleaved from the lowest, an axis dropping out once it needs no more."""
    bits = [(n - 1).bit_length() for n in shape]
    codes = np.arange(1 << sum(bits), dtype=np.int64)
    coords = np.zeros((codes.size, len(shape)), np.int64)
    taken = 0
    for bit in range(max(bits, default=0)):
        for axis, width in enumerate(bits):
            if bit < width:
                coords[:, axis] |= ((codes >> taken) & 1) << bit
                taken += 1
    inside = (coords < np.array(shape, np.int64)).all(axis=1)
    return [tuple(c) for c in coords[inside].tolist()]


def slabs(
    box: Box, units: Sequence[Shape], limit: Callable[[], int], stretch: int = 1
) -> Iterator[Box]:
    """``box`` cut into runs (C order) of about ``limit()`` cells (asked before every slab) along
    its first axis longer than one cell. ``units`` are nested chunk shapes, coarsest first: a
    slab ends on the coarsest boundary one row of which fits the limit, else the finest (one row
    at least); the first slab of a box more than a cell across may take ``stretch`` times it."""
    total = math.prod(box.extents)
    axis = next((a for a, n in enumerate(box.extents) if n > 1), None)
    if axis is None or total <= limit():
        yield box
        return
    lo, hi = box.starts[axis], box.stops[axis]
    across = total // (hi - lo)  # cells in one layer of the box along the axis
    stretch = stretch if across > 1 else 1
    while lo < hi:
        cells = limit()
        c = next((u[axis] for u in units if across * u[axis] <= cells * stretch), units[-1][axis])
        stop = min(hi, (lo // c + max(1, cells // (across * c))) * c)
        starts = (*box.starts[:axis], lo, *box.starts[axis + 1 :])
        stops = (*box.stops[:axis], stop, *box.stops[axis + 1 :])
        yield Box(starts, stops, tuple(b - a for a, b in zip(starts, stops, strict=True)))
        lo, stretch = stop, 1
