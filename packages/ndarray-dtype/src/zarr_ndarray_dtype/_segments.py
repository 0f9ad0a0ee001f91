"""Runs of indices and byte segments between flat buffers (pure numpy; no zarr): how the
engine moves cells, each to its own place, without a Python loop per cell."""

from __future__ import annotations

import functools
import operator

import numpy as np
import numpy.typing as npt

__all__ = ["copy_segments", "offsets_of", "ranges"]

# Runs at most this many, or of this many bytes on average, are copied by slices.
_SLICE_RUNS = 64
_SLICE_RUN_BYTES = 512
# The widest word a gather moves at once, when every start and length is a multiple of it.
_WORDS = {8: np.uint64, 4: np.uint32, 2: np.uint16, 1: np.uint8}


def offsets_of(sizes: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """``[0, sizes[0], sizes[0] + sizes[1], ...]`` (int64, one entry more than ``sizes``)."""
    offsets = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return offsets


def ranges(
    lengths: npt.NDArray[np.int64], *starts: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], ...]:
    """For each array of run starts, every index of every run, the runs' ``lengths`` shared:
    ``concatenate([arange(s, s + n) for s, n in zip(starts, lengths)])``, vectorized."""
    step = np.arange(int(lengths.sum()), dtype=np.int64)
    step -= np.repeat(offsets_of(lengths)[:-1], lengths)
    return tuple(np.repeat(first, lengths) + step for first in starts)


def copy_segments(
    src: npt.NDArray[np.uint8],
    starts: npt.NDArray[np.int64],
    nbytes: npt.NDArray[np.int64],
    out: npt.NDArray[np.uint8],
    dst: npt.NDArray[np.int64],
) -> None:
    """``out[dst[i]:dst[i] + nbytes[i]] = src[starts[i]:starts[i] + nbytes[i]]`` for every i.

    ``src`` and ``out`` are flat uint8 arrays; the segments must lie inside them (the caller's
    tables say where, and they were checked against the bytes present).
    """
    if not nbytes.size:
        return
    ends = starts + nbytes
    joined = (starts[1:] == ends[:-1]) & (dst[1:] == dst[:-1] + nbytes[:-1])
    first = np.flatnonzero(np.concatenate(([True], ~joined)))
    run_len = np.add.reduceat(nbytes, first)
    keep = run_len > 0
    run_src, run_dst, run_len = starts[first][keep], dst[first][keep], run_len[keep]
    runs = run_len.size
    if runs <= _SLICE_RUNS or int(run_len.sum()) >= runs * _SLICE_RUN_BYTES:
        for s, d, n in zip(run_src.tolist(), run_dst.tolist(), run_len.tolist(), strict=True):
            out[d : d + n] = src[s : s + n]
        return
    every = np.concatenate((run_src, run_dst, run_len, np.array([src.size, out.size])))
    bits = functools.reduce(operator.or_, every.tolist(), 0)
    width = next(w for w in _WORDS if not bits % w)
    word = _WORDS[width]
    # Segments contiguous in both buffers were merged into runs; many short ones move as one
    # gather of the widest word dividing every offset and length.
    into, take = ranges(run_len // width, run_dst // width, run_src // width)
    out.view(word)[into] = src.view(word)[take]
