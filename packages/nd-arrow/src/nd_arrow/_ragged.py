"""Index arithmetic of ragged rows, numpy only: offsets from lengths, and the flat positions and
row ids of ranges. Every nd-arrow module that expands ragged rows calls these."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["offsets_of", "range_ids", "range_positions"]


def offsets_of(
    lengths: npt.NDArray[Any], dtype: type[np.integer[Any]] = np.int64
) -> npt.NDArray[Any]:
    """``[0, l0, l0 + l1, ...]``: the offsets of rows of the given lengths (or running counts)."""
    out = np.zeros(len(lengths) + 1, dtype)
    np.cumsum(lengths, out=out[1:])
    return out


def range_positions(
    starts: npt.NDArray[np.int64], lengths: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """``starts[k] + 0 .. lengths[k] - 1`` for every range ``k``, back to back."""
    begins = offsets_of(lengths)  # where each range begins in the result
    return np.arange(begins[-1], dtype=np.int64) - np.repeat(begins[:-1] - starts, lengths)


def range_ids(lengths: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The range of each of those positions: ``k`` repeated ``lengths[k]`` times."""
    return np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
