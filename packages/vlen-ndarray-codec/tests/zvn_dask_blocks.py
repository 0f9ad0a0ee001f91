"""Functions the Dask tests run on workers (shipped to a LocalCluster with ``upload_file``).

They live in their own importable module, not in the test module: under pytest's importlib mode a
test module's name (``packages.vlen-ndarray-codec.tests.test_dask``) cannot be imported in a
worker process, and anything pickled by reference to it fails to load there.
"""

from __future__ import annotations

import sys

import numpy as np

OURS = ("zarr_ndarray_dtype", "zarr_vlen_ndarray")


def our_modules_loaded() -> list[str]:
    """Which of our packages the calling process has imported (run inside the workers)."""
    return [m for m in OURS if m in sys.modules]


def cell_extents(arr: object) -> list[int]:
    """Read a whole (unpickled) array where this runs and return the extent of every cell."""
    return [int(c.shape[0]) for c in np.asarray(arr[:])]  # type: ignore[index]


def block_extents(block: np.ndarray) -> np.ndarray:
    """The variable extent of every cell of an object block (same shape, int64)."""
    flat = block.ravel()
    return np.fromiter((c.shape[0] for c in flat), dtype=np.int64, count=flat.size).reshape(
        block.shape
    )


def block_means(block: np.ndarray) -> np.ndarray:
    """Per-cell column means of a 1-D block of (n, 2) cells: shape (cells, 2), NaN if n == 0."""
    flat = block.ravel()
    lengths = block_extents(flat)
    values = np.concatenate([np.asarray(c, dtype=np.float64) for c in flat] + [np.empty((0, 2))])
    owner = np.repeat(np.arange(flat.size), lengths)
    sums = np.stack(
        [np.bincount(owner, weights=values[:, k], minlength=flat.size) for k in range(2)], axis=1
    )
    means = np.full((flat.size, 2), np.nan)
    np.divide(sums, lengths[:, None], out=means, where=lengths[:, None] > 0)
    return means


def block_sorted(block: np.ndarray) -> np.ndarray:
    """Every (n, 2) cell with its rows sorted by the first column (a new object block)."""
    out = np.empty(block.shape, dtype=object)
    for index, cell in np.ndenumerate(block):
        cell = np.asarray(cell)
        out[index] = cell[np.argsort(cell[:, 0], kind="stable")]
    return out


def columnar_means(col: object) -> np.ndarray:
    """Per-cell column means of a Columnar block of (n, 2) cells: shape (*block, 2), NaN if
    n == 0; the values are one (rows, 2) table, no object per cell."""
    offsets = np.asarray(col.offsets)  # type: ignore[attr-defined]
    rows = np.asarray(col.values, dtype=np.float64)  # type: ignore[attr-defined]
    counts = np.diff(offsets)
    owner = np.repeat(np.arange(counts.size), counts)
    sums = np.stack(
        [np.bincount(owner, weights=rows[:, k], minlength=counts.size) for k in range(2)], axis=1
    )
    means = np.full((counts.size, 2), np.nan)
    np.divide(sums, counts[:, None], out=means, where=counts[:, None] > 0)
    return means.reshape(*col.shape, 2)  # type: ignore[attr-defined]
