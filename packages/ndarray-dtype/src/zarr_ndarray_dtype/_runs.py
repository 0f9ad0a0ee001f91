"""Runs of cells: which block (a decoded chunk, the caller's columns, the fill cell) the cells
of a chunk or a selection come from, cut into runs so they move as slices (pure numpy)."""

from __future__ import annotations

import itertools
import threading
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype._columns import FillBlock
from zarr_ndarray_dtype.blocks import Block, ranges

__all__ = ["Runs", "Sources", "Span", "by_block", "cells_of_runs", "places", "runs_of", "spans"]

_Ints = npt.NDArray[np.int64]


class Sources:
    """Where the cells of one pass of zarr come from: blocks with consecutive id ranges.

    Block 0 is the fill cell (id 0). Every other block takes the ids ``base .. base + count -
    1``, one id left unused between blocks, so that ids consecutive in a chunk or a selection
    come from one block.
    """

    def __init__(self, fill: FillBlock, first: list[Block]) -> None:
        self.blocks: list[Any] = [fill]  # a read registers (bytes, cells) and decodes later
        self.bases = [0]
        self.next = 2
        self.lock = threading.Lock()
        for block in first:
            self.add(block, block.sizes.size)

    def add(self, block: object, count: int) -> int:
        """Register ``block`` (or what stands for it) of ``count`` cells; its base id."""
        with self.lock:
            base = self.next
            self.blocks.append(block)
            self.bases.append(base)
            self.next = base + count + 1
            return base


class Runs(NamedTuple):
    """Runs of consecutive cells of one block: where they are, how long, whose, from which."""

    pos: _Ints
    length: _Ints
    source: _Ints
    first: _Ints  # the block's cell at the run's start


def runs_of(ids: npt.NDArray[np.uint64], bases: list[int]) -> Runs:
    """Cut ids (in C order of a chunk or a selection) into runs of one block's cells."""
    n = ids.size
    if not n:
        empty = np.zeros(0, np.int64)
        return Runs(empty, empty, empty, empty)
    steps = np.diff(ids.view(np.int64))  # ids stay far below 2**63
    breaks = steps != 1
    if breaks.any():
        breaks &= (steps != 0) | (ids[1:] != 0)  # fill cells (id 0) in a row: one run too
    pos = np.flatnonzero(breaks)
    pos += 1
    pos = np.concatenate(([0], pos)).astype(np.int64)
    start = ids[pos].astype(np.int64)
    source = np.searchsorted(np.array(bases, np.int64), start, side="right").astype(np.int64) - 1
    length = np.diff(np.append(pos, n))
    return Runs(pos, length, source, start - np.array(bases, np.int64)[source])


def by_block(runs: Runs) -> list[tuple[int, npt.NDArray[np.intp]]]:
    """``(block, its runs)`` for every block the runs come from."""
    if not runs.source.size:
        return []
    order = np.argsort(runs.source, kind="stable")
    sources = runs.source[order]
    cut = np.flatnonzero(np.concatenate(([True], sources[1:] != sources[:-1], [True])))
    return [(int(sources[a]), order[a:b]) for a, b in itertools.pairwise(cut.tolist())]


#: Runs at least this long (on average) are moved run by run, as slices; shorter ones at once.
_LONG_RUN = 64

Span = tuple[slice | _Ints, slice | _Ints]


def spans(runs: Runs, group: npt.NDArray[np.intp], block: int) -> list[Span]:
    """``(cells of the block, their positions)`` of the runs ``group``: a pair of slices per run
    when the runs are long (no index arrays), else one pair of index arrays."""
    lengths = runs.length[group]
    if block and lengths.size * _LONG_RUN <= int(lengths.sum()):
        return [
            (slice(first, first + n), slice(pos, pos + n))
            for pos, n, first in zip(
                runs.pos[group].tolist(), lengths.tolist(), runs.first[group].tolist(), strict=True
            )
        ]
    return [cells_of_runs(runs, group, block)]


def places(offsets: _Ints, positions: slice | _Ints, itemsize: int) -> int | _Ints:
    """Where cells at ``positions`` go in the output bytes: the first one's byte offset for a
    slice (the rest follow back to back), else each one's (see ``Block.copy``)."""
    if isinstance(positions, slice):
        return int(offsets[positions.start]) * itemsize
    return offsets[positions] * itemsize


def cells_of_runs(runs: Runs, group: npt.NDArray[np.intp], block: int) -> tuple[_Ints, _Ints]:
    """``(cells of the block, their positions)`` of the runs ``group``, in order."""
    lengths = runs.length[group]
    positions, cells = ranges(lengths, runs.pos[group], runs.first[group])
    return (cells if block else np.zeros_like(cells)), positions
