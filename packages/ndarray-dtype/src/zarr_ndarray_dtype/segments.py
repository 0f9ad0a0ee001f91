"""Assembling cells from several flat value arrays into one (pure numpy; no zarr).

A cell is a segment ``sources[which][start:start + size]``. :func:`assemble` lays the given cells
out one after another in a new flat array. Consecutive cells that are also consecutive in their
source form one run, and runs are what is copied: a whole chunk read in order is a single
``memcpy``-like slice assignment. When runs are many and short (e.g. a selection that cuts
every chunk row), the copy switches to one vectorized fancy-index gather per source. Shared by
the codec packages' columnar readers and writers (gathering a selection from its chunks, and
patching a chunk from a selection).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["assemble", "offsets_of"]

# Runs at most this many, or of this many items on average, are copied by slices.
_SLICE_RUNS = 256
_SLICE_RUN_ITEMS = 64


def offsets_of(sizes: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """``[0, sizes[0], sizes[0] + sizes[1], ...]`` (int64, one entry more than ``sizes``)."""
    offsets = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return offsets


def assemble(
    sources: Sequence[np.ndarray],
    which: npt.NDArray[np.intp],
    starts: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
    dtype: np.dtype,  # type: ignore[type-arg]
) -> tuple[np.ndarray, npt.NDArray[np.int64]]:
    """``(values, offsets)``: cell ``i`` is ``sources[which[i]][starts[i]:starts[i] + sizes[i]]``
    and lands at ``values[offsets[i]:offsets[i + 1]]``."""
    offsets = offsets_of(sizes)
    out = np.empty(int(offsets[-1]), dtype=dtype)
    n = sizes.size
    if not n or not out.size:
        return out, offsets
    ends = starts + sizes
    cut = np.ones(n, dtype=bool)
    cut[1:] = (which[1:] != which[:-1]) | (starts[1:] != ends[:-1])
    first = np.flatnonzero(cut)
    last_end = np.append(first[1:], n)
    run_src = starts[first]
    run_dst = offsets[first]
    run_len = offsets[last_end] - run_dst
    run_which = which[first]
    keep = run_len > 0
    run_src, run_dst, run_len, run_which = (
        run_src[keep],
        run_dst[keep],
        run_len[keep],
        run_which[keep],
    )
    runs = run_len.size
    if runs <= _SLICE_RUNS or out.size >= runs * _SLICE_RUN_ITEMS:
        for s, d, m, w in zip(
            run_src.tolist(), run_dst.tolist(), run_len.tolist(), run_which.tolist(), strict=True
        ):
            out[d : d + m] = sources[w][s : s + m]
        return out, offsets
    for w in np.unique(run_which).tolist():
        mine = run_which == w
        src, dst, length = run_src[mine], run_dst[mine], run_len[mine]
        base = offsets_of(length)
        step = np.arange(int(base[-1]), dtype=np.int64) - np.repeat(base[:-1], length)
        out[np.repeat(dst, length) + step] = sources[w][np.repeat(src, length) + step]
    return out, offsets
