"""Worker functions of test_concurrency.py, in an importable module (spawned processes import
them by name; a test module under pytest's importlib mode cannot be imported there)."""

from __future__ import annotations

import numpy as np
import zarr

import zarr_vlen_ndarray  # noqa: F401  (registers the data type and codec in this process)

ROWS = 7  # leading extents cycle through 0 .. ROWS - 1


def expected_cell(i: int) -> np.ndarray:
    """Cell ``i`` of the test array: a distinct (i % ROWS, 2) float32 block."""
    rows = i % ROWS
    return (np.arange(rows * 2, dtype="<f4").reshape(rows, 2) + np.float32(i * 0.5)).copy()


def cells(start: int, stop: int) -> np.ndarray:
    out = np.empty(stop - start, dtype=object)
    out[:] = [expected_cell(i) for i in range(start, stop)]
    return out


def write_region(path: str, start: int, stop: int, step: int) -> int:
    """Write cells [start, stop) through a handle of its own, ``step`` cells per assignment."""
    arr = zarr.open_array(path, mode="r+")
    for a in range(start, stop, step):
        b = min(a + step, stop)
        arr[a:b] = cells(a, b)
    return stop - start


def check_snapshot(values: np.ndarray, start: int = 0) -> None:
    """Every cell is the fill (empty) or exactly its final value; raises AssertionError."""
    for offset, cell in enumerate(values):
        i = start + offset
        want = expected_cell(i)
        if cell.shape == (0, 2) and want.shape != (0, 2):
            continue  # not written yet: the fill value
        assert cell.dtype == want.dtype and cell.shape == want.shape, f"cell {i}: {cell!r}"
        assert cell.tobytes() == want.tobytes(), f"cell {i}: {cell!r}"


def read_while_writing(path: str, rounds: int) -> tuple[int, int]:
    """Read the whole array ``rounds`` times; return (clean reads, reads that met a torn chunk).

    A torn chunk (a store without atomic writes, e.g. zarr 3.1's LocalStore, caught mid-write)
    must be refused with a ValueError; a read that succeeds must hold only exact cells.
    """
    arr = zarr.open_array(path, mode="r")
    clean = torn = 0
    for _ in range(rounds):
        try:
            values = arr[:]
        except ValueError:
            torn += 1
            continue
        check_snapshot(values)
        clean += 1
    return clean, torn
