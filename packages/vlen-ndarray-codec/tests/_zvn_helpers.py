"""Shared test helpers: deterministic random cells of every element dtype."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from typing import Any

import numpy as np
from hypothesis import strategies as st

from zarr_ndarray_dtype import ELEMENT_DTYPES, NDArrayDType


def random_cell(rng: np.random.Generator, dtype: NDArrayDType, rows: int) -> np.ndarray:
    """A cell of ``rows`` leading rows with arbitrary bit patterns (0/1 for bool)."""
    shape = (rows, *(int(d) for d in dtype.shape[1:] if d is not None))
    item = dtype.item_dtype
    if item.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    raw = rng.integers(0, 256, size=math.prod(shape) * item.itemsize, dtype=np.uint8)
    return raw.view(item).reshape(shape)


def object_array(cells: list[Any], shape: tuple[int, ...] | None = None) -> np.ndarray:
    """Cells staged in an object array (never stacked by numpy)."""
    out = np.fromiter(cells, dtype=object, count=len(cells))
    return out.reshape(shape if shape is not None else (len(cells),))


@st.composite
def ndarray_dtypes(draw: st.DrawFn, max_trailing: int = 2) -> NDArrayDType:
    name = draw(st.sampled_from(ELEMENT_DTYPES))
    trailing = draw(st.lists(st.integers(1, 3), max_size=max_trailing))
    return NDArrayDType(dtype=name, shape=(None, *trailing))


@st.composite
def chunks_of_cells(
    draw: st.DrawFn, max_rank: int = 3, max_extent: int = 3, max_rows: int = 4
) -> tuple[NDArrayDType, np.ndarray]:
    """A data type and an object array (rank 0..max_rank) of random cells of it."""
    dtype = draw(ndarray_dtypes())
    shape = tuple(draw(st.lists(st.integers(0, max_extent), max_size=max_rank)))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    count = int(np.prod(shape))
    rows = draw(st.lists(st.integers(0, max_rows), min_size=count, max_size=count))
    cells = [random_cell(rng, dtype, r) for r in rows]
    return dtype, object_array(cells, shape)


def run_fresh(code: str, *args: str, timeout: float) -> Any:
    """Run ``code`` in a fresh interpreter; its last line of output, parsed as JSON."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])
