"""Copying byte segments between flat buffers (pure numpy; no zarr).

The columnar engine moves cells as byte segments: from a decoded chunk or the caller's columns
into an output, each cell to its own place. :func:`copy_segments` does that for any number of
segments. Segments contiguous in both the source and the output are merged into one run first,
so a whole chunk copied in order is one slice assignment; many short runs are copied with one
vectorized gather instead of a Python loop.
"""

from __future__ import annotations

import functools
import operator

import numpy as np
import numpy.typing as npt

__all__ = ["copy_segments", "offsets_of"]

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
    run_src, run_dst, run_len = run_src // width, run_dst // width, run_len // width
    base = offsets_of(run_len)
    step = np.arange(int(base[-1]), dtype=np.int64) - np.repeat(base[:-1], run_len)
    words = out.view(word)
    words[np.repeat(run_dst, run_len) + step] = src.view(word)[np.repeat(run_src, run_len) + step]
